// Signed tokens and higher-epoch policies on host-store gates (`Gate`), both
// callback shapes: refusals never reach commit, and never change state or value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate, mintToken, FencegateError } from '../../../pkg/node.mjs';
import { MemoryCasStore, MemoryTxStore } from '../stores/memory-stores.mjs';

const K1 = new Uint8Array(32).fill(1);
const EVIL = new Uint8Array(32).fill(9);
const mint = (scope, epoch, hmac = K1) => mintToken({ scope, epoch, leaseId: 'L', generation: 1 }, { kid: 'k1', hmac });

/** Wraps a store to count commits/transactions that wrote. */
function counted(store) {
  const counts = { writes: 0 };
  if (typeof store.commit === 'function') {
    const commit = store.commit.bind(store);
    store.commit = (...args) => {
      counts.writes++;
      return commit(...args);
    };
  } else {
    const tx = store.transaction.bind(store);
    store.transaction = (key, fn) =>
      tx(key, (state) => {
        const out = fn(state);
        if (out) counts.writes++;
        return out;
      });
  }
  return counts;
}

for (const [shape, Store] of [['compare-and-set', MemoryCasStore], ['transaction', MemoryTxStore]]) {
  test(`${shape}: requireSigned, scope, forged and out-of-policy tokens`, async () => {
    const store = new Store();
    const counts = counted(store);
    const gate = new Gate(store, { requireSigned: true, keys: { k1: K1 }, higherEpoch: { mode: 'adopt-within', maxJump: 1000 } });
    const v = await gate.write('orders', mint('orders', 10), { n: 10 });
    assert.deepEqual(
      [v.outcome, v.code, v.token, v.markBefore, v.markAfter, v.claims.leaseId, counts.writes],
      ['advance', null, 10, 0, 10, 'L', 1],
    );
    // The signed token's lease id binds the epoch to its holder (issue 6).
    assert.equal(store.entries.get('orders').state, '{"v":4,"mark":"10","holder":"L","ops":[],"evicted":null,"quarantine":null}');
    for (const [token, code] of [
      [2n ** 63n, 'UNSIGNED_TOKEN'],
      [11, 'UNSIGNED_TOKEN'],
      [mint('orders', 2n ** 63n, EVIL), 'BAD_SIGNATURE'],
      [mint('invoices', 11), 'WRONG_SCOPE'],
      [mint('orders', 5000), 'EPOCH_JUMP_TOO_LARGE'],
      [mint('orders', 9), 'STALE_TOKEN'],
      ['fg1.x.y', 'MALFORMED_TOKEN'],
      [undefined, 'MISSING_TOKEN'],
    ]) {
      const r = await gate.write('orders', token, { n: -1 });
      assert.deepEqual([r.ok, r.code, r.markBefore, r.markAfter], [false, code, 10, 10], String(token));
      const e = await gate.establish('orders', token);
      assert.equal(e.code, code);
      const d = await gate.delete('orders', token);
      assert.equal(d.code, code);
    }
    assert.equal(counts.writes, 1);
    assert.deepEqual(await gate.read('orders'), { mark: 10, value: { n: 10 }, hasValue: true });
    const ok = await gate.write('orders', mint('orders', 1010), { n: 1010 });
    assert.deepEqual([ok.outcome, ok.markAfter, counts.writes], ['advance', 1010, 2]);
  });

  test(`${shape}: reject-future with an async ceiling (the issuer's current epoch)`, async () => {
    const store = new Store();
    let issuer = 5;
    const gate = new Gate(store, { higherEpoch: { mode: 'reject-future', ceiling: async () => issuer } });
    assert.equal((await gate.write('k', 5, 'a')).outcome, 'advance');
    const r = await gate.write('k', 6, 'b');
    assert.deepEqual([r.code, r.markAfter], ['FUTURE_EPOCH', 5]);
    issuer = 6n;
    assert.equal((await gate.write('k', 6, 'b')).outcome, 'advance');
    assert.deepEqual(await gate.read('k'), { mark: 6, value: 'b', hasValue: true });
    const failing = new Gate(store, { higherEpoch: { mode: 'reject-future', ceiling: () => { throw new Error('issuer down'); } } });
    const e = await failing.write('k', 7, 'c').then(() => null, (x) => x);
    assert.deepEqual([e instanceof FencegateError, e.code, e.callback, e.cause.message], [true, 'STORE_ERROR', 'ceiling', 'issuer down']);
    assert.match(e.message, /issuer down/);
    const rejecting = new Gate(store, { higherEpoch: { mode: 'reject-future', ceiling: async () => { throw new Error('issuer timeout'); } } });
    const r2 = await rejecting.establish('k', 7).then(() => null, (x) => x);
    assert.deepEqual([r2.code, r2.callback, r2.cause.message], ['STORE_ERROR', 'ceiling', 'issuer timeout']);
    assert.equal(await gate.mark('k'), 6);
  });
}

test('live key rotation on a host-store Gate', async () => {
  const K2 = new Uint8Array(32).fill(2);
  const gate = new Gate(new MemoryCasStore(), { requireSigned: true, keys: { k1: K1 } });
  assert.equal((await gate.write('s', mint('s', 5), 'a')).outcome, 'advance');
  gate.addKey('k2', K2);
  const t6 = mintToken({ scope: 's', epoch: 6 }, { kid: 'k2', hmac: K2 });
  assert.equal((await gate.write('s', t6, 'b')).outcome, 'advance');
  gate.retireKey('k1');
  const r = await gate.write('s', mint('s', 7), 'c');
  assert.deepEqual([r.code, r.markAfter], ['KEY_RETIRED', 6]);
  assert.deepEqual(await gate.read('s'), { mark: 6, value: 'b', hasValue: true });
});
