// Fixes after the new-user trial, item 4: a raise past the issuer's epoch
// limit is refused with EPOCH_OVERFLOW and changes nothing (a 'number' issuer
// raised to 2^53 refused every acquire for good); reconcile reports a key whose
// mark such an issuer cannot reach as an error of that key and does not raise for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Issuer, Gate, MemoryHostStore, reconcile, FencegateError } from '../../../pkg/node.mjs';

const MAX = 2 ** 53 - 1;
const overflow = (atLeast, limit) => (e) => {
  assert.ok(e instanceof FencegateError, String(e));
  assert.deepEqual(
    { code: e.code, message: e.message, scope: e.scope, atLeast: e.atLeast, limit: e.limit },
    {
      code: 'EPOCH_OVERFLOW',
      message: `cannot raise to ${atLeast}: above the largest epoch this issuer can issue (${limit}); nothing changed`,
      scope: 's',
      atLeast,
      limit,
    },
  );
  return true;
};

test('the trial case: a number issuer raised to 2^53 → EPOCH_OVERFLOW, nothing changed, the next acquire gets epoch 1', async () => {
  const store = new MemoryHostStore();
  const issuer = new Issuer(store);
  await assert.rejects(issuer.raise({ scope: 's', atLeast: 2n ** 53n, now: 0 }), overflow(2n ** 53n, MAX));
  await assert.rejects(issuer.raise({ scope: 's', atLeast: 2n ** 64n - 1n, now: 0, revoke: true }), overflow(2n ** 64n - 1n, MAX));
  // a number above 2^53−1 is not an exact epoch at all
  await assert.rejects(
    issuer.raise({ scope: 's', atLeast: 2 ** 60, now: 0 }),
    (e) => e.code === 'INVALID_ARGUMENT' && e.message === 'atLeast must be an epoch: malformed fence token: a number token must be a safe integer (≤ 2^53−1); pass a bigint for larger epochs',
  );
  assert.deepEqual(store.keys(), []);
  assert.deepEqual(await issuer.current('s'), { scope: 's', epoch: 0, lease: null });
  const lease = await issuer.acquire({ scope: 's', holder: 'h', ttlMs: 1, now: 0 });
  assert.deepEqual([lease.ok, lease.epoch], [true, 1]);
});

test('at the limit: raise to 2^53−1 is ok (and then the scope is exhausted, EPOCH_OVERFLOW on acquire); revoke: true past it is refused and keeps the lease', async () => {
  const issuer = new Issuer();
  assert.deepEqual(await issuer.raise({ scope: 's', atLeast: MAX, now: 0 }), { ok: true, code: null, scope: 's', epochBefore: 0, epoch: MAX, revoked: false });
  await assert.rejects(issuer.acquire({ scope: 's', holder: 'h', ttlMs: 1, now: 0 }), (e) => e.code === 'EPOCH_OVERFLOW' && e.epoch === MAX);

  const a = await issuer.acquire({ scope: 't', holder: 'A', ttlMs: 1000, now: 0 });
  await assert.rejects(issuer.raise({ scope: 't', atLeast: 2n ** 53n, now: 1, revoke: true }), (e) => e.code === 'EPOCH_OVERFLOW' && e.atLeast === 2n ** 53n);
  const cur = await issuer.current('t');
  assert.deepEqual([cur.epoch, cur.lease.holder, cur.lease.leaseId], [1, 'A', a.leaseId]);
});

test("a 'bigint' issuer raises past 2^53 up to 2^64−1; above 2^64−1 is not an epoch (INVALID_ARGUMENT)", async () => {
  const issuer = new Issuer(undefined, { epochs: 'bigint' });
  const r = await issuer.raise({ scope: 's', atLeast: 2n ** 53n, now: 0 });
  assert.deepEqual([r.ok, r.epochBefore, r.epoch], [true, 0, 2n ** 53n]);
  assert.equal((await issuer.acquire({ scope: 's', holder: 'h', ttlMs: 1, now: 0 })).epoch, 2n ** 53n + 1n);
  await assert.rejects(issuer.raise({ scope: 's', atLeast: 2n ** 64n, now: 5 }), (e) => e.code === 'INVALID_ARGUMENT');
  assert.deepEqual((await issuer.raise({ scope: 'u', atLeast: 2n ** 64n - 1n, now: 0 })).epoch, 2n ** 64n - 1n);
});

test('reconcile with a number issuer: a key marked above 2^53−1 is an EPOCH_OVERFLOW error of that key, not raised for; the rest is repaired; dry run the same', async () => {
  const store = new MemoryHostStore();
  const issuer = new Issuer(store);
  const gate = new Gate(store);
  await gate.establish('big', 2n ** 53n);
  await gate.establish('lo', 3);
  await gate.establish('mid', 5);
  const message = `the mark of "big" (9007199254740992) is above the largest epoch this issuer can issue (${MAX}); not raised, left untouched: reconcile it with an issuer of epochs 'bigint'`;
  const scopes = { s: ['big', 'lo', 'mid'], only: ['big'] };
  const dry = await reconcile({ issuer, gate, scopes, now: 0, dryRun: true });
  const real = await reconcile({ issuer, gate, scopes, now: 0 });
  for (const r of [dry, real]) {
    assert.deepEqual(r.changes, [
      { scope: 's', target: 'issuer', action: 'raise', epochBefore: 0, epochAfter: 5, revoked: null },
      { scope: 's', target: 'resource', key: 'lo', action: 'quarantine', markBefore: 3, markAfter: 5, floor: 5 },
    ]);
    assert.deepEqual(r.scopes.map((sc) => sc.errors), [[{ key: 'big', code: 'EPOCH_OVERFLOW', message }], [{ key: 'big', code: 'EPOCH_OVERFLOW', message }]]);
    assert.equal(r.errors, 2);
  }
  assert.equal((await issuer.current('s')).epoch, 5);
  assert.equal((await issuer.current('only')).epoch, 0);
  assert.equal(await gate.mark('big'), 2n ** 53n);
  assert.equal(await gate.mark('lo'), 5);
  // Over the same store, a bigint issuer repairs it.
  const wide = new Issuer(store, { epochs: 'bigint' });
  const r = await reconcile({ issuer: wide, gate, scopes: { only: ['big'] }, now: 0 });
  assert.deepEqual(r.changes, [{ scope: 'only', target: 'issuer', action: 'raise', epochBefore: 0, epochAfter: 2n ** 53n, revoked: null }]);
  assert.equal(r.errors, 0);
});
