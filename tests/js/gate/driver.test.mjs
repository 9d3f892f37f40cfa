// Issue 12: the one store driver (pkg/lib/driver.mjs) behind Gate and Issuer,
// and Gate.free(). Exact results through the public API only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate, Issuer, MemoryHostStore, FencegateError, mintToken } from '../../../pkg/node.mjs';

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

// Issue 14: the state cache and the Gate's load timeout.
import { MemoryCommitFromStore } from '../stores/memory-stores.mjs';
import { counting } from '../stores/cases.mjs';

const verdictOf = (key, outcome, code, token, markBefore, markAfter) => ({ key, ok: outcome !== 'reject', outcome, code, token, markBefore, markAfter });

test('stateCache: an integer 0..2^24 (default 1024); anything else is INVALID_ARGUMENT; a store without commitFrom never caches', async () => {
  const store = new MemoryCommitFromStore();
  for (const bad of [-1, 1.5, '3', 2 ** 24 + 1, NaN, 1n, true]) {
    assert.throws(() => new Gate(store, { stateCache: bad }), isCode('INVALID_ARGUMENT'), String(bad));
  }
  for (const good of [0, 1, 2 ** 24, undefined, null]) new Gate(store, { stateCache: good }).free();
  assert.throws(() => new Gate(store, { loadTimeoutMs: 0 }), isCode('INVALID_ARGUMENT'));
  assert.throws(() => new Gate(store, { loadTimeoutMs: 2 ** 31 }), isCode('INVALID_ARGUMENT'));
  // a plain compare-and-set store (no commitFrom): every write loads, cache or not
  const plain = counting(new MemoryHostStore());
  const gate = new Gate(plain.store);
  for (let i = 0; i < 3; i++) await gate.write('k', 2, i);
  assert.deepEqual(plain.n, { load: 3, commit: 3, commitFrom: 0, lost: 0 });
});

test('cache on: 10 writes on one key are 1 load and 10 commitFrom; cache off (stateCache: 0): 10 loads and 10 commits', async () => {
  const on = counting(new MemoryCommitFromStore());
  const gate = new Gate(on.store);
  for (let i = 1; i <= 10; i++) assert.deepEqual(await gate.write('k', i, i), verdictOf('k', 'advance', null, i, i - 1, i));
  assert.deepEqual(on.n, { load: 1, commit: 0, commitFrom: 10, lost: 0 });
  const off = counting(new MemoryCommitFromStore());
  const plain = new Gate(off.store, { stateCache: 0 });
  for (let i = 1; i <= 10; i++) assert.deepEqual(await plain.write('k', i, i), verdictOf('k', 'advance', null, i, i - 1, i));
  assert.deepEqual(off.n, { load: 10, commit: 10, commitFrom: 0, lost: 0 });
});

test('the cache keeps the last stateCache keys (LRU); forget(key) and forget() drop entries; quarantine, read and inspect always load', async () => {
  const c = counting(new MemoryCommitFromStore());
  const gate = new Gate(c.store, { stateCache: 2 });
  await gate.write('a', 1, 'a');
  await gate.write('b', 1, 'b');
  await gate.write('a', 1, 'a2'); // a is now the most recent
  await gate.write('c', 1, 'c'); // evicts b
  const loads = c.n.load;
  await gate.write('a', 1, 'a3');
  await gate.write('c', 1, 'c2');
  assert.equal(c.n.load, loads, 'a and c were cached');
  await gate.write('b', 1, 'b2');
  assert.equal(c.n.load, loads + 1, 'b was evicted');
  gate.forget('b');
  await gate.write('b', 1, 'b3');
  assert.equal(c.n.load, loads + 2);
  gate.forget();
  await gate.write('a', 1, 'a4');
  await gate.write('c', 1, 'c3');
  assert.equal(c.n.load, loads + 4);
  assert.throws(() => gate.forget(42), isCode('INVALID_ARGUMENT'));
  const before = c.n.load;
  assert.deepEqual(await gate.read('a'), { mark: 1, value: 'a4', hasValue: true });
  assert.equal((await gate.inspect('a')).mark, 1);
  assert.deepEqual(await gate.quarantine('a', 5), { key: 'a', ok: true, changed: true, floor: 5, markBefore: 1, markAfter: 5 });
  assert.equal(c.n.load, before + 3);
  // the quarantine dropped a's entry: the next write loads and sees it
  assert.deepEqual(await gate.write('a', 5, 'x'), { ...verdictOf('a', 'reject', 'QUARANTINED', 5, 5, 5) });
  assert.equal(c.n.load, before + 4);
  gate.free();
  assert.throws(() => gate.forget('a'), isCode('INVALID_ARGUMENT'));
});

test('COMMIT_UNKNOWN, STORE_ERROR, a commit timeout and a commitFrom answer that is neither { version } nor false drop the entry: the next write loads', async () => {
  const inner = new MemoryCommitFromStore();
  const c = counting(inner);
  let fault = null;
  const store = {
    ...c.store,
    commitFrom: async (...args) => {
      const f = fault;
      fault = null;
      if (f === 'unknown') throw Object.assign(new Error('reply lost'), { commitUnknown: true });
      if (f === 'error') throw new Error('refused');
      if (f === 'hang') return new Promise(() => {});
      if (f === 'true') return true;
      return c.store.commitFrom(...args);
    },
  };
  const gate = new Gate(store, { commitTimeoutMs: 20 });
  await gate.write('k', 1, 'a');
  for (const [f, code] of [['unknown', 'COMMIT_UNKNOWN'], ['error', 'STORE_ERROR'], ['hang', 'COMMIT_UNKNOWN'], ['true', 'COMMIT_UNKNOWN']]) {
    const loads = c.n.load;
    fault = f;
    await assert.rejects(gate.write('k', 1, f), isCode(code), f);
    assert.equal(c.n.load, loads, `${f}: the optimistic commit needed no load`);
    assert.deepEqual(await gate.write('k', 1, `after ${f}`), verdictOf('k', 'accept', null, 1, 1, 1));
    assert.equal(c.n.load, loads + 1, `${f}: the entry was dropped, the next write loaded`);
  }
  assert.equal(inner.load('k').value, 'after true');
});

test('a cached duplicate is answered by the stored state (loads), never from the cache', async () => {
  const c = counting(new MemoryCommitFromStore());
  const gate = new Gate(c.store);
  assert.equal((await gate.write('k', 3, 'a', { opId: 'op1' })).outcome, 'advance');
  const loads = c.n.load;
  const v = await gate.write('k', 3, 'a', { opId: 'op1' });
  assert.deepEqual([v.outcome, v.original, c.n.load], ['duplicate', 'advance', loads + 1]);
});

test('Gate loadTimeoutMs: a load that never answers is STORE_ERROR after the timeout, nothing written', async () => {
  const inner = new MemoryCommitFromStore();
  const store = { load: () => new Promise(() => {}), commit: inner.commit.bind(inner), commitFrom: inner.commitFrom.bind(inner) };
  const gate = new Gate(store, { loadTimeoutMs: 30 });
  const e = await gate.write('k', 1, 'v').catch((x) => x);
  assert.equal(e.code, 'STORE_ERROR');
  assert.equal(e.callback, 'load');
  assert.match(e.message, /no answer within 30 ms/);
  assert.equal(inner.load('k'), null);
  await assert.rejects(gate.read('k'), isCode('STORE_ERROR'));
});

test('a commitFrom store whose load gives an object state takes the plain load + commit path for what it loads', async () => {
  const inner = new MemoryCommitFromStore();
  const c = counting(inner);
  const objectState = {
    ...c.store,
    load: async (key) => {
      const r = await c.store.load(key);
      return r === null ? null : { ...r, state: JSON.parse(r.state) };
    },
  };
  const gate = new Gate(objectState);
  assert.deepEqual(await gate.write('k', 2, 'a'), verdictOf('k', 'advance', null, 2, 0, 2)); // no record: commitFrom inserts
  assert.deepEqual(await gate.write('k', 2, 'b'), verdictOf('k', 'accept', null, 2, 2, 2)); // the text it wrote is cached
  assert.deepEqual(c.n, { load: 1, commit: 0, commitFrom: 2, lost: 0 });
  gate.forget('k');
  // loaded as an object: not cached, decided again on the plain path (load + commit)
  assert.deepEqual(await gate.write('k', 3, 'c'), verdictOf('k', 'advance', null, 3, 2, 3));
  assert.deepEqual(await gate.write('k', 3, 'd'), verdictOf('k', 'accept', null, 3, 3, 3));
  assert.deepEqual(c.n, { load: 5, commit: 2, commitFrom: 2, lost: 0 });
  assert.deepEqual(inner.load('k'), { state: '{"v":1,"mark":"3"}', version: 4, value: 'd' });
});

test('stateCache: 3 keeps 3 keys: after 10 keys only the last 3 write without a load', async () => {
  const c = counting(new MemoryCommitFromStore());
  const gate = new Gate(c.store, { stateCache: 3 });
  for (let i = 0; i < 10; i++) await gate.write(`k${i}`, 1, i);
  assert.equal(c.n.load, 10);
  for (const i of [7, 8, 9, 9, 8, 7]) await gate.write(`k${i}`, 1, i);
  assert.equal(c.n.load, 10);
  await gate.write('k6', 1, 6); // evicted: loads, and takes the place of the least recently used
  assert.equal(c.n.load, 11);
  assert.deepEqual(c.n, { load: 11, commit: 0, commitFrom: 17, lost: 0 });
});

// Issue 14 item 2: the next state crosses to the store as the text Wasm wrote, not
// through a JS object and JSON.stringify; the object form is parsed only when read.
test('transaction stores get nextStateText: the exact JSON of nextState, parsed only when a store reads nextState', async () => {
  const rows = new Map();
  const seen = [];
  let readObject = false;
  const store = {
    transaction(key, fn) {
      const out = fn(rows.get(key) ?? null);
      if (out === null) return false;
      const d = Object.getOwnPropertyDescriptor(out, 'nextState');
      seen.push({ text: out.nextStateText, lazy: typeof d.get === 'function' });
      if (readObject) assert.equal(JSON.stringify(out.nextState), out.nextStateText);
      rows.set(key, out.nextStateText);
      return true;
    },
  };
  const gate = new Gate(store);
  assert.equal((await gate.write('k', 5, 'a')).outcome, 'advance');
  readObject = true;
  assert.equal((await gate.write('k', 6, 'b', { opId: 'op-1' })).outcome, 'advance');
  assert.equal((await gate.write('k', 6, 'b', { opId: 'op-1' })).outcome, 'duplicate');
  assert.equal((await gate.write('k', 4, 'c')).code, 'STALE_TOKEN');
  assert.deepEqual(
    seen.map((s) => s.lazy),
    [true, true],
  );
  assert.equal(seen[0].text, '{"v":1,"mark":"5"}');
  // (the op id's record keeps the mark it was applied over: 5)
  assert.equal(seen[1].text, '{"v":4,"mark":"6","holder":null,"ops":[["op-1","5"]],"evicted":null,"quarantine":null}');
  assert.equal(rows.get('k'), seen[1].text); // the duplicate and the refusal wrote nothing
});
