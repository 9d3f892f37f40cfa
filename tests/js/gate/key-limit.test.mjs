// Issue 13: one key limit, 512 UTF-8 bytes, for every gate, consistent with
// the signed-token scope limit (a key is its own default scope) and the
// issuer's scopes. Error messages cut long keys. (Every host store is covered
// by the conformance case in tests/js/stores/cases.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryGate, Gate, Issuer, mintToken, FencegateError } from '../../../pkg/node.mjs';
import { keyOfBytes } from '../stores/cases.mjs';
import { MemoryCasStore } from '../stores/memory-stores.mjs';

const K1 = new Uint8Array(32).fill(7);
const invalidKey = (bytes) => (e) => {
  assert.ok(e instanceof FencegateError, String(e));
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.equal(e.keyBytes ?? e.scopeBytes, bytes);
  assert.ok(e.message.length < 200, e.message);
  return true;
};

test('MemoryGate: a 512-byte key is written; 513 bytes and 8000 characters are INVALID_ARGUMENT, cut in the message', () => {
  const g = new MemoryGate();
  const at = keyOfBytes('k', 512);
  assert.deepEqual(g.write(at, 5, 'v'), { key: at, ok: true, outcome: 'advance', code: null, token: 5, markBefore: 0, markAfter: 5 });
  assert.deepEqual(g.read(at), { mark: 5, value: 'v', hasValue: true });
  for (const over of [keyOfBytes('k', 513), 'k'.repeat(8000), 'é'.repeat(257), '𝄞'.repeat(129)]) {
    const bytes = Buffer.byteLength(over);
    assert.ok(bytes > 512);
    for (const call of [() => g.write(over, 5, 'x'), () => g.establish(over, 5), () => g.read(over), () => g.mark(over), () => g.quarantine(over, 1), () => g.state(over)]) {
      assert.throws(call, invalidKey(bytes));
    }
  }
  assert.deepEqual(g.keys(), [at]);
  // 8000 characters: the message quotes 40 of them.
  const e = (() => { try { g.write('k'.repeat(8000), 5, 'x'); } catch (err) { return err; } })();
  assert.equal(e.message, `a resource key is at most 512 UTF-8 bytes; "${'k'.repeat(40)}…" is longer`);
  assert.equal(e.key, `${'k'.repeat(40)}…`);
  // Exactly at the limit with 4-byte characters.
  assert.equal(g.write('𝄞'.repeat(128), 1, 'v').outcome, 'advance');
});

test('requireSigned with the default scope (the key): a 512-byte key can be written, as its token can be minted', async () => {
  const key = keyOfBytes('orders/', 512);
  const token = mintToken({ scope: key, epoch: 3, leaseId: 'L', generation: 1 }, { kid: 'k1', hmac: K1 });
  const mem = new MemoryGate({ requireSigned: true, keys: { k1: K1 } });
  assert.equal(mem.write(key, token, 'v').outcome, 'advance');
  const gate = new Gate(new MemoryCasStore(), { requireSigned: true, keys: { k1: K1 } });
  assert.equal((await gate.write(key, token, 'v')).outcome, 'advance');
  // One byte more is neither a key nor a scope.
  const over = keyOfBytes('orders/', 513);
  assert.throws(() => mintToken({ scope: over, epoch: 3 }, { kid: 'k1', hmac: K1 }), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => mem.write(over, token, 'v'), invalidKey(513));
});

test('Issuer scopes: 512 UTF-8 bytes like token scopes and keys; 513 is INVALID_ARGUMENT', async () => {
  const issuer = new Issuer();
  const at = keyOfBytes('jobs/', 512);
  const a = await issuer.acquire({ scope: at, holder: 'A', ttlMs: 1000, now: 0 });
  assert.deepEqual([a.ok, a.epoch], [true, 1]);
  const over = keyOfBytes('jobs/', 513);
  await assert.rejects(issuer.acquire({ scope: over, holder: 'A', ttlMs: 1000, now: 0 }), invalidKey(513));
  await assert.rejects(issuer.current(over), invalidKey(513));
  await assert.rejects(issuer.acquire({ scope: 'x'.repeat(8000), holder: 'A', ttlMs: 1000, now: 0 }), invalidKey(8000));
});
