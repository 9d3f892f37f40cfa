// A bank-transfer race on real Redis keys: 4 processes (2 ioredis, 2 node-redis; state
// cache on in two) move money between two keys through Gate.transaction on one resource
// key with mixed current and stale tokens. Afterwards: the sum is unchanged, every
// acknowledged transfer is in the log exactly once, no refused or failed one is, and the
// log's tokens never go down (no transfer ran with a token below one already applied).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { REDIS_URL, REQUIRE_SERVICES, redisClient } from '../stores/targets.mjs';

const skip = !REDIS_URL && !REQUIRE_SERVICES && 'FENCEGATE_REDIS_URL is not set (scripts/with-services.sh)';
const WORKER = fileURLToPath(new URL('./redis-race-worker.mjs', import.meta.url));

test('Redis own data: 4 processes, mixed stale/current tokens: sum unchanged, no stale transfer, each acknowledged one exactly once', { skip }, async () => {
  const plain = await redisClient();
  const prefix = `fg-race-${process.pid}:`;
  const [A, B, LOG] = [`${prefix}a`, `${prefix}b`, `${prefix}log`];
  await plain.set(A, 1000);
  await plain.set(B, 1000);
  try {
    const specs = [['ioredis', 0], ['ioredis', 256], ['node-redis', 0], ['node-redis', 256]];
    const workers = specs.map(([client, cache], i) => fork(WORKER, [client, prefix, String(7919 * (i + 1)), '40', String(cache)], { stdio: 'inherit' }));
    const results = workers.map((w) => new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); }));
    await new Promise((r) => setTimeout(r, 1500)); // all connected
    for (const w of workers) w.send('go');
    const all = (await Promise.all(results)).flat();
    assert.equal(all.length, 160);
    const log = await plain.lrange(LOG, 0, -1);
    const logged = log.map((x) => x.split(':'));
    const applied = all.filter((r) => r.ok && (r.outcome === 'advance' || r.outcome === 'accept'));
    const refused = all.filter((r) => !r.ok);
    assert.ok(applied.length > 0 && refused.some((r) => r.code === 'STALE_TOKEN'), `applied ${applied.length}, refused ${refused.length}`);
    // every acknowledged transfer exactly once, and nothing else
    assert.deepEqual(logged.map(([, op]) => op).sort(), applied.map((r) => r.opId).sort());
    assert.equal(new Set(logged.map(([, op]) => op)).size, log.length);
    for (const r of refused) assert.ok(['STALE_TOKEN', 'COMMIT_CONFLICT'].includes(r.code), JSON.stringify(r));
    // tokens in the order the transfers ran never go down: no stale token ran after a higher one
    for (let i = 1; i < logged.length; i++) assert.ok(Number(logged[i][0]) >= Number(logged[i - 1][0]), `log ${i}: ${log[i - 1]} then ${log[i]}`);
    assert.equal(Number(await plain.get(A)) + Number(await plain.get(B)), 2000);
    console.log(`race: ${applied.length} applied, ${refused.filter((r) => r.code === 'STALE_TOKEN').length} stale refused, ${refused.filter((r) => r.code === 'COMMIT_CONFLICT').length} conflicts`);
  } finally {
    await plain.del(A, B, LOG, `${prefix}fence:bank`);
    plain.disconnect();
  }
});
