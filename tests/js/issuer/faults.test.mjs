// Fault injection for the issuer, over every callback shape (compare-and-set
// and transaction, sync and async): storage that throws before commit, throws
// after commit, never answers, answers garbage, keeps conflicting; and
// in-process races. Afterwards: no epoch was handed to two holders, the
// counter never went back, and a failed commit's epoch is the next one issued.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Issuer, FencegateError } from '../../../pkg/node.mjs';
import { SpyStore, AsyncCasStore, TxStore, FaultyStore } from './stores.mjs';
import { checkHistory } from './history.mjs';

const FLAVOURS = {
  'cas-sync': () => new SpyStore(),
  'cas-async': () => new AsyncCasStore(),
  'tx-sync': () => new TxStore(),
  'tx-async': () => new TxStore({ async: true }),
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Every epoch an acquire returned to a caller, per flavour, to prove none was handed out twice. */
function ledger() {
  const handed = new Map();
  return {
    take(result) {
      if (!result.ok || result.replayed) return result;
      assert.ok(!handed.has(result.epoch), `epoch ${result.epoch} handed out twice`);
      handed.set(result.epoch, result.holder);
      return result;
    },
    handed,
  };
}

for (const [flavour, make] of Object.entries(FLAVOURS)) {
  test(`${flavour}: the bump to 42 fails before commit → error; the next acquire returns 42, never returned before`, async () => {
    const inner = make();
    const store = new FaultyStore(inner, []);
    const issuer = new Issuer(store);
    const l = ledger();
    await issuer.raise({ scope: 's', atLeast: 41, now: 0 });
    const before = inner.raw('issuer:s');
    store.plan.push('throw-before');
    await assert.rejects(issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 0, requestId: 'a' }), (e) => {
      assert.ok(e instanceof FencegateError);
      assert.equal(e.code, 'STORE_ERROR');
      assert.equal(e.scope, 's');
      assert.match(e.cause.message, /before commit/);
      return true;
    });
    assert.equal(inner.raw('issuer:s'), before);
    assert.equal(l.handed.size, 0);
    const b = l.take(await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 100, now: 1 }));
    assert.deepEqual([b.epoch, b.holder], [42, 'B']);
  });

  const afterFaults = { 'throw-after': 'STORE_ERROR', 'unknown-after': 'COMMIT_UNKNOWN', garbage: 'COMMIT_UNKNOWN' };
  for (const [fault, expected] of Object.entries(afterFaults)) {
    // A transaction's return value carries no meaning, so "garbage" is a compare-and-set fault only.
    if (fault === 'garbage' && flavour.startsWith('tx')) continue;
    test(`${flavour}: issued 1, 2, 3; the store ${fault} committing 4; the retry returns 4; another holder after expiry gets 5`, async () => {
      const inner = make();
      const store = new FaultyStore(inner, []);
      const issuer = new Issuer(store);
      const l = ledger();
      for (let i = 1; i <= 3; i++) {
        const g = l.take(await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: i, requestId: `r${i}` }));
        assert.equal(g.epoch, i);
        await issuer.release({ scope: 's', leaseId: g.leaseId, holder: 'A' });
      }
      store.plan.push(fault);
      await assert.rejects(issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 10, requestId: 'r4' }), { code: expected, scope: 's' });
      // Committed, though the caller never saw it.
      assert.equal(JSON.parse(inner.raw('issuer:s')).epoch, '4');
      const retry = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 20, requestId: 'r4' });
      assert.deepEqual([retry.ok, retry.epoch, retry.replayed, retry.expiresAt], [true, 4, true, 110]);
      l.take({ ...retry, replayed: false });
      assert.equal((await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 100, now: 109 })).code, 'LEASE_HELD');
      const b = l.take(await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 100, now: 110 }));
      assert.equal(b.epoch, 5);
      assert.deepEqual([...l.handed.keys()], [1, 2, 3, 4, 5]);
    });
  }

  test(`${flavour}: a store that never answers → COMMIT_UNKNOWN after commitTimeoutMs; nothing handed out; next is the same number`, async () => {
    const inner = make();
    const store = new FaultyStore(inner, ['ok', 'hang']);
    const issuer = new Issuer(store, { commitTimeoutMs: 20 });
    const a = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 10, now: 0 });
    assert.equal(a.epoch, 1);
    const t = Date.now();
    await assert.rejects(issuer.acquire({ scope: 's', holder: 'B', ttlMs: 10, now: 10, requestId: 'b' }), (e) => {
      assert.equal(e.code, 'COMMIT_UNKNOWN');
      assert.match(e.message, /no answer within 20 ms/);
      assert.match(e.message, /same requestId/);
      return true;
    });
    assert.ok(Date.now() - t < 1000);
    assert.equal(JSON.parse(inner.raw('issuer:s')).epoch, '1');
    const b = await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 10, now: 11, requestId: 'b' });
    assert.deepEqual([b.epoch, b.replayed], [2, false]);
  });

  test(`${flavour}: a commit that lands after its timeout is found by the same request id; nobody else gets its epoch`, async () => {
    const inner = make();
    const store = new FaultyStore(inner, ['hang-then-write'], { lateMs: 40 });
    const issuer = new Issuer(store, { commitTimeoutMs: 10 });
    await assert.rejects(issuer.acquire({ scope: 's', holder: 'A', ttlMs: 1000, now: 0, requestId: 'a' }), { code: 'COMMIT_UNKNOWN' });
    await Promise.all(store.late);
    const stored = JSON.parse(inner.raw('issuer:s'));
    assert.deepEqual([stored.epoch, stored.lease.holder], ['1', 'A']);
    assert.equal((await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 10, now: 5 })).code, 'LEASE_HELD');
    const retry = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 1000, now: 5, requestId: 'a' });
    assert.deepEqual([retry.epoch, retry.replayed], [1, true]);
  });

  test(`${flavour}: a retry that wins before the late commit lands: the late one cannot issue the epoch again`, async () => {
    const inner = make();
    const store = new FaultyStore(inner, ['hang-then-write'], { lateMs: 40 });
    const issuer = new Issuer(store, { commitTimeoutMs: 10 });
    await assert.rejects(issuer.acquire({ scope: 's', holder: 'A', ttlMs: 1000, now: 0, requestId: 'a' }), { code: 'COMMIT_UNKNOWN' });
    const retry = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 1000, now: 5, requestId: 'a' });
    assert.deepEqual([retry.epoch, retry.replayed], [1, false]);
    const after = inner.raw('issuer:s');
    const late = await Promise.all(store.late);
    // Compare-and-set: the late commit lost (its expected version is gone).
    // Transaction: the late transaction ran on the new state and saw a replay: no write.
    if (flavour.startsWith('cas')) assert.deepEqual(late, [false]);
    assert.equal(inner.raw('issuer:s'), after);
    assert.equal(JSON.parse(inner.raw('issuer:s')).epoch, '1');
  });
}

test('a compare-and-set that keeps losing → COMMIT_CONFLICT after maxRetries + 1 attempts; nothing issued', async () => {
  const inner = new SpyStore();
  let attempts = 0;
  const store = {
    load: (k) => inner.load(k),
    commit: () => {
      attempts += 1;
      return false;
    },
  };
  const issuer = new Issuer(store, { maxRetries: 3 });
  await assert.rejects(issuer.acquire({ scope: 's', holder: 'A', ttlMs: 10, now: 0 }), { code: 'COMMIT_CONFLICT', attempts: 4, scope: 's' });
  assert.equal(attempts, 4);
  assert.equal(inner.raw('issuer:s'), undefined);
});

test('a compare-and-set lost to a concurrent writer: reload and decide again (LEASE_HELD, not a second grant)', async () => {
  const inner = new SpyStore();
  const rival = new Issuer(inner);
  let raced = false;
  const store = {
    load: (k) => inner.load(k),
    async commit(k, v, s, c) {
      if (!raced) {
        raced = true;
        await rival.acquire({ scope: 's', holder: 'R', ttlMs: 100, now: 0 });
      }
      return inner.commit(k, v, s, c);
    },
  };
  const issuer = new Issuer(store);
  assert.deepEqual(await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 0 }), {
    ok: false, code: 'LEASE_HELD', scope: 's', epoch: 1, holder: 'R', expiresAt: 100,
  });
});

test('load failures are STORE_ERROR and write nothing: throwing, never answering (loadTimeoutMs), bad records', async () => {
  const inner = new SpyStore();
  const throwing = new Issuer({ load: () => { throw new Error('down'); }, commit: (...a) => inner.commit(...a) });
  await assert.rejects(throwing.acquire({ scope: 's', holder: 'A', ttlMs: 1, now: 0 }), (e) => e.code === 'STORE_ERROR' && e.callback === 'load' && /nothing was written/.test(e.message));
  const hanging = new Issuer({ load: () => new Promise(() => {}), commit: (...a) => inner.commit(...a) }, { loadTimeoutMs: 10 });
  await assert.rejects(hanging.acquire({ scope: 's', holder: 'A', ttlMs: 1, now: 0 }), { code: 'STORE_ERROR', callback: 'load' });
  const weird = new Issuer({ load: () => 5, commit: (...a) => inner.commit(...a) });
  await assert.rejects(weird.acquire({ scope: 's', holder: 'A', ttlMs: 1, now: 0 }), { code: 'STORE_ERROR' });
  const stateless = new Issuer({ load: () => ({ version: 1 }), commit: (...a) => inner.commit(...a) });
  await assert.rejects(stateless.acquire({ scope: 's', holder: 'A', ttlMs: 1, now: 0 }), { code: 'CORRUPT_STATE' });
  assert.equal(inner.commits, 0);
  const noFn = new Issuer({ transaction: () => undefined });
  await assert.rejects(noFn.acquire({ scope: 's', holder: 'A', ttlMs: 1, now: 0 }), { code: 'STORE_ERROR' });
});

for (const [flavour, make] of [
  ['cas-async with random delays', () => new AsyncCasStore(3)],
  ['tx-async', () => new TxStore({ async: true })],
]) {
  test(`in-process race (${flavour}): 6 issuers, 3 scopes, acquire/renew/release; history is safe`, async () => {
    const store = make();
    const events = [];
    const start = Date.now();
    const worker = async (w) => {
      const issuer = new Issuer(store, { maxRetries: 50 });
      const held = new Map();
      for (let i = 0; i < 60; i++) {
        const scope = `s${(w + i) % 3}`;
        const now = Date.now() - start;
        const mine = held.get(scope);
        let r;
        if (mine && Math.random() < 0.5) {
          r = await issuer.renew({ scope, leaseId: mine, holder: `w${w}`, ttlMs: 5, now });
          events.push({ w, op: 'renew', scope, now, ...r });
          if (!r.ok) held.delete(scope);
        } else if (mine && Math.random() < 0.5) {
          r = await issuer.release({ scope, leaseId: mine, holder: `w${w}` });
          events.push({ w, op: 'release', scope, now, ...r, leaseId: mine });
          held.delete(scope);
        } else {
          r = await issuer.acquire({ scope, holder: `w${w}`, ttlMs: 5, now, requestId: `w${w}-${i}` });
          events.push({ w, op: 'acquire', scope, now, ...r });
          if (r.ok) held.set(scope, r.leaseId);
        }
        await sleep(Math.random() * 2);
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5].map(worker));
    const summary = checkHistory(events, { contiguous: true });
    assert.ok(summary.grants >= 10, `only ${summary.grants} grants`);
  });
}

test('the history check has teeth: a host whose commit ignores the expected version double-grants and is caught', async () => {
  const inner = new AsyncCasStore(2);
  const lying = {
    load: (k) => inner.load(k),
    async commit(k, _expected, s, c) {
      await sleep(Math.random() * 2);
      const cur = SpyStore.prototype.load.call(inner, k);
      return SpyStore.prototype.commit.call(inner, k, cur === null ? null : cur.version, s, c);
    },
  };
  const events = [];
  await Promise.all(
    [0, 1, 2, 3].map(async (w) => {
      const issuer = new Issuer(lying);
      for (let i = 0; i < 10; i++) {
        const r = await issuer.acquire({ scope: 's', holder: `w${w}`, ttlMs: 1000, now: 0 });
        events.push({ w, op: 'acquire', now: 0, ...r });
      }
    }),
  );
  assert.throws(() => checkHistory(events), /granted twice|was live until/);
});
