// Property 1 (issue 19): no public call with arbitrary arguments throws anything
// but a FencegateError with a documented code, and a normal operation works
// afterwards on the same objects (no poisoned gate, no Wasm state left behind).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as api from '../../../pkg/node.mjs';
import { params, isOwnError, anyValue } from './config.mjs';

const { MemoryGate, Gate, Issuer, MemoryHostStore, reconcile } = api;
const SECRET = new Uint8Array(32).fill(7);

/** A store whose answers are the given arbitrary values (then well-behaved, so no retry loop runs long). */
function answeringStore(shape, answers) {
  const inner = new MemoryHostStore();
  let n = 0;
  const next = (fallback) => (n < answers.length ? answers[n++] : fallback());
  if (shape === 'transaction') {
    return {
      transaction(key, fn) {
        const a = next(() => null);
        const out = fn(a);
        return n < answers.length ? answers[n++] : out && undefined;
      },
    };
  }
  return {
    load: (key) => next(() => inner.load(key)),
    commit: (key, expected, state, change) => next(() => inner.commit(key, expected, state, change)),
  };
}

/** Objects the calls run on; each keeps working after every call. */
function subjects() {
  const store = new MemoryHostStore();
  return {
    store,
    mg: new MemoryGate(),
    mgPolicy: new MemoryGate({ keys: { k1: SECRET }, higherEpoch: { mode: 'reject-future', ceiling: 1000 } }),
    gate: new Gate(store, { opWindow: 4 }),
    gatePolicy: new Gate(store, { keys: { k1: SECRET } }),
    issuer: new Issuer(store),
  };
}

// Each entry: [name, arity, call(subjects, args)].
const CALLS = [
  ['parseToken', 1, (s, a) => api.parseToken(a[0])],
  ['toToken', 1, (s, a) => api.toToken(a[0])],
  ['decodeState', 1, (s, a) => api.decodeState(a[0])],
  ['encodeState', 1, (s, a) => api.encodeState(a[0])],
  ['mintToken', 2, (s, a) => api.mintToken(a[0], a[1])],
  ['mintToken(valid key)', 1, (s, a) => api.mintToken(a[0], { kid: 'k1', hmac: SECRET })],
  ['mintToken(claims fields)', 4, (s, a) => api.mintToken({ scope: a[0], epoch: a[1], leaseId: a[2], generation: a[3] }, { kid: 'k1', hmac: SECRET })],
  ['verifyToken', 2, (s, a) => api.verifyToken(a[0], a[1])],
  ['verifyToken(keys)', 3, (s, a) => api.verifyToken(a[0], { keys: a[1], retired: a[2], scope: 's' })],
  ['ed25519PublicKey', 1, (s, a) => api.ed25519PublicKey(a[0])],
  ['new MemoryGate', 1, (s, a) => new MemoryGate(a[0])],
  ['new MemoryGate(option)', 2, (s, a) => new MemoryGate({ [['sameEpoch', 'opWindow', 'onVerdict', 'requireSigned', 'keys', 'retired', 'scope', 'higherEpoch'][Math.abs(Number(typeof a[1] === 'number' ? a[1] : 0)) % 8 | 0]]: a[0] })],
  ['new MemoryGate(higherEpoch)', 3, (s, a) => new MemoryGate({ higherEpoch: { mode: a[0], maxJump: a[1], ceiling: a[2] } })],
  ['new Gate', 2, (s, a) => new Gate(a[0], a[1])],
  ['new Gate(options)', 1, (s, a) => new Gate(s.store, a[0])],
  ['new Gate(option)', 2, (s, a) => new Gate(s.store, { [['sameEpoch', 'maxRetries', 'commitTimeoutMs', 'opWindow', 'retired', 'scope', 'higherEpoch', 'keys'][Math.abs(Number(typeof a[1] === 'number' ? a[1] : 0)) % 8 | 0]]: a[0] })],
  ['new Issuer', 2, (s, a) => new Issuer(a[0], a[1])],
  ['new Issuer(option)', 2, (s, a) => new Issuer(s.store, { [['epochs', 'keyPrefix', 'maxRetries', 'commitTimeoutMs', 'loadTimeoutMs', 'clock'][Math.abs(Number(typeof a[1] === 'number' ? a[1] : 0)) % 6 | 0]]: a[0] })],
  ['MemoryGate.write', 4, (s, a) => s.mg.write(a[0], a[1], a[2], a[3])],
  ['MemoryGate.write(k)', 3, (s, a) => s.mg.write('k', a[0], a[1], a[2])],
  ['MemoryGate.write(opts)', 2, (s, a) => s.mg.write('k', 5, 'v', { opId: a[0], holder: a[1] })],
  ['MemoryGate.establish', 3, (s, a) => s.mg.establish(a[0], a[1], a[2])],
  ['MemoryGate.quarantine', 2, (s, a) => s.mg.quarantine(a[0], a[1])],
  ['MemoryGate.quarantine(k)', 1, (s, a) => s.mg.quarantine('q', a[0])],
  ['MemoryGate.mark', 1, (s, a) => s.mg.mark(a[0])],
  ['MemoryGate.value', 1, (s, a) => s.mg.value(a[0])],
  ['MemoryGate.read', 1, (s, a) => s.mg.read(a[0])],
  ['MemoryGate.state', 1, (s, a) => s.mg.state(a[0])],
  ['MemoryGate.setCeiling', 1, (s, a) => s.mgPolicy.setCeiling(a[0])],
  ['MemoryGate.addKey', 2, (s, a) => s.mgPolicy.addKey(a[0], a[1])],
  ['MemoryGate.retireKey', 1, (s, a) => s.mgPolicy.retireKey(a[0])],
  ['MemoryGate(policy).write', 3, (s, a) => s.mgPolicy.write(a[0], a[1], a[2])],
  ['MemoryGate(policy).establish', 3, (s, a) => s.mgPolicy.establish('k', a[0], { holder: a[1], opId: a[2] })],
  ['Gate.write', 4, (s, a) => s.gate.write(a[0], a[1], a[2], a[3])],
  ['Gate.write(k)', 3, (s, a) => s.gate.write('k', a[0], a[1], a[2])],
  ['Gate.establish', 3, (s, a) => s.gate.establish(a[0], a[1], a[2])],
  ['Gate.delete', 3, (s, a) => s.gate.delete(a[0], a[1], a[2])],
  ['Gate.deleteMany', 2, (s, a) => s.gate.deleteMany(a[0], a[1])],
  ['Gate.deleteMany(list)', 2, (s, a) => s.gate.deleteMany([a[0], a[1]], 1)],
  ['Gate.quarantine', 2, (s, a) => s.gate.quarantine(a[0], a[1])],
  ['Gate.read', 1, (s, a) => s.gate.read(a[0])],
  ['Gate.inspect', 1, (s, a) => s.gate.inspect(a[0])],
  ['Gate.addKey', 2, (s, a) => s.gatePolicy.addKey(a[0], a[1])],
  ['Gate.retireKey', 1, (s, a) => s.gatePolicy.retireKey(a[0])],
  ['Gate(policy).write', 3, (s, a) => s.gatePolicy.write('k', a[0], a[1], a[2])],
  ['Issuer.acquire', 1, (s, a) => s.issuer.acquire(a[0])],
  ['Issuer.acquire(fields)', 5, (s, a) => s.issuer.acquire({ scope: a[0], holder: a[1], ttlMs: a[2], now: a[3], requestId: a[4] })],
  ['Issuer.renew', 4, (s, a) => s.issuer.renew({ scope: a[0], leaseId: a[1], ttlMs: a[2], now: a[3] })],
  ['Issuer.release', 2, (s, a) => s.issuer.release({ scope: a[0], leaseId: a[1] })],
  ['Issuer.raise', 4, (s, a) => s.issuer.raise({ scope: a[0], atLeast: a[1], now: a[2], revoke: a[3] })],
  ['Issuer.current', 1, (s, a) => s.issuer.current(a[0])],
  ['Issuer.keyOf', 1, (s, a) => s.issuer.keyOf(a[0])],
  ['reconcile', 1, (s, a) => reconcile(a[0])],
  ['reconcile(scopes)', 2, (s, a) => reconcile({ issuer: s.issuer, gate: s.gate, scopes: a[0], now: 0, dryRun: a[1] === true })],
  ['reconcile(keys)', 2, (s, a) => reconcile({ issuer: s.issuer, gate: s.gate, scopes: { s: [a[0], a[1]] }, now: 0 })],
  ['reconcile(list)', 1, (s, a) => reconcile({ issuer: s.issuer, gate: s.gate, scopes: [{ scope: 's', keys: a[0] }], now: 0 })],
  // Store answers: what load/commit/transaction hand back.
  ['Gate over answers: write', 3, (s, a) => new Gate(answeringStore('cas', a), { maxRetries: 2 }).write('k', 1, 'v')],
  ['Gate over answers: quarantine', 3, (s, a) => new Gate(answeringStore('cas', a), { maxRetries: 2 }).quarantine('k', 3)],
  ['Gate over answers: read', 1, (s, a) => new Gate(answeringStore('cas', a)).read('k')],
  ['Gate over answers: inspect', 1, (s, a) => new Gate(answeringStore('cas', a)).inspect('k')],
  ['Gate over a transaction: write', 2, (s, a) => new Gate(answeringStore('transaction', a)).write('k', 1, 'v', { opId: 'o' })],
  ['Gate over a transaction: quarantine', 2, (s, a) => new Gate(answeringStore('transaction', a)).quarantine('k', 2)],
  ['Issuer over answers: acquire', 3, (s, a) => new Issuer(answeringStore('cas', a), { maxRetries: 2 }).acquire({ scope: 's', holder: 'h', ttlMs: 10, now: 0 })],
  ['Issuer over answers: current', 1, (s, a) => new Issuer(answeringStore('cas', a)).current('s')],
  ['Issuer over a transaction: acquire', 2, (s, a) => new Issuer(answeringStore('transaction', a)).acquire({ scope: 's', holder: 'h', ttlMs: 10, now: 0 })],
];

let fresh = 0;

/** The normal operations that must still work: on every subject, a fresh key advances to 1. */
async function normalOperationsWork(s) {
  const key = `\u2603 normal ${fresh++}`;
  const expect = (v) => assert.deepEqual([v.outcome, v.code, v.markBefore, v.markAfter], ['advance', null, 0, 1]);
  expect(s.mg.write(key, 1, 'v'));
  assert.equal(s.mg.value(key), 'v');
  s.mgPolicy.setCeiling(1000); // a call may have cleared it (then reject-future refuses every advance, as documented)
  expect(s.mgPolicy.write(key, 1, 'v'));
  expect(await s.gate.write(key, 1, 'v', { opId: 'o' }));
  assert.deepEqual(await s.gate.read(key), { mark: 1, value: 'v', hasValue: true });
  expect(await s.gatePolicy.write(`${key} p`, 1, 'v'));
  const lease = await s.issuer.acquire({ scope: key, holder: 'h', ttlMs: 10, now: 0 });
  assert.deepEqual([lease.ok, lease.epoch], [true, 1]);
  assert.equal(api.parseToken('12'), 12);
  assert.deepEqual(api.decodeState('{"v":1,"mark":"3"}'), { mark: 3 });
}

test('property 1: arbitrary arguments to every public call give only FencegateError, and normal operations work afterwards', async () => {
  const s = subjects();
  const seen = new Set();
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: CALLS.length - 1 }),
      fc.array(anyValue(), { minLength: 5, maxLength: 5 }),
      async (i, args) => {
        const [name, arity, call] = CALLS[i];
        seen.add(name);
        try {
          await call(s, args.slice(0, arity));
        } catch (e) {
          if (!isOwnError(e)) {
            assert.fail(`${name} threw ${e?.constructor?.name}: ${e?.message}`);
          }
        }
        await normalOperationsWork(s);
      },
    ),
    params(6000),
  );
  assert.equal(seen.size, CALLS.length, 'every call was tried');
});

// ---- Property 1b (issue 32): no foreign error from the HTTP layer or from nested options.
// Every call below gets arbitrary values where a user's code could hand one
// over: the request's headers (any shape), the handler's result, what the
// handler throws, every option at every depth. Whatever comes back, a thrown
// error is a FencegateError with a documented code, or the very value the
// handler threw (fence rethrows what is not fencegate's), never a TypeError or
// RangeError of fencegate's own making.
const http = await import('../../../pkg/integrations/http.mjs');
const hono = await import('../../../pkg/integrations/hono.mjs');
const expressFencing = await import('../../../pkg/integrations/express.mjs');
const { otelAudit } = await import('../../../pkg/integrations/otel.mjs');
const { prometheusAudit } = await import('../../../pkg/integrations/prometheus.mjs');

/** Header sources of every shape, holding arbitrary values under the fencing names (any case). */
function sourceOf(kind, a) {
  const entries = [['Fencing-Token', a[0]], ['fencing-op-id', a[1]], ['FENCING-HOLDER', a[2]]];
  switch (kind) {
    case 0: return Object.fromEntries(entries);
    case 1: return new Map(entries);
    case 2: return { get: (name) => new Map(entries.map(([k, v]) => [k.toLowerCase(), v])).get(name.toLowerCase()) };
    case 3: return { headers: Object.fromEntries(entries) };
    case 4: return a[0]; // anything at all
    default: {
      try {
        return new Headers(entries.filter(([, v]) => typeof v === 'string').map(([k, v]) => [k, v.replace(/[^\x21-\x7e]/g, '')]));
      } catch {
        return new Headers();
      }
    }
  }
}

/** What a handler does: return an arbitrary value, throw one, or call the gate. */
function handlerOf(kind, gate, value) {
  if (kind === 0) return () => value;
  if (kind === 1) return () => { throw value; };
  if (kind === 2) return async () => value;
  return (t, o) => gate.write('k', t, 'v', o);
}

const HTTP_CALLS = [
  ['fenceReply', async (g, a, k) => http.fenceReply(sourceOf(k[0] % 6, a), 'k', handlerOf(k[1] % 4, g, a[3]), k[2] % 2 ? {} : { headers: a[4] })],
  ['fenceReply(options)', async (g, a, k) => http.fenceReply(sourceOf(k[0] % 6, a), a[5], handlerOf(k[1] % 4, g, a[3]), a[4])],
  ['fence', async (g, a, k) => http.fence(sourceOf(k[0] % 6, a), 'k', handlerOf(k[1] % 4, g, a[3]), { retryAfter: a[4], typeBase: k[2] % 2 ? 'x:' : a[5] })],
  ['fence(header names)', async (g, a, k) => http.fence(sourceOf(k[0] % 6, a), 'k', handlerOf(3, g), { headers: { token: a[4], opId: a[5], holder: a[3] } })],
  ['readFencing', async (g, a, k) => http.readFencing(sourceOf(k[0] % 6, a), k[2] % 2 ? undefined : a[4])],
  ['verdictReply', async (g, a) => http.verdictReply(a[3], a[4], a[5])],
  ['verdictReply(verdict)', async (g, a) => http.verdictReply(g.write('k', 1 + (Number(typeof a[3] === 'number' ? a[3] : 0) % 3 | 0) || 1, 'v'), a[4], { typeBase: 'x:' })],
  ['errorReply', async (g, a) => http.errorReply(a[3], a[4], a[5])],
  ['errorReply(error)', async (g, a) => http.errorReply(new api.FencegateError(typeof a[3] === 'string' ? a[3] : 'STORE_ERROR', 'm'), 'k', { retryAfter: a[4] })],
  ['tokenProblemReply', async (g, a) => http.tokenProblemReply('k', a[3], 0, a[4])],
  ['statusFor', async (g, a) => http.statusFor(a[3])],
  ['hono.fencing', async (g, a) => hono.fencing(a[3])],
  ['hono.fencing(options)', async (g, a) => hono.fencing({ gate: g, key: () => 'k', headers: a[3], retryAfter: a[4], typeBase: a[5] })],
  ['express.fencing', async (g, a) => expressFencing.fencing(a[3])],
  ['express.fencing(options)', async (g, a) => expressFencing.fencing({ gate: g, key: () => 'k', headers: a[3], retryAfter: a[4] })],
  ['hono.fenced', async (g, a) => hono.fenced(a[3], a[4])],
  ['express.fenced', async (g, a) => expressFencing.fenced(a[3], a[4])],
  ['express middleware', async (g, a, k) => {
    const mw = expressFencing.fencing({ gate: g, key: () => 'k' });
    const res = { locals: {}, status() { return this; }, setHeader() {}, end() {} };
    let passed = null;
    await mw({ headers: sourceOf(k[0] % 4, a) }, res, (e) => { passed = e ?? null; });
    if (passed !== null) throw passed;
    if (res.locals.fencing !== undefined) await expressFencing.fenced(res, handlerOf(k[1] % 4, g, a[3]));
  }],
  // Nested options, at every depth.
  ['MemoryGate(higherEpoch)', async (g, a) => new MemoryGate({ higherEpoch: a[3] })],
  ['MemoryGate(higherEpoch members)', async (g, a) => new MemoryGate({ higherEpoch: { mode: 'reject-future', [typeof a[3] === 'string' ? a[3] : 'ceiling']: a[4] } })],
  ['MemoryGate(keys)', async (g, a) => new MemoryGate({ keys: a[3] })],
  ['MemoryGate(key entry)', async (g, a) => new MemoryGate({ keys: { k1: a[3] } })],
  ['MemoryGate(key entry members)', async (g, a) => new MemoryGate({ keys: { k1: { hmac: SECRET, [typeof a[3] === 'string' ? a[3] : 'x']: a[4] } } })],
  ['Gate(nested)', async (g, a) => new Gate(new MemoryHostStore(), { higherEpoch: a[3], keys: { k1: a[4] } })],
  ['verifyToken(key entry)', async (g, a) => api.verifyToken(a[5], { keys: { k1: a[3] }, retired: a[4], scope: 's' })],
  ['mintToken(key)', async (g, a) => api.mintToken({ scope: 's', epoch: 1 }, a[3])],
  ['reconcile(scopes entry)', async (g, a) => reconcile({ issuer: new Issuer(), gate: new Gate(new MemoryHostStore()), scopes: [a[3]], now: 0 })],
  ['otelAudit', async (g, a) => otelAudit(a[3])],
  ['prometheusAudit', async (g, a) => prometheusAudit(a[3])],
  ['write(options)', async (g, a) => g.write('k', 1, 'v', a[3])],
  ['establish(options)', async (g, a) => g.establish('k', 1, a[3])],
  ['Gate.write(options)', async (g, a) => new Gate(new MemoryHostStore()).write('k', 1, a[4], a[3])],
];

test('property 1b: the HTTP layer, the middleware and nested options give only FencegateError (or the handler\'s own throw) for arbitrary input', async () => {
  const seen = new Set();
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: HTTP_CALLS.length - 1 }),
      fc.array(anyValue(), { minLength: 6, maxLength: 6 }),
      fc.array(fc.nat(), { minLength: 3, maxLength: 3 }),
      async (i, args, kinds) => {
        const [name, call] = HTTP_CALLS[i];
        seen.add(name);
        const gate = new MemoryGate();
        try {
          const out = await call(gate, args, kinds);
          // A reply must be sendable: its body serialises, its status is an HTTP status.
          if (out !== null && typeof out === 'object' && 'status' in out && 'body' in out) {
            JSON.stringify(out.body);
            http.toResponse(out);
          }
        } catch (e) {
          if (e === args[3]) return; // the handler's own throw, rethrown as documented
          if (!isOwnError(e)) assert.fail(`${name} threw ${e?.constructor?.name}: ${e?.message}`);
        }
      },
    ),
    params(4000),
  );
  assert.equal(seen.size, HTTP_CALLS.length, 'every call was tried');
});
