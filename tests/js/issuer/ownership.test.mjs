// Issue 20 (lease identity) and issue 13 item 2 (a request id reused with
// other arguments), over every host store of tests/js/issuer/open-store.mjs:
// memory, file compare-and-set, and SQLite, Redis and PostgreSQL through the
// package's adapters (FENCEGATE_REDIS_URL / FENCEGATE_PG_URL from
// scripts/with-services.sh). Every refusal is checked to write nothing: the
// store is wrapped and its writes counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Issuer } from '../../../pkg/node.mjs';
import { openStore, storeSpecs } from './open-store.mjs';
import { leaseIdOf, scopeTag } from './lease-id.mjs';

const T = 1_700_000_000_000;
const tmpdir = (name) => fs.mkdtempSync(path.join(os.tmpdir(), `fencegate-${name}-`));
const unique = (name) => `${name}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;

/** The store as the issuer drives it, counting the writes that reach it. */
function counting(store) {
  const c = { writes: 0 };
  if (typeof store.transaction === 'function') {
    c.store = {
      transaction: (key, fn) =>
        store.transaction(key, (state) => {
          const out = fn(state);
          if (out !== null) c.writes += 1;
          return out;
        }),
      load: (key) => store.load(key),
    };
  } else {
    c.store = {
      load: (key) => store.load(key),
      commit: async (...args) => {
        c.writes += 1;
        return store.commit(...args);
      },
    };
  }
  return c;
}

/** The stored issuer record of `scope` as an object (stores keep text or objects). */
async function stored(store, scope) {
  const r = await store.load(`issuer:${scope}`);
  return r === null ? null : typeof r.state === 'string' ? JSON.parse(r.state) : r.state;
}

/** Writes `state` as the record of `scope`, as an older fencegate would have. */
async function put(store, scope, state) {
  const key = `issuer:${scope}`;
  if (typeof store.transaction === 'function') {
    await store.transaction(key, () => ({ nextState: state, change: { kind: 'none' } }));
  } else {
    const r = await store.load(key);
    assert.equal(await store.commit(key, r === null ? null : r.version, state, { kind: 'none' }), true);
  }
}

const NOT_HELD = (scope) => ({ ok: false, code: 'LEASE_NOT_HELD', scope });

for (const spec of await storeSpecs(tmpdir)) {
  test(`${spec.name}: the issue's three lines — a guessed id or another holder's name is refused and changes nothing; A's own renew and release work`, async () => {
    const { store, close } = await openStore(spec.store);
    try {
      const c = counting(store);
      const is = new Issuer(c.store);
      const s = unique('s');
      const a = await is.acquire({ scope: s, holder: 'A', ttlMs: 1000, now: 0 });
      assert.match(a.leaseId, leaseIdOf(1, s));
      assert.ok(a.leaseId.length <= 51 && /^[0-9A-Za-z._-]+$/.test(a.leaseId));
      const record = await stored(store, s);
      assert.deepEqual(record, { v: 2, epoch: '1', lease: { id: a.leaseId, holder: 'A', expiresAt: '1000', ttlMs: '1000', requestId: null } });
      const writes = c.writes;
      const flip = (ch) => (ch === 'A' ? 'B' : 'A');
      const guessed = [
        `${s}#1`, // the derived id of format 1: what the issue guessed
        `1.${scopeTag(s)}${'A'.repeat(22)}`,
        a.leaseId.slice(0, -1) + flip(a.leaseId.at(-1)),
        a.leaseId.slice(0, -1),
        `${a.leaseId}A`,
        a.leaseId.toLowerCase() === a.leaseId ? a.leaseId.toUpperCase() : a.leaseId.toLowerCase(),
        '1',
      ];
      for (const leaseId of guessed) {
        for (const holder of ['A', 'B']) {
          assert.deepEqual(await is.renew({ scope: s, leaseId, holder, ttlMs: 1000, now: 900 }), NOT_HELD(s), leaseId);
          assert.deepEqual(await is.release({ scope: s, leaseId, holder }), NOT_HELD(s), leaseId);
        }
      }
      for (const holder of ['B', 'a', 'A ']) {
        assert.deepEqual(await is.renew({ scope: s, leaseId: a.leaseId, holder, ttlMs: 1000, now: 900 }), NOT_HELD(s));
        assert.deepEqual(await is.release({ scope: s, leaseId: a.leaseId, holder }), NOT_HELD(s));
      }
      assert.equal(c.writes, writes);
      assert.deepEqual(await stored(store, s), record);

      assert.deepEqual(await is.renew({ scope: s, leaseId: a.leaseId, holder: 'A', ttlMs: 1000, now: 900 }), {
        ok: true, code: null, scope: s, epoch: 1, leaseId: a.leaseId, holder: 'A', expiresAt: 1900, requestId: null,
      });
      assert.deepEqual(await is.release({ scope: s, leaseId: a.leaseId, holder: 'A' }), { ok: true, code: null, scope: s, released: true, epoch: 1 });
      assert.deepEqual(await stored(store, s), { v: 2, epoch: '1', lease: null });
      // Once released, A's id names a lease that is over: LEASE_EXPIRED / released: false, whoever asks.
      assert.deepEqual(await is.renew({ scope: s, leaseId: a.leaseId, holder: 'B', ttlMs: 1000, now: 950 }), { ok: false, code: 'LEASE_EXPIRED', scope: s, epoch: 1 });
      assert.deepEqual(await is.release({ scope: s, leaseId: a.leaseId, holder: 'A' }), { ok: true, code: null, scope: s, released: false, epoch: 1 });
    } finally {
      await close();
    }
  });

  test(`${spec.name}: a v1 record with a derived id and a live lease is renewed and released by its holder after the upgrade; the first acquisition writes v2`, async () => {
    const { store, close } = await openStore(spec.store);
    try {
      const s = unique('v1');
      const v1 = { v: 1, epoch: '7', lease: { holder: 'A', expiresAt: String(T + 1000), requestId: 'r-7' } };
      await put(store, s, v1);
      const c = counting(store);
      const is = new Issuer(c.store);
      assert.deepEqual(await is.current(s), { scope: s, epoch: 7, lease: { leaseId: `${s}#7`, holder: 'A', expiresAt: T + 1000, requestId: 'r-7' } });
      // Nobody else: another holder, or a guessed v2 id.
      assert.deepEqual(await is.renew({ scope: s, leaseId: `${s}#7`, holder: 'B', ttlMs: 5000, now: T }), NOT_HELD(s));
      assert.deepEqual(await is.release({ scope: s, leaseId: `${s}#7`, holder: 'B' }), NOT_HELD(s));
      assert.deepEqual(await is.renew({ scope: s, leaseId: `7.${scopeTag(s)}${'A'.repeat(22)}`, holder: 'A', ttlMs: 5000, now: T }), NOT_HELD(s));
      assert.equal(c.writes, 0);
      // The same request id replays (the v1 record has no ttl to compare); another holder's is refused.
      assert.equal((await is.acquire({ scope: s, holder: 'A', ttlMs: 60_000, now: T, requestId: 'r-7' })).replayed, true);
      assert.deepEqual(await is.acquire({ scope: s, holder: 'B', ttlMs: 1000, now: T, requestId: 'r-7' }), { ok: false, code: 'REQUEST_ID_REUSED', scope: s });
      assert.equal(c.writes, 0);
      // Its holder renews: same id, and the record stays format 1.
      assert.deepEqual(await is.renew({ scope: s, leaseId: `${s}#7`, holder: 'A', ttlMs: 5000, now: T + 500 }), {
        ok: true, code: null, scope: s, epoch: 7, leaseId: `${s}#7`, holder: 'A', expiresAt: T + 5500, requestId: 'r-7',
      });
      assert.deepEqual(await stored(store, s), { v: 1, epoch: '7', lease: { holder: 'A', expiresAt: String(T + 5500), requestId: 'r-7' } });
      assert.deepEqual(await is.release({ scope: s, leaseId: `${s}#7`, holder: 'A' }), { ok: true, code: null, scope: s, released: true, epoch: 7 });
      assert.deepEqual(await stored(store, s), { v: 2, epoch: '7', lease: null });
      const n = await is.acquire({ scope: s, holder: 'N', ttlMs: 1000, now: T + 600 });
      assert.equal(n.epoch, 8);
      assert.match(n.leaseId, leaseIdOf(8, s));
      assert.deepEqual(await stored(store, s), { v: 2, epoch: '8', lease: { id: n.leaseId, holder: 'N', expiresAt: String(T + 1600), ttlMs: '1000', requestId: null } });
      // The old derived id now names an older epoch: over.
      assert.deepEqual(await is.renew({ scope: s, leaseId: `${s}#7`, holder: 'A', ttlMs: 5000, now: T + 700 }), { ok: false, code: 'LEASE_EXPIRED', scope: s, epoch: 8 });
    } finally {
      await close();
    }
  });

  test(`${spec.name}: a v1 lease that lapsed is replaced by the first acquisition in format 2`, async () => {
    const { store, close } = await openStore(spec.store);
    try {
      const s = unique('v1-lapsed');
      await put(store, s, { v: 1, epoch: '3', lease: { holder: 'A', expiresAt: '100', requestId: null } });
      const is = new Issuer(store);
      assert.deepEqual(await is.renew({ scope: s, leaseId: `${s}#3`, holder: 'A', ttlMs: 10, now: 100 }), { ok: false, code: 'LEASE_EXPIRED', scope: s, epoch: 3 });
      const b = await is.acquire({ scope: s, holder: 'B', ttlMs: 10, now: 100 });
      assert.equal(b.epoch, 4);
      assert.equal((await stored(store, s)).v, 2);
    } finally {
      await close();
    }
  });

  test(`${spec.name}: issue 13 item 2 — acquire with a reused requestId and other arguments is REQUEST_ID_REUSED and changes nothing; the same arguments replay`, async () => {
    const { store, close } = await openStore(spec.store);
    try {
      const c = counting(store);
      const is = new Issuer(c.store);
      const s = unique('rid');
      const first = await is.acquire({ scope: s, holder: 'A', ttlMs: 1000, now: T, requestId: 'req-1' });
      assert.equal(first.expiresAt, T + 1000);
      const record = await stored(store, s);
      const writes = c.writes;
      for (const now of [T + 10, T + 1000, T + 99_000]) {
        for (const [holder, ttlMs] of [['A', 60_000], ['A', 999], ['B', 1000], ['B', 60_000]]) {
          assert.deepEqual(await is.acquire({ scope: s, holder, ttlMs, now, requestId: 'req-1' }), { ok: false, code: 'REQUEST_ID_REUSED', scope: s });
        }
      }
      assert.equal(c.writes, writes);
      assert.deepEqual(await stored(store, s), record);
      // The same arguments replay as before: the first expiry, nothing written.
      assert.deepEqual(await is.acquire({ scope: s, holder: 'A', ttlMs: 1000, now: T + 20, requestId: 'req-1' }), { ...first, replayed: true });
      // A renewal changes the expiry, not the request's fingerprint.
      await is.renew({ scope: s, leaseId: first.leaseId, holder: 'A', ttlMs: 5000, now: T + 30 });
      assert.equal((await is.acquire({ scope: s, holder: 'A', ttlMs: 1000, now: T + 40, requestId: 'req-1' })).expiresAt, T + 5030);
      assert.equal((await is.acquire({ scope: s, holder: 'A', ttlMs: 5000, now: T + 40, requestId: 'req-1' })).code, 'REQUEST_ID_REUSED');
      assert.equal(c.writes, writes + 1);
    } finally {
      await close();
    }
  });
}
