// Issuer behaviour over the default in-memory store and small test stores:
// leases vs epochs, idempotent acquire, overflow, strict state, arguments, and
// every "case that must hold" of issue 4 that needs no fault injection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Issuer, MemoryHostStore, MemoryGate, FencegateError } from '../../../pkg/node.mjs';
import { SpyStore } from './stores.mjs';
import { leaseIdOf, scopeTag } from './lease-id.mjs';

const T0 = 1_700_000_000_000;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

test('acquire, held, renew, release: exact results and stored state', async () => {
  const store = new SpyStore();
  const issuer = new Issuer(store);
  assert.equal(issuer.shape, 'compare-and-set');
  assert.equal(issuer.epochs, 'number');
  assert.equal(issuer.keyOf('jobs'), 'issuer:jobs');
  assert.deepEqual(await issuer.current('jobs'), { scope: 'jobs', epoch: 0, lease: null });

  const a = await issuer.acquire({ scope: 'jobs', holder: 'A', ttlMs: 1000, now: T0, requestId: 'a-1' });
  assert.match(a.leaseId, leaseIdOf(1, 'jobs'));
  assert.deepEqual(a, {
    ok: true, code: null, scope: 'jobs', epoch: 1, leaseId: a.leaseId, holder: 'A',
    expiresAt: T0 + 1000, requestId: 'a-1', replayed: false,
  });
  assert.deepEqual(JSON.parse(store.raw('issuer:jobs')), {
    v: 2, epoch: '1', lease: { id: a.leaseId, holder: 'A', expiresAt: String(T0 + 1000), ttlMs: '1000', requestId: 'a-1' },
  });

  // Another holder, and the same holder, while the lease is live: LEASE_HELD, nothing written.
  const commits = store.commits;
  for (const holder of ['B', 'A']) {
    assert.deepEqual(await issuer.acquire({ scope: 'jobs', holder, ttlMs: 1000, now: T0 + 999 }), {
      ok: false, code: 'LEASE_HELD', scope: 'jobs', epoch: 1, holder: 'A', expiresAt: T0 + 1000,
    });
  }
  assert.equal(store.commits, commits);

  const r = await issuer.renew({ scope: 'jobs', leaseId: a.leaseId, holder: 'A', ttlMs: 5000, now: T0 + 500 });
  assert.deepEqual(r, {
    ok: true, code: null, scope: 'jobs', epoch: 1, leaseId: a.leaseId, holder: 'A', expiresAt: T0 + 5500, requestId: 'a-1',
  });
  assert.deepEqual(await issuer.current('jobs'), {
    scope: 'jobs', epoch: 1, lease: { leaseId: a.leaseId, holder: 'A', expiresAt: T0 + 5500, requestId: 'a-1' },
  });
  // A renewal keeps the acquiring request's ttlMs in the record (its fingerprint).
  assert.equal(JSON.parse(store.raw('issuer:jobs')).lease.ttlMs, '1000');

  assert.deepEqual(await issuer.release({ scope: 'jobs', leaseId: a.leaseId, holder: 'A' }), {
    ok: true, code: null, scope: 'jobs', released: true, epoch: 1,
  });
  assert.deepEqual(JSON.parse(store.raw('issuer:jobs')), { v: 2, epoch: '1', lease: null });
  // Releasing again, or renewing a released lease: nothing changes.
  const bytes = store.raw('issuer:jobs');
  assert.deepEqual(await issuer.release({ scope: 'jobs', leaseId: a.leaseId, holder: 'A' }), {
    ok: true, code: null, scope: 'jobs', released: false, epoch: 1,
  });
  assert.deepEqual(await issuer.renew({ scope: 'jobs', leaseId: a.leaseId, holder: 'A', ttlMs: 1, now: T0 + 600 }), {
    ok: false, code: 'LEASE_EXPIRED', scope: 'jobs', epoch: 1,
  });
  assert.equal(store.raw('issuer:jobs'), bytes);

  const b = await issuer.acquire({ scope: 'jobs', holder: 'B', ttlMs: 1000, now: T0 + 600 });
  assert.equal(b.epoch, 2);
  // Scopes are independent, and a lease id of one scope means nothing in another.
  const other = await issuer.acquire({ scope: 'mail', holder: 'B', ttlMs: 1000, now: T0 });
  assert.equal(other.epoch, 1);
  assert.equal((await issuer.release({ scope: 'mail', leaseId: b.leaseId, holder: 'B' })).code, 'LEASE_NOT_HELD');
  assert.equal((await issuer.renew({ scope: 'jobs', leaseId: other.leaseId, holder: 'B', ttlMs: 1, now: T0 })).code, 'LEASE_NOT_HELD');
  assert.equal((await issuer.renew({ scope: 'jobs', leaseId: b.leaseId, holder: 'B', ttlMs: 1, now: T0 + 700 })).ok, true);
});

test('new Issuer() works over its own in-memory store', async () => {
  const issuer = new Issuer();
  const a = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 10, now: 0 });
  const b = await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 10, now: 10 });
  assert.deepEqual([a.epoch, b.epoch], [1, 2]);
  assert.ok(new MemoryHostStore().load('x') === null);
});

test('issue 4: L1 → 33 writes, lapses; L2 → 34 writes; 33 is STALE_TOKEN; 34 writes again', async () => {
  const issuer = new Issuer();
  assert.equal((await issuer.raise({ scope: 'db', atLeast: 32, now: 0 })).epoch, 32);
  const gate = new MemoryGate();
  const l1 = await issuer.acquire({ scope: 'db', holder: 'L1', ttlMs: 1000, now: T0 });
  assert.equal(l1.epoch, 33);
  assert.equal(gate.write('db', l1.epoch, 'from L1').outcome, 'advance');
  // L1 pauses past its lease; L2 acquires.
  const l2 = await issuer.acquire({ scope: 'db', holder: 'L2', ttlMs: 1000, now: T0 + 1000 });
  assert.equal(l2.epoch, 34);
  assert.equal(gate.write('db', l2.epoch, 'from L2').outcome, 'advance');
  assert.deepEqual(gate.write('db', l1.epoch, 'late L1'), {
    key: 'db', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 33, markBefore: 34, markAfter: 34,
  });
  assert.deepEqual(gate.write('db', l2.epoch, 'again'), {
    key: 'db', ok: true, outcome: 'accept', code: null, token: 34, markBefore: 34, markAfter: 34,
  });
  assert.equal(gate.value('db'), 'again');
});

test('issue 4: a waiter is granted only at now ≥ the holder expiry; its own lease is never born expired', async () => {
  const issuer = new Issuer();
  await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 1000 });
  assert.equal((await issuer.acquire({ scope: 's', holder: 'W', ttlMs: 100, now: 1099 })).code, 'LEASE_HELD');
  const w = await issuer.acquire({ scope: 's', holder: 'W', ttlMs: 100, now: 1100 });
  assert.deepEqual([w.ok, w.epoch, w.expiresAt], [true, 2, 1200]);
  assert.ok(w.expiresAt > 1100);
  // ttlMs 0 would grant a lease already expired at the grant: refused, nothing written.
  await assert.rejects(issuer.acquire({ scope: 't', holder: 'W', ttlMs: 0, now: 5 }), { code: 'INVALID_ARGUMENT' });
  assert.deepEqual(await issuer.current('t'), { scope: 't', epoch: 0, lease: null });
});

test('issue 4: a superseded holder cannot renew back into validity; its next acquire is above the superseding epoch', async () => {
  const issuer = new Issuer();
  const a = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 0 });
  const b = await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 100, now: 100 });
  for (const now of [50, 100, 150, 250]) {
    assert.equal((await issuer.renew({ scope: 's', leaseId: a.leaseId, holder: 'A', ttlMs: 1000, now })).code, 'LEASE_EXPIRED');
  }
  assert.equal((await issuer.release({ scope: 's', leaseId: a.leaseId, holder: 'A' })).released, false);
  assert.equal((await issuer.current('s')).lease.holder, 'B');
  const again = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 200 });
  assert.ok(again.epoch > b.epoch);
  assert.equal(again.epoch, 3);
});

test('issue 4: clock going backwards never gives a smaller epoch', async () => {
  const issuer = new Issuer();
  const a = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 1000, now: 1_700_000_000_000 });
  await issuer.release({ scope: 's', leaseId: a.leaseId, holder: 'A' });
  const b = await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 1000, now: 1_699_999_998_000 });
  assert.ok(b.epoch > a.epoch);
  assert.deepEqual([a.epoch, b.epoch, b.expiresAt], [1, 2, 1_699_999_999_000]);
});

test('idempotent acquire: the same request id returns the same lease and epoch while it is live', async () => {
  const store = new SpyStore();
  const issuer = new Issuer(store);
  const first = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 0, requestId: 'r1' });
  const commits = store.commits;
  const again = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 50, requestId: 'r1' });
  assert.deepEqual(again, { ...first, replayed: true });
  assert.equal(store.commits, commits);
  // The same request id with other arguments (issue 13 item 2): another
  // holder, another ttlMs — refused while live and after expiry, nothing written.
  const bytes = store.raw('issuer:s');
  for (const now of [50, 100, 5000]) {
    for (const [holder, ttlMs] of [['A', 60_000], ['B', 100], ['B', 60_000]]) {
      assert.deepEqual(await issuer.acquire({ scope: 's', holder, ttlMs, now, requestId: 'r1' }), {
        ok: false, code: 'REQUEST_ID_REUSED', scope: 's',
      });
    }
  }
  assert.equal(store.raw('issuer:s'), bytes);
  assert.equal(store.commits, commits);
  // After expiry the same request does not silently get a new epoch.
  assert.deepEqual(await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 100, requestId: 'r1' }), {
    ok: false, code: 'LEASE_EXPIRED', scope: 's', epoch: 1,
  });
  assert.equal((await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 100, requestId: 'r2' })).epoch, 2);
});

test('EPOCH_OVERFLOW at 2^53−1 for number epochs, at 2^64−1 for bigint; never wraps or rounds', async () => {
  const store = new SpyStore();
  const numbers = new Issuer(store);
  await numbers.raise({ scope: 's', atLeast: MAX_SAFE - 1, now: 0 });
  const last = await numbers.acquire({ scope: 's', holder: 'A', ttlMs: 10, now: 0 });
  assert.equal(last.epoch, MAX_SAFE);
  assert.match(last.leaseId, leaseIdOf(MAX_SAFE, 's'));
  // While it is live the answer is LEASE_HELD; once free, EPOCH_OVERFLOW with nothing written.
  assert.equal((await numbers.acquire({ scope: 's', holder: 'B', ttlMs: 10, now: 5 })).code, 'LEASE_HELD');
  const bytes = store.raw('issuer:s');
  await assert.rejects(numbers.acquire({ scope: 's', holder: 'B', ttlMs: 10, now: 10 }), (e) => {
    assert.ok(e instanceof FencegateError);
    assert.equal(e.code, 'EPOCH_OVERFLOW');
    assert.equal(e.scope, 's');
    assert.equal(e.epoch, MAX_SAFE);
    assert.equal(e.limit, MAX_SAFE);
    return true;
  });
  assert.equal(store.raw('issuer:s'), bytes);

  // The same stored state with bigint epochs: 2^53 comes out exact, as a bigint.
  const bigints = new Issuer(store, { epochs: 'bigint' });
  const next = await bigints.acquire({ scope: 's', holder: 'B', ttlMs: 10, now: 10 });
  assert.equal(next.epoch, 2n ** 53n);
  assert.match(next.leaseId, leaseIdOf('9007199254740992', 's'));
  const gate = new MemoryGate();
  assert.equal(gate.write('r', last.epoch, 1).outcome, 'advance');
  assert.equal(gate.write('r', next.epoch, 2).outcome, 'advance');
  assert.equal(gate.write('r', last.epoch, 3).code, 'STALE_TOKEN');
  // A number issuer reading a state above its range: overflow, not rounding.
  await assert.rejects(numbers.acquire({ scope: 's', holder: 'C', ttlMs: 10, now: 20 }), { code: 'EPOCH_OVERFLOW' });
  assert.equal((await numbers.current('s')).epoch, 2n ** 53n);

  await bigints.raise({ scope: 'u', atLeast: 2n ** 64n - 2n, now: 0 });
  assert.equal((await bigints.acquire({ scope: 'u', holder: 'A', ttlMs: 1, now: 0 })).epoch, 2n ** 64n - 1n);
  await assert.rejects(bigints.acquire({ scope: 'u', holder: 'B', ttlMs: 1, now: 1 }), { code: 'EPOCH_OVERFLOW', epoch: 2n ** 64n - 1n });
  assert.deepEqual(JSON.parse(store.raw('issuer:u')).epoch, '18446744073709551615');
});

test('stored issuer state is strict: anything but format v1 or v2 is CORRUPT_STATE and nothing is written', async () => {
  const lease = { holder: 'A', expiresAt: '5', requestId: null };
  const lease2 = { id: `1.${scopeTag('s')}${'A'.repeat(22)}`, holder: 'A', expiresAt: '5', ttlMs: '5', requestId: null };
  const bad = [
    { v: 3, epoch: '1', lease: null },
    { v: 2, epoch: '1', lease },
    { v: 1, epoch: '1', lease: lease2 },
    { v: 2, epoch: '2', lease: lease2 },
    { v: 2, epoch: '1', lease: { ...lease2, id: `${lease2.id.slice(0, -1)}B` } },
    { v: 2, epoch: '1', lease: { ...lease2, id: 's#1' } },
    { v: 2, epoch: '1', lease: { ...lease2, ttlMs: '0' } },
    { v: 2, epoch: '1', lease: { ...lease2, ttlMs: 5 } },
    { v: 1, epoch: 1, lease: null },
    { v: 1, epoch: '01', lease: null },
    { v: 1, epoch: '-1', lease: null },
    { v: 1, epoch: '18446744073709551616', lease: null },
    { v: 1, epoch: '1' },
    { v: 1, epoch: '1', lease: null, extra: 0 },
    { v: 1, mark: '1' },
    { v: 1, epoch: '0', lease },
    { v: 1, epoch: '1', lease: { ...lease, holder: '' } },
    { v: 1, epoch: '1', lease: { ...lease, expiresAt: 5 } },
    { v: 1, epoch: '1', lease: { ...lease, expiresAt: '9007199254740992' } },
    { v: 1, epoch: '1', lease: { holder: 'A', expiresAt: '5' } },
    { v: 1, epoch: '1', lease: { ...lease, requestId: '' } },
    { v: 1, epoch: '1', lease: { ...lease, id: 's#1' } },
    { v: 1, epoch: '1', lease: [] },
    [],
    'not json',
    '{"v":1,"epoch":"1","lease":null,"x":1}',
    42,
  ];
  for (const state of bad) {
    const store = new SpyStore();
    store.put('issuer:s', state);
    const issuer = new Issuer(store);
    for (const call of [
      () => issuer.acquire({ scope: 's', holder: 'A', ttlMs: 1, now: 100 }),
      () => issuer.release({ scope: 's', leaseId: 's#1', holder: 'A' }),
      () => issuer.current('s'),
    ]) {
      await assert.rejects(call(), (e) => e.code === 'CORRUPT_STATE' && e.scope === 's', JSON.stringify(state));
    }
    assert.equal(store.commits, 0, JSON.stringify(state));
  }
  // Text and object forms of a good state both decode.
  for (const state of [{ v: 1, epoch: '7', lease: null }, '{"v":1,"epoch":"7","lease":null}', { v: 2, epoch: '7', lease: null }]) {
    const store = new SpyStore();
    store.put('issuer:s', state);
    assert.equal((await new Issuer(store).acquire({ scope: 's', holder: 'A', ttlMs: 1, now: 0 })).epoch, 8);
  }
});

test('bad arguments throw INVALID_ARGUMENT and write nothing', async () => {
  const store = new SpyStore();
  const issuer = new Issuer(store);
  const ok = { scope: 's', holder: 'A', ttlMs: 10, now: 0 };
  const cases = [
    { ...ok, scope: '' }, { ...ok, scope: 5 }, { ...ok, holder: '' }, { ...ok, holder: 7 }, { ...ok, holder: undefined },
    { ...ok, ttlMs: 0 }, { ...ok, ttlMs: -1 }, { ...ok, ttlMs: 1.5 }, { ...ok, ttlMs: NaN }, { ...ok, ttlMs: Infinity },
    { ...ok, ttlMs: '10' }, { ...ok, ttlMs: 10n }, { ...ok, ttlMs: undefined },
    { ...ok, now: -1 }, { ...ok, now: 0.5 }, { ...ok, now: 2 ** 53 }, { ...ok, now: '0' }, { ...ok, now: null },
    { ...ok, now: MAX_SAFE }, { ...ok, now: MAX_SAFE - 5, ttlMs: 6 }, { ...ok, ttlMs: MAX_SAFE, now: 1 },
    { ...ok, requestId: '' }, { ...ok, requestId: 3 },
  ];
  for (const args of cases) {
    await assert.rejects(issuer.acquire(args), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT', String(Object.entries(args)));
  }
  await assert.rejects(issuer.acquire(null), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(issuer.acquire({ scope: 's', holder: 'A', ttlMs: 1 }), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(issuer.renew({ scope: 's', leaseId: 5, holder: 'A', ttlMs: 1, now: 0 }), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(issuer.release({ scope: 's', holder: 'A' }), { code: 'INVALID_ARGUMENT' });
  // renew and release take the holder (issue 20).
  for (const holder of [undefined, '', 7]) {
    await assert.rejects(issuer.renew({ scope: 's', leaseId: 's#1', holder, ttlMs: 1, now: 0 }), { code: 'INVALID_ARGUMENT' });
    await assert.rejects(issuer.release({ scope: 's', leaseId: 's#1', holder }), { code: 'INVALID_ARGUMENT' });
  }
  await assert.rejects(issuer.raise({ scope: 's', atLeast: 0, now: 0 }), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(issuer.raise({ scope: 's', atLeast: '5', now: 0 }), { code: 'INVALID_ARGUMENT' });
  assert.equal(store.commits, 0);
  // The largest valid expiry is fine.
  assert.equal((await issuer.acquire({ ...ok, now: MAX_SAFE - 5, ttlMs: 5 })).expiresAt, MAX_SAFE);
  assert.throws(() => new Issuer(store, { epochs: 'u64' }), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => new Issuer({}), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => new Issuer(store, { commitTimeoutMs: 0 }), { code: 'INVALID_ARGUMENT' });
});

test('a clock option supplies now when a call omits it; fencegate reads no clock itself', async () => {
  let t = 100;
  const issuer = new Issuer(undefined, { clock: () => t });
  const a = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 10 });
  assert.equal(a.expiresAt, 110);
  t = 110;
  assert.equal((await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 10 })).epoch, 2);
  // An explicit now wins over the clock.
  assert.equal((await issuer.acquire({ scope: 's', holder: 'C', ttlMs: 10, now: 119 })).code, 'LEASE_HELD');
});

test('raise repairs a restored issuer: detection through a lease id above the stored epoch, then no reuse', async () => {
  const store = new SpyStore();
  const issuer = new Issuer(store);
  let seven;
  for (let i = 0; i < 7; i++) {
    const l = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 10, now: i * 10 });
    if (i === 4) store.snapshot('issuer:s');
    if (i < 6) await issuer.release({ scope: 's', leaseId: l.leaseId, holder: 'A' });
    if (i === 6) seven = l;
  }
  // The issuer state is restored from the backup taken at epoch 5; the live lease is epoch 7's.
  store.restore('issuer:s');
  await assert.rejects(issuer.renew({ scope: 's', leaseId: seven.leaseId, holder: 'A', ttlMs: 10, now: 61 }), { code: 'CORRUPT_STATE' });
  await assert.rejects(issuer.release({ scope: 's', leaseId: seven.leaseId, holder: 'A' }), { code: 'CORRUPT_STATE' });
  // Repair: raise above every epoch a resource has seen (the gate's mark), then acquire.
  assert.deepEqual(await issuer.raise({ scope: 's', atLeast: 7, now: 100 }), {
    ok: true, code: null, scope: 's', epochBefore: 5, epoch: 7, revoked: false,
  });
  assert.equal((await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 10, now: 100 })).epoch, 8);
  assert.equal((await issuer.raise({ scope: 's', atLeast: 9, now: 105 })).code, 'LEASE_HELD');
  assert.deepEqual(await issuer.raise({ scope: 's', atLeast: 3, now: 105 }), {
    ok: true, code: null, scope: 's', epochBefore: 8, epoch: 8, revoked: false,
  });
});

test('a gate record and an issuer record under one key never pass for each other: the default prefix is refused to gates, a custom one fails closed both ways', async () => {
  const { Gate } = await import('../../../pkg/node.mjs');
  const store = new MemoryHostStore();
  const gate = new Gate(store);
  const issuer = new Issuer(store);
  // Resource keys starting with the Issuer's default prefix are refused: the two key spaces cannot meet.
  await assert.rejects(gate.write('issuer:x', 5, 'resource named like an issuer key'), { code: 'INVALID_ARGUMENT' });
  assert.deepEqual(store.keys(), []);
  assert.equal((await issuer.acquire({ scope: 'x', holder: 'A', ttlMs: 10, now: 0 })).epoch, 1);
  // A custom keyPrefix is the application's to keep out of resource keys: a collision fails closed (CORRUPT_STATE, nothing written).
  const other = new Issuer(store, { keyPrefix: 'locks/' });
  await gate.write('locks/y', 5, 'resource named like an issuer key');
  await assert.rejects(other.acquire({ scope: 'y', holder: 'A', ttlMs: 10, now: 0 }), { code: 'CORRUPT_STATE' });
  assert.deepEqual(await gate.read('locks/y'), { mark: 5, value: 'resource named like an issuer key', hasValue: true });
  await other.acquire({ scope: 'z', holder: 'A', ttlMs: 10, now: 0 });
  await assert.rejects(gate.write('locks/z', 9, 'x'), { code: 'CORRUPT_STATE' });
  assert.equal((await other.current('z')).epoch, 1);
  assert.deepEqual(store.keys(), ['issuer:x', 'locks/y', 'locks/z']);
});

test("the next record crosses as Rust's JSON text: a text store writes it as it is, an object store gets that text parsed", async () => {
  const texts = [];
  const records = new Map();
  // a store that keeps text (the shipped SQL, Redis and etcd stores' shape)
  const textStore = {
    textTransaction(key, fn) {
      const r = records.get(key);
      const out = fn(r === undefined ? null : r.state);
      if (out === null) return null;
      texts.push(out.nextStateText);
      records.set(key, { state: out.nextStateText, version: (r?.version ?? 0) + 1 });
      return { version: records.get(key).version };
    },
  };
  const issuer = new Issuer(textStore);
  const a = await issuer.acquire({ scope: 'jobs', holder: 'n"o\\d/é🔒', ttlMs: 1000, now: T0, requestId: 'r-1' });
  await issuer.renew({ scope: 'jobs', leaseId: a.leaseId, holder: a.holder, ttlMs: 2000, now: T0 + 1 });
  await issuer.release({ scope: 'jobs', leaseId: a.leaseId, holder: a.holder });
  assert.deepEqual(texts, [
    `{"v":2,"epoch":"1","lease":{"id":"${a.leaseId}","holder":"n\\"o\\\\d/é🔒","expiresAt":"${T0 + 1000}","ttlMs":"1000","requestId":"r-1"}}`,
    `{"v":2,"epoch":"1","lease":{"id":"${a.leaseId}","holder":"n\\"o\\\\d/é🔒","expiresAt":"${T0 + 2001}","ttlMs":"1000","requestId":"r-1"}}`,
    '{"v":2,"epoch":"1","lease":null}',
  ]);
  // the bytes JSON.stringify of the record's object form writes (what a store that stringifies the object gets)
  for (const t of texts) assert.equal(JSON.stringify(JSON.parse(t)), t);

  // an object store's commit gets the same record as an object
  const store = new SpyStore();
  const other = new Issuer(store);
  const b = await other.acquire({ scope: 'jobs', holder: 'A', ttlMs: 1000, now: T0 });
  assert.deepEqual(JSON.parse(store.raw('issuer:jobs')), {
    v: 2, epoch: '1', lease: { id: b.leaseId, holder: 'A', expiresAt: String(T0 + 1000), ttlMs: '1000', requestId: null },
  });
});
