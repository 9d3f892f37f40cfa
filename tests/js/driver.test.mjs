// Issue 12: the one store driver (pkg/lib/driver.mjs) behind Gate and Issuer,
// and Gate.free(). Exact results through the public API only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate, Issuer, MemoryHostStore, FencegateError, mintToken } from '../../pkg/node.mjs';

const KEY = new Uint8Array(32).fill(7);
const isCode = (code) => (e) => e instanceof FencegateError && e.code === code;

/** A transaction store over a MemoryHostStore whose transaction throws `failures` first (then runs). */
function flakyTransactions(failures) {
  const inner = new MemoryHostStore();
  const calls = [];
  return {
    calls,
    inner,
    async transaction(key, fn) {
      calls.push(key);
      if (failures.length > 0) throw failures.shift();
      const r = inner.load(key);
      const out = fn(r === null ? null : r.state);
      if (out !== null) assert.equal(inner.commit(key, r === null ? null : r.version, out.nextState, out.change), true);
    },
  };
}

test('Gate.free(): every later call throws INVALID_ARGUMENT and nothing reaches the store; a second free and dispose are no-ops', async () => {
  const store = new MemoryHostStore();
  const gate = new Gate(store, { keys: { k1: KEY } });
  const token = mintToken({ scope: 'k', epoch: 3 }, { kid: 'k1', hmac: KEY });
  assert.equal((await gate.write('k', token, 'v')).outcome, 'advance');
  gate.free();
  gate.free();
  gate[Symbol.dispose]();
  const calls = [
    () => gate.write('k', 4, 'w'),
    () => gate.establish('k', 4),
    () => gate.delete('k', 4),
    () => gate.deleteMany(['k'], 4),
    () => gate.quarantine('k', 4),
    () => gate.read('k'),
    () => gate.mark('k'),
    () => gate.inspect('k'),
  ];
  for (const call of calls) await assert.rejects(call(), isCode('INVALID_ARGUMENT'));
  assert.throws(() => gate.addKey('k2', KEY), isCode('INVALID_ARGUMENT'));
  assert.throws(() => gate.retireKey('k1'), isCode('INVALID_ARGUMENT'));
  assert.deepEqual(store.load('k'), { state: '{"v":1,"mark":"3"}', version: 1, value: 'v' });
  // A gate without keys holds nothing in Wasm; free() still ends it.
  const plain = new Gate(store);
  plain[Symbol.dispose]();
  await assert.rejects(plain.write('k', 5, 'x'), isCode('INVALID_ARGUMENT'));
  assert.equal(store.load('k').version, 1);
});

test('Gate.free() while a write awaits the policy ceiling: the write throws INVALID_ARGUMENT, nothing written', async () => {
  const store = new MemoryHostStore();
  let release;
  const gate = new Gate(store, { higherEpoch: { mode: 'reject-future', ceiling: () => new Promise((r) => { release = r; }) } });
  const pending = gate.write('k', 2, 'v');
  await new Promise((r) => setImmediate(r));
  gate.free();
  release(10);
  await assert.rejects(pending, isCode('INVALID_ARGUMENT'));
  assert.equal(store.load('k'), null);
});

test('Issuer over a transaction store: a `conflict: true` error runs the transaction again, like the gate', async () => {
  const conflict = () => Object.assign(new Error('SQLITE_BUSY'), { conflict: true });
  const store = flakyTransactions([conflict(), conflict()]);
  const issuer = new Issuer(store);
  const lease = await issuer.acquire({ scope: 's', holder: 'h', ttlMs: 100, now: 5 });
  assert.deepEqual([lease.ok, lease.epoch, lease.holder, lease.expiresAt, store.calls.length], [true, 1, 'h', 105, 3]);
  assert.equal(JSON.parse(store.inner.load('issuer:s').state).epoch, '1');
});

test('Issuer over a transaction store: conflicts past maxRetries are COMMIT_CONFLICT with scope, key and attempts', async () => {
  const cause = Object.assign(new Error('serialization failure'), { conflict: true });
  const store = flakyTransactions([cause, cause, cause]);
  const issuer = new Issuer(store, { maxRetries: 1 });
  const e = await issuer.acquire({ scope: 's', holder: 'h', ttlMs: 100, now: 5 }).catch((x) => x);
  assert.ok(e instanceof FencegateError);
  assert.deepEqual([e.code, e.scope, e.key, e.attempts, e.cause], ['COMMIT_CONFLICT', 's', 'issuer:s', 2, cause]);
  assert.equal(e.message, 'the host transaction on "issuer:s" conflicted 2 times (serialization failure); nothing was issued by this call');
  assert.deepEqual([store.calls.length, store.inner.keys()], [2, []]);
});

test('Issuer.current on a transaction-only store that does not answer within loadTimeoutMs: STORE_ERROR, not epoch 0', async () => {
  const store = { transaction: () => new Promise(() => {}) };
  const issuer = new Issuer(store, { loadTimeoutMs: 20 });
  const e = await issuer.current('s').catch((x) => x);
  assert.ok(e instanceof FencegateError);
  assert.deepEqual([e.code, e.scope, e.key, e.callback, e.cause.message], ['STORE_ERROR', 's', 'issuer:s', 'transaction', 'no answer within 20 ms']);
});

test('Gate and Issuer share one store; compare-and-set lost every time is COMMIT_CONFLICT for both, nothing written', async () => {
  const inner = new MemoryHostStore();
  const losing = { load: (k) => inner.load(k), commit: () => false };
  const gate = new Gate(losing, { maxRetries: 2 });
  const issuer = new Issuer(losing, { maxRetries: 2 });
  const g = await gate.write('k', 1, 'v').catch((x) => x);
  assert.deepEqual([g.code, g.key, g.attempts, g.message], ['COMMIT_CONFLICT', 'k', 3, 'compare-and-set on "k" conflicted 3 times; nothing was written by this call']);
  const q = await gate.quarantine('k', 4).catch((x) => x);
  assert.deepEqual([q.code, q.attempts], ['COMMIT_CONFLICT', 3]);
  const i = await issuer.acquire({ scope: 's', holder: 'h', ttlMs: 1, now: 0 }).catch((x) => x);
  assert.deepEqual([i.code, i.scope, i.key, i.attempts, i.message], ['COMMIT_CONFLICT', 's', 'issuer:s', 3, 'compare-and-set on "issuer:s" conflicted 3 times; nothing was issued by this call']);
  assert.deepEqual(inner.keys(), []);
});
