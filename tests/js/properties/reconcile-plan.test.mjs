// Issue 12: reconcile's plan is decided in Rust (src/reconcile.rs). This runs
// the JS planner it replaced (reconcile-js-planner.mjs, kept verbatim as the
// oracle) and the package's reconcile() on two copies of the same generated
// stores — issuer epoch and lease (live, lapsed, released; 'number' and
// 'bigint' issuers), resource keys with and without records, bound holders,
// marks above and below the issuer, marks above 2^53−1, corrupt records —
// and asserts the same report (dry run and real), the same thrown error, and
// the same stores afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Gate, Issuer, MemoryHostStore, reconcile } from '../../../pkg/node.mjs';
import { reconcileJs } from './reconcile-js-planner.mjs';
import { params } from './config.mjs';

const HUGE = 2n ** 53n;

const keySpec = fc.record({
  kind: fc.constantFrom('none', 'write', 'establish', 'corrupt', 'huge'),
  mark: fc.integer({ min: 1, max: 9 }),
  holder: fc.constantFrom(null, 'A', 'B'),
});

const world = fc.record({
  epochs: fc.constantFrom('number', 'bigint'),
  issuerEpoch: fc.integer({ min: 0, max: 7 }),
  lease: fc.option(fc.record({ holder: fc.constantFrom('A', 'B'), ttl: fc.integer({ min: 1, max: 30 }), released: fc.boolean() })),
  now: fc.integer({ min: 5, max: 45 }),
  keys: fc.array(keySpec, { maxLength: 4 }),
  dryRun: fc.boolean(),
});

/** Builds one copy of the generated stores. */
async function build(w) {
  const store = new MemoryHostStore();
  const issuer = new Issuer(store, { epochs: w.epochs });
  const gate = new Gate(store);
  if (w.issuerEpoch > 0) await issuer.raise({ scope: 's', atLeast: w.issuerEpoch, now: 0 });
  if (w.lease !== null) {
    const g = await issuer.acquire({ scope: 's', holder: w.lease.holder, ttlMs: w.lease.ttl, now: 10 });
    if (w.lease.released) await issuer.release({ scope: 's', leaseId: g.leaseId, holder: g.holder });
  }
  const keys = w.keys.map((_, i) => `k${i}`);
  for (const [i, k] of w.keys.entries()) {
    const opts = k.holder === null ? undefined : { holder: k.holder };
    if (k.kind === 'write') await gate.write(keys[i], k.mark, `v${i}`, opts);
    else if (k.kind === 'establish') await gate.establish(keys[i], k.mark, opts);
    else if (k.kind === 'huge') await gate.write(keys[i], HUGE + BigInt(k.mark), `v${i}`, opts);
    else if (k.kind === 'corrupt') store.commit(keys[i], null, { v: 9 }, { kind: 'none' });
  }
  return { store, issuer, gate, keys };
}

async function outcome(fn, w, c) {
  try {
    return { report: await fn({ issuer: c.issuer, gate: c.gate, scopes: { s: c.keys }, now: w.now, dryRun: w.dryRun }) };
  } catch (e) {
    return { error: e.code, message: e.message };
  }
}

/** What the stores hold afterwards (lease ids are random per copy: left out). */
async function after(c) {
  const cur = await c.issuer.current('s');
  const lease = cur.lease === null ? null : { ...cur.lease, leaseId: typeof cur.lease.leaseId };
  const keys = [];
  for (const k of c.keys) {
    try {
      keys.push({ ...(await c.gate.inspect(k)), ...(await c.gate.read(k)) });
    } catch (e) {
      keys.push({ key: k, error: e.code });
    }
  }
  return { epoch: cur.epoch, lease, keys };
}

test('reconcile: the Rust planner makes exactly the plan of the JS planner it replaced (reports, errors, stores after)', async () => {
  let raised = 0;
  let resources = 0;
  await fc.assert(
    fc.asyncProperty(world, async (w) => {
      const a = await build(w);
      const b = await build(w);
      const old = await outcome(reconcileJs, w, a);
      const now = await outcome(reconcile, w, b);
      assert.deepEqual(now, old);
      assert.deepEqual(await after(b), await after(a));
      for (const ch of old.report?.changes ?? []) {
        if (ch.target === 'issuer') raised += 1;
        else resources += 1;
      }
    }),
    params(400),
  );
  // The generated worlds reached both kinds of repair.
  assert.ok(raised > 20 && resources > 20, `issuer changes ${raised}, resource changes ${resources}`);
});
