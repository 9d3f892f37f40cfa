// Restore drills (issue 9, R11) on SQLite and Redis: back up, run, restore one
// side (or both, to different points), reconcile, and check what every party
// can do afterwards. Issuer and resources live in separate stores so each side
// can be restored on its own (tests/js/restore/sides.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { reconcile } from '../../../pkg/node.mjs';
import { targets } from './sides.mjs';

const T = 1_700_000_000_000;
const TTL = 60_000;
const S = 'orders';

/** acquire that must succeed. */
async function acquire(issuer, holder, now) {
  const l = await issuer.acquire({ scope: S, holder, ttlMs: TTL, now });
  assert.equal(l.ok, true, `acquire for ${holder}: ${l.code}`);
  return l;
}

async function run(h, scopes, now) {
  return reconcile({ issuer: h.issuer(), gate: h.gate(), scopes, now });
}

/**
 * Leases for holders H1..H`last` one after another (epochs 1..last, from T, one ms apart): each
 * writes `v<e>` to `keysAt(e)` and releases. `backupAt` names the epoch after which each side
 * (`issuerSide`, `resourceSide`) is backed up; returns those backups by side.
 */
async function leases(h, last, keysAt, backupAt) {
  const backups = {};
  for (let e = 1, now = T; e <= last; e++, now++) {
    const l = await acquire(h.issuer(), `H${e}`, now);
    assert.equal(l.epoch, e);
    for (const k of keysAt(e)) await h.gate().write(k, l.epoch, `v${e}`, { holder: l.holder });
    await h.issuer().release({ scope: S, leaseId: l.leaseId, holder: l.holder });
    for (const [side, at] of Object.entries(backupAt)) if (at === e) backups[side] = await h[side].backup();
  }
  return backups;
}

/**
 * Reconcile at `now` quarantines every key of `keys` from `markBefore` to `floor`, a second
 * run changes nothing, and a write at the lost epoch (`[epoch, value, holder]`) is QUARANTINED
 * on every key. Returns the gate.
 */
async function quarantines(h, keys, now, markBefore, floor, [epoch, value, holder]) {
  const report = await run(h, { [S]: keys }, now);
  assert.deepEqual(report.changes, keys.map((key) => (
    { scope: S, target: 'resource', key, action: 'quarantine', markBefore, markAfter: floor, floor }
  )));
  assert.equal((await run(h, { [S]: keys }, now + 1)).changed, false);
  const g = h.gate();
  for (const k of keys) assert.equal((await g.write(k, epoch, value, { holder })).code, 'QUARANTINED');
  return g;
}

for (const target of targets()) {
  test(`${target.name}: the issue's case — issuer restored to 40 while A holds 41: EPOCH_CONFLICT, then reconcile; next acquire is 42`, async () => {
    const h = await target.open();
    try {
      await h.issuer().raise({ scope: S, atLeast: 40, now: T });
      const issuerAt40 = await h.issuerSide.backup();
      const a = await acquire(h.issuer(), 'A', T);
      assert.equal(a.epoch, 41);
      const gate = h.gate();
      assert.equal((await gate.establish('k', a.epoch, { holder: a.holder })).outcome, 'advance');
      assert.equal((await gate.write('k', a.epoch, 'a1', { holder: a.holder })).outcome, 'accept');

      await h.issuerSide.restore(issuerAt40);
      assert.deepEqual(await h.issuer().current(S), { scope: S, epoch: 40, lease: null });
      const b = await acquire(h.issuer(), 'B', T + 1);
      assert.equal(b.epoch, 41); // the restored issuer hands 41 out again
      // …but not A's lease id (issue 20): A's renew and release with its old
      // id of 41 are refused, say nothing about B, and B's lease is unchanged.
      assert.notEqual(b.leaseId, a.leaseId);
      const issuedToB = { scope: S, epoch: 41, lease: { leaseId: b.leaseId, holder: 'B', expiresAt: T + 1 + TTL, requestId: null } };
      assert.deepEqual(await h.issuer().current(S), issuedToB);
      assert.deepEqual(await h.issuer().renew({ scope: S, leaseId: a.leaseId, holder: 'A', ttlMs: 10 * TTL, now: T + 1 }), {
        ok: false, code: 'LEASE_NOT_HELD', scope: S,
      });
      assert.deepEqual(await h.issuer().release({ scope: S, leaseId: a.leaseId, holder: 'A' }), { ok: false, code: 'LEASE_NOT_HELD', scope: S });
      // Nor with B's name on A's id, or A's name on B's id.
      assert.equal((await h.issuer().renew({ scope: S, leaseId: a.leaseId, holder: 'B', ttlMs: TTL, now: T + 1 })).code, 'LEASE_NOT_HELD');
      assert.equal((await h.issuer().release({ scope: S, leaseId: b.leaseId, holder: 'A' })).code, 'LEASE_NOT_HELD');
      assert.deepEqual(await h.issuer().current(S), issuedToB);
      // Detected: B cannot become the owner of 41 at the resource; A keeps writing.
      const g = h.gate();
      assert.deepEqual(await g.establish('k', b.epoch, { holder: b.holder }), {
        key: 'k', ok: false, outcome: 'reject', code: 'EPOCH_CONFLICT', token: 41, markBefore: 41, markAfter: 41,
      });
      assert.equal((await g.write('k', b.epoch, 'b1', { holder: b.holder })).code, 'EPOCH_CONFLICT');
      assert.equal((await g.write('k', a.epoch, 'a2', { holder: a.holder })).outcome, 'accept');
      assert.deepEqual(await g.read('k'), { mark: 41, value: 'a2', hasValue: true });

      const report = await run(h, { [S]: ['k'] }, T + 2);
      assert.deepEqual(report.changes, [
        { scope: S, target: 'issuer', action: 'raise+revoke', epochBefore: 41, epochAfter: 41, revoked: { holder: 'B', epoch: 41 } },
      ]);
      assert.deepEqual(report.scopes[0].conflicts, [{ key: 'k', epoch: 41, resourceHolder: 'A', leaseHolder: 'B', live: true }]);
      const again = await run(h, { [S]: ['k'] }, T + 3);
      assert.deepEqual([again.changed, again.changes], [false, []]);

      const issuer = h.issuer();
      assert.equal((await issuer.renew({ scope: S, leaseId: b.leaseId, holder: b.holder, ttlMs: TTL, now: T + 3 })).code, 'LEASE_EXPIRED');
      const c = await acquire(issuer, 'C', T + 4);
      assert.equal(c.epoch, 42);
      assert.equal((await g.establish('k', c.epoch, { holder: c.holder })).outcome, 'advance');
      assert.equal((await g.write('k', a.epoch, 'a3', { holder: a.holder })).code, 'STALE_TOKEN');
      assert.deepEqual(await g.read('k'), { mark: 42, value: 'a2', hasValue: true });
    } finally {
      await h.close();
    }
  });

  test(`${target.name}: two issuers restored from one backup each grant 1,000 leases on one scope: the epochs repeat, the 2,000 lease ids do not`, async () => {
    const h = await target.open();
    try {
      await h.issuer().raise({ scope: S, atLeast: 40, now: T });
      const backup = await h.issuerSide.backup();
      const ids = new Set();
      for (const copy of ['X', 'Y']) {
        await h.issuerSide.restore(backup);
        const issuer = h.issuer();
        for (let i = 0; i < 1000; i++) {
          // ttlMs 1: each lease has ended when the next acquisition comes.
          const l = await issuer.acquire({ scope: S, holder: copy, ttlMs: 1, now: T + i });
          assert.deepEqual([l.ok, l.epoch], [true, 41 + i]);
          ids.add(l.leaseId);
        }
      }
      assert.equal(ids.size, 2000);
      for (const id of ids) assert.match(id, /^\d+\.[A-Za-z0-9_-]{30}$/);
    } finally {
      await h.close();
    }
  });

  test(`${target.name}: issuer restored alone — mark 1200, the restored issuer hands out 1150: rejected, mark stays; reconcile raises to 1200`, async () => {
    const h = await target.open();
    try {
      await h.issuer().raise({ scope: S, atLeast: 1149, now: T });
      const old = await h.issuerSide.backup();
      await h.issuer().raise({ scope: S, atLeast: 1199, now: T });
      const a = await acquire(h.issuer(), 'A', T);
      assert.equal(a.epoch, 1200);
      await h.gate().establish('k', a.epoch, { holder: a.holder });
      await h.issuerSide.restore(old);
      const b = await acquire(h.issuer(), 'B', T + 1);
      assert.equal(b.epoch, 1150);
      const v = await h.gate().write('k', b.epoch, 'b', { holder: b.holder });
      assert.deepEqual([v.code, v.markBefore, v.markAfter], ['STALE_TOKEN', 1200, 1200]);
      const report = await run(h, { [S]: ['k'] }, T + 2);
      assert.deepEqual(report.changes, [
        { scope: S, target: 'issuer', action: 'raise+revoke', epochBefore: 1150, epochAfter: 1200, revoked: { holder: 'B', epoch: 1150 } },
      ]);
      assert.equal(await h.gate().mark('k'), 1200); // nothing lowered it to "resynchronise"
      assert.equal((await run(h, { [S]: ['k'] }, T + 3)).changed, false);
      assert.equal((await acquire(h.issuer(), 'C', T + 4)).epoch, 1201);
    } finally {
      await h.close();
    }
  });

  test(`${target.name}: resource restored alone — a live owner is bound again, older epochs refused`, async () => {
    const h = await target.open();
    try {
      const issuer = h.issuer();
      const gate = h.gate();
      const a = await acquire(issuer, 'A', T);
      await gate.establish('k', a.epoch, { holder: a.holder });
      await gate.write('k', a.epoch, 'a', { holder: a.holder });
      const resourcesAt1 = await h.resourceSide.backup();
      await issuer.release({ scope: S, leaseId: a.leaseId, holder: a.holder });
      const b = await acquire(issuer, 'B', T + 1);
      await h.gate().establish('k', b.epoch, { holder: b.holder });
      await issuer.release({ scope: S, leaseId: b.leaseId, holder: b.holder });
      const c = await acquire(issuer, 'C', T + 2);
      assert.equal(c.epoch, 3);
      await h.gate().write('k', c.epoch, 'c', { holder: c.holder });

      await h.resourceSide.restore(resourcesAt1);
      const g = h.gate();
      assert.deepEqual(await g.read('k'), { mark: 1, value: 'a', hasValue: true });
      // The danger before reconcile: B's late write (epoch 2) is accepted again.
      assert.equal((await g.write('k', b.epoch, 'late b', { holder: b.holder })).outcome, 'advance');

      const report = await run(h, { [S]: ['k'] }, T + 3);
      assert.deepEqual(report.changes, [
        { scope: S, target: 'resource', key: 'k', action: 'establish', markBefore: 2, markAfter: 3, holder: 'C' },
      ]);
      assert.equal((await run(h, { [S]: ['k'] }, T + 4)).changed, false);
      assert.equal((await g.write('k', b.epoch, 'late b again', { holder: b.holder })).code, 'STALE_TOKEN');
      assert.equal((await g.write('k', c.epoch, 'c2', { holder: c.holder })).outcome, 'accept'); // the live owner keeps working
      assert.deepEqual(await g.inspect('k'), { key: 'k', exists: true, mark: 3, holder: 'C', quarantine: null });
    } finally {
      await h.close();
    }
  });

  test(`${target.name}: resource state lost while the issuer is at 9 — after reconcile tokens ≤ 9 are QUARANTINED until 10 is established`, async () => {
    const h = await target.open();
    try {
      await h.issuer().raise({ scope: S, atLeast: 8, now: T });
      const a = await acquire(h.issuer(), 'A', T);
      assert.equal(a.epoch, 9);
      await h.gate().write('k', a.epoch, 'a', { holder: a.holder });
      await h.issuer().release({ scope: S, leaseId: a.leaseId, holder: a.holder });
      await h.resourceSide.lose('k');
      const g = h.gate();
      assert.deepEqual(await g.inspect('k'), { key: 'k', exists: false, mark: 0, holder: null, quarantine: null });

      const report = await run(h, { [S]: ['k'] }, T + 1);
      assert.deepEqual(report.changes, [
        { scope: S, target: 'resource', key: 'k', action: 'quarantine', markBefore: 0, markAfter: 9, floor: 9 },
      ]);
      assert.equal((await run(h, { [S]: ['k'] }, T + 2)).changed, false);
      for (const t of [9, 5, 1]) {
        const v = await g.write('k', t, 'old', { holder: a.holder });
        assert.deepEqual([v.code, v.markAfter], ['QUARANTINED', 9]);
        assert.equal((await g.establish('k', t)).code, 'QUARANTINED');
      }
      const d = await acquire(h.issuer(), 'D', T + 3);
      assert.equal(d.epoch, 10);
      assert.equal((await g.establish('k', d.epoch, { holder: d.holder })).outcome, 'advance');
      assert.equal((await g.write('k', d.epoch, 'd', { holder: d.holder })).outcome, 'accept');
      assert.deepEqual(await g.inspect('k'), { key: 'k', exists: true, mark: 10, holder: 'D', quarantine: null });
    } finally {
      await h.close();
    }
  });

  test(`${target.name}: both restored to different points — issuer newer than resources: keys quarantined at the issuer's epoch`, async () => {
    const h = await target.open();
    try {
      const keys = ['k1', 'k2'];
      const backups = await leases(h, 7, (e) => (e === 7 ? ['k1'] : keys), { resourceSide: 2, issuerSide: 5 });
      await h.issuerSide.restore(backups.issuerSide);
      await h.resourceSide.restore(backups.resourceSide);
      const g = await quarantines(h, keys, T + 100, 2, 5, [5, 'old 5', 'H5']);
      const n = await acquire(h.issuer(), 'N', T + 102);
      assert.equal(n.epoch, 6);
      for (const k of keys) assert.equal((await g.establish(k, n.epoch, { holder: n.holder })).outcome, 'advance');
    } finally {
      await h.close();
    }
  });

  test(`${target.name}: both restored to different points — issuer older than resources: raise past the lost epochs, then reconcile`, async () => {
    const h = await target.open();
    try {
      const keys = ['k1', 'k2'];
      const backups = await leases(h, 6, () => keys, { issuerSide: 2, resourceSide: 4 });
      await h.issuerSide.restore(backups.issuerSide);
      await h.resourceSide.restore(backups.resourceSide);
      // What reconcile alone can see: marks 4, issuer 2 → the issuer is raised to 4.
      const dry = await reconcile({ issuer: h.issuer(), gate: h.gate(), scopes: { [S]: keys }, now: T + 100, dryRun: true });
      assert.deepEqual(dry.changes, [
        { scope: S, target: 'issuer', action: 'raise', epochBefore: 2, epochAfter: 4, revoked: null },
      ]);
      assert.equal((await h.issuer().current(S)).epoch, 2); // a dry run writes nothing
      // Epochs 5 and 6 were issued after both backups: no store remembers them.
      // The procedure (docs/restore.md): raise the issuer past every epoch that
      // may have been issued since the issuer's backup (here: a margin of 100),
      // then reconcile carries that floor to every resource.
      await h.issuer().raise({ scope: S, atLeast: 2 + 100, now: T + 100 });
      await quarantines(h, keys, T + 101, 4, 102, [6, 'lost epoch 6', 'H6']);
      const n = await acquire(h.issuer(), 'N', T + 103);
      assert.equal(n.epoch, 103);
    } finally {
      await h.close();
    }
  });
}
