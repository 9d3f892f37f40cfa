// Inputs that are too large for Wasm memory, and host mistakes that must fail
// closed (found by a new-user trial): each is refused with a stable code before
// anything is decided or written, and the module keeps answering correctly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryGate, Gate, MemoryHostStore, Issuer, mintToken } from '../../../pkg/node.mjs';

const K = new Uint8Array(32).fill(9);

test('a fingerprint over 256 MiB is INVALID_ARGUMENT before Wasm is entered; the module keeps deciding', () => {
  const gate = new MemoryGate();
  const other = new MemoryGate();
  assert.equal(other.write('acct', 10, 'balance').outcome, 'advance');
  assert.equal(gate.write('k', 1, 'v0').outcome, 'advance');
  const e = { code: 'INVALID_ARGUMENT', message: 'fingerprint is at most 268435456 bytes (hash a larger body yourself and pass the digest)', fingerprintBytes: (256 << 20) + 1 };
  assert.throws(() => gate.write('k', 2, 'v1', { opId: 'upload-1', fingerprint: new Uint8Array((256 << 20) + 1) }), e);
  assert.throws(() => gate.write('k', 2, 'v1', { opId: 'upload-2', fingerprint: 'x'.repeat((256 << 20) + 1) }), e);
  assert.deepEqual(gate.read('k'), { mark: 1, value: 'v0', hasValue: true });
  // Later decisions, on this gate and another, are the right ones.
  assert.deepEqual(gate.write('k', 3, 'v3', { opId: 'small', fingerprint: 'body' }), { key: 'k', ok: true, outcome: 'advance', code: null, token: 3, markBefore: 1, markAfter: 3 });
  assert.deepEqual(other.write('acct', 5, 'stale'), { key: 'acct', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 5, markBefore: 10, markAfter: 10 });
});

test('a stored state longer than any state can be is CORRUPT_STATE, nothing committed', async () => {
  let commits = 0;
  const store = { load: () => ({ state: '{"v":1,"mark":"1"}' + ' '.repeat(64 << 20), version: 1 }), commit: () => ++commits > 0 };
  await assert.rejects(new Gate(store).write('k', 3, 'v'), { code: 'CORRUPT_STATE', message: 'the stored state of "k" is 67108882 UTF-16 units long, over the 67108864 a state can be', key: 'k' });
  assert.equal(commits, 0);
});

test('a transaction store that passes undefined (a misnamed column) is CORRUPT_STATE, never "no record": the mark is not lowered', async () => {
  const row = { state: '{"v":1,"mark":"9"}', value: 'current' };
  let writes = 0;
  const put = (o) => {
    if (o === null) return null;
    writes++;
    row.state = o.nextStateText ?? JSON.stringify(o.nextState);
    row.value = o.change;
    return { version: writes };
  };
  const message = 'the stored state of "k" is undefined: a store passes null for a key without a fence record';
  const tx = new Gate({ transaction: (k, fn) => put(fn(row.fencestate)) });
  await assert.rejects(tx.write('k', 3, 'stale writer'), { code: 'CORRUPT_STATE', message, key: 'k' });
  const text = new Gate({ textTransaction: (k, fn) => put(fn(row.fencestate)), commitFrom: () => false });
  await assert.rejects(text.write('k', 3, 'stale writer'), { code: 'CORRUPT_STATE', message, key: 'k' });
  let ran = false;
  const own = new Gate({
    transaction: (k, fn) => put(fn(row.state)),
    fencedTransaction: async (k, step) => {
      const plan = step.decide(undefined);
      if (plan !== null) await step.run({});
      return null;
    },
  });
  await assert.rejects(own.transaction('k', 3, () => { ran = true; }), { code: 'CORRUPT_STATE', message, key: 'k' });
  assert.equal(ran, false);
  assert.deepEqual([row.state, row.value, writes], ['{"v":1,"mark":"9"}', 'current', 0]);
  // The Issuer over a transaction store: the same, no epoch handed out again.
  let issued = 0;
  const issuer = new Issuer({ transaction: (k, fn) => (fn(undefined) === null ? null : ++issued) });
  await assert.rejects(issuer.acquire({ scope: 's', holder: 'A', ttlMs: 10, now: 0 }), { code: 'CORRUPT_STATE', message: 'the stored issuer state of "s" is undefined: a store passes null for a scope without a record' });
  assert.equal(issued, 0);
});

test('getters of a loaded record or a commitFrom answer that throw are STORE_ERROR / COMMIT_UNKNOWN, not the getter\'s own error', async () => {
  const state = { load: () => ({ get state() { throw new Error('lazy column failed'); }, version: 1 }), commit: () => true };
  await assert.rejects(new Gate(state).write('k', 3, 'v'), { code: 'STORE_ERROR', callback: 'load', message: 'host store load("k") failed: lazy column failed' });
  await assert.rejects(new Gate(state).read('k'), { code: 'STORE_ERROR', callback: 'load' });
  const version = { load: () => ({ state: '{"v":1,"mark":"1"}', get version() { throw new Error('version failed'); } }), commit: () => true };
  await assert.rejects(new Gate(version, { stateCache: 0 }).write('k', 3, 'v'), { code: 'STORE_ERROR', callback: 'load', message: 'host store load("k") failed: version failed' });
  await assert.rejects(new Gate(version).write('k', 3, 'v'), { code: 'STORE_ERROR', callback: 'load' });
  const issuerVersion = { load: () => ({ state: '{"v":2,"epoch":"1","lease":null}', get version() { throw new Error('version failed'); } }), commit: () => true };
  await assert.rejects(new Issuer(issuerVersion).acquire({ scope: 's', holder: 'A', ttlMs: 10, now: 0 }), { code: 'STORE_ERROR' });
  const answer = { load: () => null, commit: () => true, commitFrom: () => ({ get version() { throw new Error('answer failed'); } }) };
  await assert.rejects(new Gate(answer).write('k', 3, 'v'), { code: 'COMMIT_UNKNOWN', callback: 'commit' });
});

test('a scope function that throws is STORE_ERROR (callback scope); a scope over 512 UTF-8 bytes is INVALID_ARGUMENT', async () => {
  const throwing = () => { throw new Error('routing table down'); };
  const token = mintToken({ scope: 'orders', epoch: 3, leaseId: 'l', generation: 1 }, { kid: 'k1', hmac: K });
  const e = { code: 'STORE_ERROR', callback: 'scope', key: 'orders', message: "the gate's scope(key) threw (nothing was read or written): routing table down" };
  const mg = new MemoryGate({ keys: { k1: K }, scope: throwing });
  assert.throws(() => mg.write('orders', token, 'v'), e);
  assert.equal(mg.mark('orders'), 0);
  await assert.rejects(new Gate(new MemoryHostStore(), { keys: { k1: K }, scope: throwing }).write('orders', token, 'v'), e);
  const long = { code: 'INVALID_ARGUMENT', message: 'scope is at most 512 UTF-8 bytes', scopeBytes: 513 };
  assert.throws(() => new MemoryGate({ keys: { k1: K }, scope: 'x'.repeat(513) }), long);
  assert.throws(() => new MemoryGate({ keys: { k1: K }, scope: 'é'.repeat(256) + 'x' }), long);
  assert.throws(() => new MemoryGate({ keys: { k1: K }, scope: () => 'x'.repeat(513) }).write('orders', token, 'v'), long);
  assert.doesNotThrow(() => new MemoryGate({ keys: { k1: K }, scope: 'x'.repeat(512) }));
});

test('a detached ArrayBuffer (or a view of one) as fingerprint is INVALID_ARGUMENT, nothing changed', () => {
  const gate = new MemoryGate();
  gate.write('k', 5, 'v0');
  const detached = (view) => {
    const b = new ArrayBuffer(8);
    const v = new Uint8Array(b);
    structuredClone(b, { transfer: [b] });
    return view ? v : b;
  };
  const e = { code: 'INVALID_ARGUMENT', message: 'fingerprint is (a view of) a detached ArrayBuffer: it has no bytes to hash' };
  assert.throws(() => gate.write('k', 6, 'v1', { opId: 'a', fingerprint: detached() }), e);
  assert.throws(() => gate.write('k', 6, 'v1', { opId: 'a', fingerprint: detached(true) }), e);
  assert.deepEqual(gate.read('k'), { mark: 5, value: 'v0', hasValue: true });
  assert.equal(gate.write('k', 6, 'v1', { opId: 'a', fingerprint: new ArrayBuffer(0) }).outcome, 'advance');
});
