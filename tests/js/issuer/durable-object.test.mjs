// The issuer inside a Cloudflare Durable Object (Miniflare runs real workerd),
// the object exactly as docs/issuer.md prints it:
// the DO's transactional storage is the host store (transaction shape), the
// package is bundled as wrangler would with the .wasm imported as a module, and
// the counter survives a restart of the runtime (persisted storage).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { docBlock } from '../../doc-blocks.mjs';
import { bundleWorker, miniflare } from '../workerd.mjs';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

// The Durable Object of docs/issuer.md, as printed, plus a Worker that routes to it.
const WORKER =
  docBlock('docs/issuer.md', 'example: durable-object') +
  `
export default {
  fetch(request, env) {
    return env.ISSUER.get(env.ISSUER.idFromName('issuer')).fetch(request);
  },
};
`;

test('Durable Object: acquire/renew/release over DO storage transactions; the counter survives a restart', async () => {
  const bundle = await bundleWorker({ source: WORKER }, 'issuer-do');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fencegate-do-'));
  const start = () => miniflare(bundle, { durableObjects: { ISSUER: 'IssuerObject' }, durableObjectsPersist: path.join(dir, 'do-data') });
  const call = async (mf, method, args) => (await mf.dispatchFetch('http://localhost/', { method: 'POST', body: JSON.stringify({ method, args }) })).json();

  let mf = await start();
  let b;
  try {
    const a = await call(mf, 'acquire', { scope: 'jobs', holder: 'A', ttlMs: 1000, now: 0, requestId: 'a1' });
    assert.match(a.leaseId, /^1\.XZoXy3C5[A-Za-z0-9_-]{21}[AQgw]$/); // drawn from workerd's crypto.getRandomValues
    assert.deepEqual(a, { ok: true, code: null, scope: 'jobs', epoch: 1, leaseId: a.leaseId, holder: 'A', expiresAt: 1000, requestId: 'a1', replayed: false });
    assert.equal((await call(mf, 'acquire', { scope: 'jobs', holder: 'B', ttlMs: 1000, now: 10 })).code, 'LEASE_HELD');
    assert.equal((await call(mf, 'acquire', { scope: 'jobs', holder: 'A', ttlMs: 1000, now: 20, requestId: 'a1' })).replayed, true);
    assert.deepEqual(await call(mf, 'renew', { scope: 'jobs', leaseId: 'jobs#1', holder: 'A', ttlMs: 1000, now: 500 }), { ok: false, code: 'LEASE_NOT_HELD', scope: 'jobs' });
    assert.equal((await call(mf, 'renew', { scope: 'jobs', leaseId: a.leaseId, holder: 'A', ttlMs: 1000, now: 500 })).expiresAt, 1500);
    assert.equal((await call(mf, 'release', { scope: 'jobs', leaseId: a.leaseId, holder: 'B' })).code, 'LEASE_NOT_HELD');
    assert.equal((await call(mf, 'release', { scope: 'jobs', leaseId: a.leaseId, holder: 'A' })).released, true);
    b = await call(mf, 'acquire', { scope: 'jobs', holder: 'B', ttlMs: 1000, now: 600 });
    assert.equal(b.epoch, 2);
    // Concurrent acquires into one object: exactly one is granted.
    const racing = await Promise.all(['C', 'D', 'E', 'F'].map((h) => call(mf, 'acquire', { scope: 'race', holder: h, ttlMs: 1000, now: 0 })));
    assert.deepEqual(racing.filter((r) => r.ok).map((r) => r.epoch), [1]);
    assert.equal(racing.filter((r) => r.code === 'LEASE_HELD').length, 3);
  } finally {
    await mf.dispose();
  }
  // A restart of the runtime: the epochs are in DO storage, not in memory.
  mf = await start();
  try {
    assert.deepEqual(await call(mf, 'current', 'jobs'), {
      scope: 'jobs', epoch: 2, lease: { leaseId: b.leaseId, holder: 'B', expiresAt: 1600, requestId: null },
    });
    assert.equal((await call(mf, 'acquire', { scope: 'jobs', holder: 'A', ttlMs: 1000, now: 1600 })).epoch, 3);
  } finally {
    await mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(bundle.dir, { recursive: true, force: true });
  }
});
