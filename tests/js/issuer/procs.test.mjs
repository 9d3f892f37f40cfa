// The issuer across OS processes: a process killed between commit and reply,
// and ≥ 4 processes racing acquire/renew/release on the same scopes through a
// shared host store. Store kinds: a file-backed compare-and-set store (always),
// and real Redis / PostgreSQL when the adapters and servers are available
// (see tests/js/issuer/open-store.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Issuer } from '../../../pkg/node.mjs';
import { openStore, storeSpecs } from './open-store.mjs';
import { checkHistory } from './history.mjs';

const WORKER = fileURLToPath(new URL('./proc-worker.mjs', import.meta.url));
const T0 = 1_700_000_000_000;

function run(mode, config, { killAfterMs } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER, mode, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
    if (killAfterMs !== undefined) setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      // A killed process may leave half a line: keep the complete ones.
      const events = stdout.split('\n').filter(Boolean).flatMap((l) => {
        try {
          return [JSON.parse(l)];
        } catch {
          return [];
        }
      });
      resolve({ code, signal, events, stderr });
    });
  });
}

function tmpdir(name) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `fencegate-${name}-`));
}

for (const spec of await storeSpecs(tmpdir, { multiProcess: true })) {
  test(`${spec.name}: a process killed between commit and reply: no epoch for two holders, the counter never goes back`, async () => {
    const scope = `kill-${process.pid}-${Date.now()}`;
    const victim = await run('kill', { store: spec.store, scope, before: 3, ttlMs: 60_000, now: T0 });
    assert.equal(victim.signal, 'SIGKILL', victim.stderr);
    // What the victim actually received before it died: 1, 2, 3 — not 4.
    assert.deepEqual(victim.events.map((e) => e.epoch), [1, 2, 3]);

    const { store, close } = await openStore(spec.store);
    try {
      const issuer = new Issuer(store);
      const cur = await issuer.current(scope);
      assert.deepEqual([cur.epoch, cur.lease.holder, cur.lease.requestId], [4, 'victim', 'v-last']);
      // Epoch 4 is committed and belongs to the dead process's request: nobody else gets it.
      assert.equal((await issuer.acquire({ scope, holder: 'other', ttlMs: 1000, now: T0 + 1 })).code, 'LEASE_HELD');
      // The restarted holder retries its request and gets the same lease back.
      const again = await issuer.acquire({ scope, holder: 'victim', ttlMs: 60_000, now: T0 + 2, requestId: 'v-last' });
      assert.deepEqual([again.epoch, again.replayed, again.expiresAt], [4, true, T0 + 60_000]);
      const other = await issuer.acquire({ scope, holder: 'other', ttlMs: 1000, now: T0 + 60_000 });
      assert.equal(other.epoch, 5);
    } finally {
      await close();
    }
  });

  test(`${spec.name}: 4 processes race acquire/renew/release on 2 scopes with short leases; the history is safe`, async () => {
    const scopes = [`race-a-${process.pid}-${Date.now()}`, `race-b-${process.pid}-${Date.now()}`];
    const runs = await Promise.all(
      [0, 1, 2, 3].map((w) => run('race', { store: spec.store, w, scopes, ops: 150, ttlMs: 15, deadlineMs: 8000 })),
    );
    for (const r of runs) assert.equal(r.code, 0, r.stderr);
    const events = runs.flatMap((r) => r.events);
    const errors = events.filter((e) => e.op === 'error');
    // Only contention-related failures are acceptable, and they must be retried safely.
    for (const e of errors) assert.ok(['COMMIT_CONFLICT'].includes(e.code), `${e.code}: ${e.message}`);
    const summary = checkHistory(events, { contiguous: true });
    assert.ok(summary.grants >= 20, `only ${summary.grants} grants`);
    const kinds = new Set(events.filter((e) => e.ok).map((e) => e.op));
    for (const k of ['acquire', 'renew', 'release']) assert.ok(kinds.has(k), `no successful ${k}`);
    assert.ok(events.some((e) => e.code === 'LEASE_HELD'), 'no contention happened');
    const workers = new Set(events.filter((e) => e.op === 'acquire' && e.ok).map((e) => e.w));
    assert.equal(workers.size, 4);
  });

  test(`${spec.name}: 4 racing processes, 2 more killed (SIGKILL) mid-flight at random moments; the history is still safe`, async () => {
    const scopes = [`chaos-a-${process.pid}-${Date.now()}`, `chaos-b-${process.pid}-${Date.now()}`];
    const config = (w) => ({ store: spec.store, w, scopes, ops: 150, ttlMs: 15, deadlineMs: 8000 });
    const runs = await Promise.all([
      ...[0, 1, 2, 3].map((w) => run('race', config(w))),
      ...[4, 5].map((w) => run('race', config(w), { killAfterMs: 100 + Math.floor(Math.random() * 400) })),
    ]);
    for (const r of runs.slice(0, 4)) assert.equal(r.code, 0, r.stderr);
    const events = runs.flatMap((r) => r.events);
    for (const e of events.filter((e) => e.op === 'error')) assert.equal(e.code, 'COMMIT_CONFLICT', e.message);
    // Epochs a killed process committed but never reported are gaps, never repeats.
    const summary = checkHistory(events);
    assert.ok(summary.grants >= 20, `only ${summary.grants} grants`);
  });
}
