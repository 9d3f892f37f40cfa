// The issuer over every host store of tests/js/issuer/open-store.mjs (a file
// compare-and-set store always; SQLite, Redis and PostgreSQL through the
// package's adapters when present), with faults injected around the real
// store: throws before commit, throws after commit, never answers, answers late.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Issuer, Gate } from '../../../pkg/node.mjs';
import { openStore, storeSpecs } from './open-store.mjs';
import { FaultyStore } from './stores.mjs';
import { leaseIdOf } from './lease-id.mjs';

const tmpdir = (name) => fs.mkdtempSync(path.join(os.tmpdir(), `fencegate-${name}-`));
const unique = (name) => `${name}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;

for (const spec of await storeSpecs(tmpdir)) {
  test(`${spec.name}: acquire/renew/release, LEASE_HELD, strict stored state, gate scene`, async () => {
    const { store, close } = await openStore(spec.store);
    try {
      const issuer = new Issuer(store);
      const scope = unique('basic');
      const a = await issuer.acquire({ scope, holder: 'A', ttlMs: 100, now: 1000, requestId: 'r' });
      assert.deepEqual([a.ok, a.epoch, a.expiresAt], [true, 1, 1100]);
      assert.match(a.leaseId, leaseIdOf(1, scope));
      assert.equal((await issuer.acquire({ scope, holder: 'B', ttlMs: 100, now: 1099 })).code, 'LEASE_HELD');
      assert.equal((await issuer.renew({ scope, leaseId: a.leaseId, holder: 'A', ttlMs: 100, now: 1050 })).expiresAt, 1150);
      assert.deepEqual(await issuer.current(scope), {
        scope, epoch: 1, lease: { leaseId: a.leaseId, holder: 'A', expiresAt: 1150, requestId: 'r' },
      });
      // A gate over the same store: the issuer's records and the resource's side by side.
      const gate = new Gate(store);
      const res = unique('res');
      assert.equal((await gate.write(res, a.epoch, 'A')).outcome, 'advance');
      const b = await issuer.acquire({ scope, holder: 'B', ttlMs: 100, now: 1150 });
      assert.equal(b.epoch, 2);
      assert.equal((await gate.establish(res, b.epoch)).outcome, 'advance');
      assert.equal((await gate.write(res, a.epoch, 'late A')).code, 'STALE_TOKEN');
      assert.deepEqual(await gate.read(res), { mark: 2, value: 'A', hasValue: true });
      assert.equal((await issuer.current(scope)).epoch, 2);
      assert.equal((await issuer.renew({ scope, leaseId: a.leaseId, holder: 'A', ttlMs: 100, now: 1151 })).code, 'LEASE_EXPIRED');
      assert.equal((await issuer.release({ scope, leaseId: b.leaseId, holder: 'A' })).code, 'LEASE_NOT_HELD');
      assert.equal((await issuer.release({ scope, leaseId: b.leaseId, holder: 'B' })).released, true);
      assert.equal((await issuer.acquire({ scope, holder: 'A', ttlMs: 100, now: 1152 })).epoch, 3);
    } finally {
      await close();
    }
  });

  test(`${spec.name}: the bump to 42 fails before commit; the next acquire returns 42`, async () => {
    const { store, close } = await openStore(spec.store);
    try {
      const scope = unique('before');
      const faulty = new FaultyStore(store, []);
      const issuer = new Issuer(faulty);
      await issuer.raise({ scope, atLeast: 41, now: 0 });
      faulty.plan.push('throw-before');
      await assert.rejects(issuer.acquire({ scope, holder: 'A', ttlMs: 100, now: 0 }), { code: 'STORE_ERROR' });
      assert.deepEqual(await issuer.current(scope), { scope, epoch: 41, lease: null });
      assert.equal((await issuer.acquire({ scope, holder: 'B', ttlMs: 100, now: 1 })).epoch, 42);
    } finally {
      await close();
    }
  });

  test(`${spec.name}: issued 1, 2, 3; the store throws after committing 4; same request id → 4; another holder after expiry → 5`, async () => {
    const { store, close } = await openStore(spec.store);
    try {
      const scope = unique('after');
      const faulty = new FaultyStore(store, []);
      const issuer = new Issuer(faulty);
      for (let i = 1; i <= 3; i++) {
        const g = await issuer.acquire({ scope, holder: 'A', ttlMs: 100, now: i });
        assert.equal(g.epoch, i);
        await issuer.release({ scope, leaseId: g.leaseId, holder: 'A' });
      }
      faulty.plan.push('throw-after');
      await assert.rejects(issuer.acquire({ scope, holder: 'A', ttlMs: 100, now: 10, requestId: 'r4' }), { code: 'STORE_ERROR' });
      const retry = await issuer.acquire({ scope, holder: 'A', ttlMs: 100, now: 11, requestId: 'r4' });
      assert.deepEqual([retry.epoch, retry.replayed], [4, true]);
      assert.equal((await issuer.acquire({ scope, holder: 'B', ttlMs: 100, now: 109 })).code, 'LEASE_HELD');
      assert.equal((await issuer.acquire({ scope, holder: 'B', ttlMs: 100, now: 110 })).epoch, 5);
    } finally {
      await close();
    }
  });

  test(`${spec.name}: never answers → COMMIT_UNKNOWN; a late commit is found by the same request id`, async () => {
    const { store, close } = await openStore(spec.store);
    try {
      const scope = unique('hang');
      const faulty = new FaultyStore(store, ['hang', 'hang-then-write'], { lateMs: 50 });
      const issuer = new Issuer(faulty, { commitTimeoutMs: 25 });
      await assert.rejects(issuer.acquire({ scope, holder: 'A', ttlMs: 1000, now: 0, requestId: 'a' }), { code: 'COMMIT_UNKNOWN' });
      assert.deepEqual(await issuer.current(scope), { scope, epoch: 0, lease: null });
      await assert.rejects(issuer.acquire({ scope, holder: 'A', ttlMs: 1000, now: 1, requestId: 'a' }), { code: 'COMMIT_UNKNOWN' });
      await Promise.all(faulty.late);
      assert.equal((await issuer.current(scope)).epoch, 1);
      const retry = await issuer.acquire({ scope, holder: 'A', ttlMs: 1000, now: 2, requestId: 'a' });
      assert.deepEqual([retry.epoch, retry.replayed, retry.expiresAt], [1, true, 1001]);
      assert.equal((await issuer.acquire({ scope, holder: 'B', ttlMs: 1000, now: 3 })).code, 'LEASE_HELD');
    } finally {
      await close();
    }
  });
}
