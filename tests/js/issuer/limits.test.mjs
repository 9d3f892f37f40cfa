// Fixes after the new-user trial, item 3: the Issuer's text limits are the
// gate's, in UTF-8 bytes: a holder the gate would refuse is refused at acquire
// (the trial's 300-character holder was granted, then refused by establish).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Issuer, MemoryGate, Gate, MemoryHostStore, FencegateError } from '../../../pkg/node.mjs';

const invalid = (message, details = {}) => (e) => {
  assert.ok(e instanceof FencegateError, String(e));
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.equal(e.message, message);
  for (const [k, v] of Object.entries(details)) assert.deepEqual(e[k], v, k);
  return true;
};

test('the trial case: a 300-byte holder is refused by acquire as by the gate, nothing issued', async () => {
  const issuer = new Issuer();
  const gate = new MemoryGate();
  const h = 'h'.repeat(300);
  await assert.rejects(
    issuer.acquire({ scope: 's', holder: h, ttlMs: 1000, now: 0 }),
    invalid(`a holder is 1 to 256 UTF-8 bytes of text; "${'h'.repeat(40)}…" is 300 bytes`, { holder: `${'h'.repeat(40)}…`, holderBytes: 300 }),
  );
  assert.deepEqual(await issuer.current('s'), { scope: 's', epoch: 0, lease: null });
  assert.throws(() => gate.establish('s', 1, { holder: h }), (e) => e.code === 'INVALID_ARGUMENT' && e.message === 'a holder is 1 to 256 UTF-8 bytes of text');
});

test('holder at the limit (256 bytes: ASCII, 2-byte and 4-byte characters) is granted and bound by MemoryGate and Gate; one byte over is refused by all three', async () => {
  for (const [atLimit, over] of [
    ['h'.repeat(256), 'h'.repeat(257)],
    ['é'.repeat(128), `${'é'.repeat(128)}a`],
    ['😀'.repeat(64), `${'😀'.repeat(63)}abcde`],
  ]) {
    const issuer = new Issuer();
    const lease = await issuer.acquire({ scope: 's', holder: atLimit, ttlMs: 1000, now: 0 });
    assert.deepEqual([lease.ok, lease.epoch, lease.holder], [true, 1, atLimit]);
    assert.equal(new MemoryGate().establish('s', lease.epoch, { holder: lease.holder }).outcome, 'advance');
    const gate = new Gate(new MemoryHostStore());
    assert.equal((await gate.establish('s', lease.epoch, { holder: lease.holder })).outcome, 'advance');
    assert.equal((await gate.inspect('s')).holder, atLimit);

    await assert.rejects(issuer.acquire({ scope: 't', holder: over, ttlMs: 1000, now: 0 }), invalid(`a holder is 1 to 256 UTF-8 bytes of text; ${JSON.stringify(over.slice(0, over.length > 40 ? 40 : over.length) + (over.length > 40 ? '…' : ''))} is 257 bytes`, { holderBytes: 257 }));
    await assert.rejects(issuer.renew({ scope: 's', leaseId: lease.leaseId, holder: over, ttlMs: 1, now: 0 }), (e) => e.code === 'INVALID_ARGUMENT' && e.holderBytes === 257);
    await assert.rejects(issuer.release({ scope: 's', leaseId: lease.leaseId, holder: over }), (e) => e.code === 'INVALID_ARGUMENT' && e.holderBytes === 257);
    assert.throws(() => new MemoryGate().establish('s', 1, { holder: over }), (e) => e.code === 'INVALID_ARGUMENT' && e.message === 'a holder is 1 to 256 UTF-8 bytes of text' && e.holderBytes === 257);
    await assert.rejects(gate.establish('s', 2, { holder: over }), (e) => e.code === 'INVALID_ARGUMENT' && e.message === 'a holder is 1 to 256 UTF-8 bytes of text');
    assert.deepEqual((await issuer.current('s')).lease.holder, atLimit);
    assert.deepEqual((await issuer.current('t')).epoch, 0);
  }
});

test('requestId: 256 UTF-8 bytes accepted, 257 refused; leaseId: 128 bytes is just not the lease, 129 refused', async () => {
  const issuer = new Issuer();
  const ok = await issuer.acquire({ scope: 's', holder: 'a', ttlMs: 1000, now: 0, requestId: 'r'.repeat(256) });
  assert.deepEqual([ok.ok, ok.requestId], [true, 'r'.repeat(256)]);
  await assert.rejects(
    issuer.acquire({ scope: 'u', holder: 'a', ttlMs: 1000, now: 0, requestId: 'é'.repeat(128) + 'x' }),
    invalid(`a requestId is 1 to 256 UTF-8 bytes of text; "${'é'.repeat(40)}…" is 257 bytes`, { requestIdBytes: 257 }),
  );
  assert.deepEqual(await issuer.renew({ scope: 's', leaseId: 'x'.repeat(128), holder: 'a', ttlMs: 1, now: 0 }), { ok: false, code: 'LEASE_NOT_HELD', scope: 's' });
  await assert.rejects(
    issuer.release({ scope: 's', leaseId: 'x'.repeat(129), holder: 'a' }),
    invalid(`a leaseId is 1 to 128 UTF-8 bytes of text; "${'x'.repeat(40)}…" is 129 bytes`, { leaseIdBytes: 129 }),
  );
  await assert.rejects(issuer.acquire({ scope: 's', holder: '', ttlMs: 1, now: 0 }), invalid('a holder is 1 to 256 UTF-8 bytes of well-formed text, got ""'));
  await assert.rejects(issuer.acquire({ scope: 's', holder: 42, ttlMs: 1, now: 0 }), invalid('a holder is 1 to 256 UTF-8 bytes of well-formed text, got 42'));
  await assert.rejects(issuer.acquire({ scope: 's', holder: 'a\uD800', ttlMs: 1, now: 0 }), invalid('a holder is 1 to 256 UTF-8 bytes of well-formed text, got "a\\ud800"'));
  assert.equal((await issuer.current('s')).lease.holder, 'a');
});

test('scope: 512 UTF-8 bytes accepted, 513 refused with the byte limit in the message (not "1024 characters")', async () => {
  const issuer = new Issuer();
  assert.equal((await issuer.acquire({ scope: 'é'.repeat(256), holder: 'a', ttlMs: 1, now: 0 })).epoch, 1);
  await assert.rejects(
    issuer.acquire({ scope: `${'é'.repeat(256)}x`, holder: 'a', ttlMs: 1, now: 0 }),
    invalid(`a scope is 1 to 512 UTF-8 bytes of text; "${'é'.repeat(40)}…" is 513 bytes`, { scopeBytes: 513 }),
  );
  await assert.rejects(issuer.current(''), invalid('a scope is 1 to 512 UTF-8 bytes of well-formed text, got ""'));
  assert.throws(() => issuer.keyOf(7), invalid('a scope is 1 to 512 UTF-8 bytes of well-formed text, got 7'));
});
