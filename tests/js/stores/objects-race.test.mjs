// Four OS processes race fenced writes of byte values on ONE S3 object (moto)
// with current and stale tokens, while this process GETs the object over and
// over; then (cache on, and off):
//   - the server's half: no two successful PUTs had one precondition;
//   - every GET shows a fenced object whose bytes are an accepted write's, and
//     whose mark is that write's token: no rejected write's bytes are ever visible;
//   - the marks seen never decrease;
//   - the advances form one chain from 0 and every other write is an accept at
//     the mark or STALE_TOKEN below it; no write fails;
//   - the final bytes are the last accepted write's (no accepted write started
//     after it ended), and the final mark is the largest accepted token.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { decodeObjectBody } from '../../../pkg/adapters/s3.mjs';
import { S3_URL, S3_BUCKET, s3Client, uniqueKey } from './targets.mjs';

const WORKERS = 4;
const OPS = 40;
const WORKER = new URL('./objects-race-worker.mjs', import.meta.url);

function spawn(config) {
  const child = fork(WORKER, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: ['--no-warnings'] });
  const ready = new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before it was ready`)));
  });
  const done = new Promise((resolve, reject) => {
    child.on('message', (m) => m.history && resolve(m));
    child.once('exit', (code) => code !== 0 && reject(new Error(`worker exited with ${code}`)));
  });
  child.send(config);
  return { child, ready, done };
}

describe('4 processes race one S3 object', { skip: !S3_URL && 'FENCEGATE_S3_URL is not set (scripts/with-services.sh)' }, () => {
  for (const [mode, stateCache] of [['cache on', undefined], ['cache off', 0]]) {
    test(`stale and current tokens (${mode}): no rejected bytes ever visible, the last accepted write's bytes stay`, async () => {
      const prefix = `${uniqueKey('orace')}/`;
      const key = 'manifest.json';
      const workers = [];
      for (let w = 0; w < WORKERS; w++) workers.push(spawn({ prefix, key, worker: w, ops: OPS, seed: 77 + w * 7919, stateCache }));
      await Promise.all(workers.map((w) => w.ready));
      const client = await s3Client();
      const seen = [];
      let racing = true;
      const poll = (async () => {
        while (racing) {
          try {
            const r = await client.getObject({ Bucket: S3_BUCKET, Key: prefix + key });
            seen.push({ etag: r.ETag, bytes: await r.Body.transformToByteArray() });
          } catch (e) {
            if (e.$metadata?.httpStatusCode !== 404) throw e;
          }
        }
      })();
      for (const w of workers) w.child.send('go');
      const reports = await Promise.all(workers.map((w) => w.done));
      const ops = reports.flatMap((r) => r.history);
      const puts = reports.flatMap((r) => r.puts);
      racing = false;
      await poll;
      const final = await client.getObject({ Bucket: S3_BUCKET, Key: prefix + key });
      const finalBody = decodeObjectBody(await final.Body.transformToByteArray());
      client.destroy();

      assert.equal(ops.length, WORKERS * OPS);
      // the server's half: no two PutObjects that succeeded had the same precondition (If-None-Match: * once,
      // each ETag matched at most once), and every ETag matched was one a PUT made
      const preconditions = puts.map((p) => p.precondition);
      assert.deepEqual(preconditions.filter((p, i) => preconditions.indexOf(p) !== i), [], 'the server let two conditional PUTs with one precondition both land');
      assert.equal(preconditions.filter((p) => p === '*').length, 1);
      const made = new Set(puts.map((p) => p.etag));
      assert.deepEqual(preconditions.filter((p) => p !== '*' && !made.has(p)), []);
      assert.deepEqual(ops.filter((o) => o.outcome === null), [], 'no write failed');
      const accepted = new Map(ops.filter((o) => o.outcome !== 'reject').map((o) => [o.id, o]));
      const rejected = ops.filter((o) => o.outcome === 'reject');
      assert.ok(rejected.length > 0 && accepted.size > 0, `${accepted.size} accepted, ${rejected.length} rejected`);
      for (const o of rejected) {
        assert.equal(o.code, 'STALE_TOKEN');
        assert.ok(o.token < o.markBefore && o.markBefore === o.markAfter);
      }
      for (const o of accepted.values()) {
        if (o.outcome === 'accept') assert.ok(o.token === o.markBefore && o.markAfter === o.token);
        else assert.ok(o.outcome === 'advance' && o.markBefore < o.token && o.markAfter === o.token);
      }
      const advances = [...accepted.values()].filter((o) => o.outcome === 'advance').sort((a, b) => a.markAfter - b.markAfter);
      let chain = 0;
      for (const o of advances) {
        assert.equal(o.markBefore, chain, `advance to ${o.markAfter} started from ${o.markBefore}`);
        chain = o.markAfter;
      }
      // what every GET showed
      assert.ok(seen.length > 10, `${seen.length} GETs`);
      let last = 0;
      for (const s of seen) {
        const body = decodeObjectBody(s.bytes);
        assert.notEqual(body, null, 'every GET shows a fenced object');
        const id = new TextDecoder().decode(body.value);
        const mark = Number(JSON.parse(body.state).mark);
        assert.ok(accepted.has(id), `GET showed ${id}, which was not an accepted write`);
        assert.equal(mark, accepted.get(id).token, `${id} is shown with mark ${mark}`);
        assert.ok(mark >= last, `the mark went from ${last} down to ${mark}`);
        last = mark;
      }
      // the final object
      const finalId = new TextDecoder().decode(finalBody.value);
      const f = accepted.get(finalId);
      assert.ok(f !== undefined, `final bytes ${finalId} are an accepted write's`);
      const max = Math.max(...[...accepted.values()].map((o) => o.token));
      assert.deepEqual([JSON.parse(finalBody.state).mark, f.token], [String(max), max]);
      for (const o of accepted.values()) assert.ok(o === f || o.start < f.end, `${o.id} was accepted and started after the final write ${finalId} ended`);
    });
  }
});
