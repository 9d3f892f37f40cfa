// Runs the examples in docs/stores.md (blocks starting with `// example: NAME`)
// against the built package through its exports map, and checks each
// `console.log(...); // expected` line's output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { REDIS_URL, PG_URL, MYSQL_URL, ETCD_URLS } from './targets.mjs';
import { runExample, expectedOutput } from '../docs/doc-project.mjs';
import { bundleWorker, miniflare } from '../workerd.mjs';
import { docBlocks } from '../../doc-blocks.mjs';

const examples = docBlocks('docs/stores.md', { lang: 'js' }).filter((b) => b.label?.startsWith('example: ')).map((b) => ({ name: b.label.slice(9), code: b.code }));
const noRedis = REDIS_URL ? false : 'FENCEGATE_REDIS_URL is not set';
const noPg = PG_URL ? false : 'FENCEGATE_PG_URL is not set';
const noEtcd = ETCD_URLS ? false : 'FENCEGATE_ETCD_URLS is not set';
const needs = {
  redis: noRedis,
  node_redis: noRedis,
  postgres: noPg,
  postgres_js: noPg,
  mysql: MYSQL_URL ? false : 'FENCEGATE_MYSQL_URL is not set',
  etcd: noEtcd,
  etcdlock: noEtcd,
  indexeddb: 'runs in Chromium: tests/browser/indexeddb.test.mjs',
  s3: process.env.FENCEGATE_S3_URL ? false : 'FENCEGATE_S3_URL is not set',
};

test('docs/stores.md has the adapter and client examples, the etcd lock one and the values one', () => {
  assert.deepEqual(examples.map((e) => e.name), [
    'sqlite', 'bun_sqlite', 'redis', 'node_redis', 'postgres', 'postgres_js', 'mysql', 'etcd', 'etcdlock', 'durable-object', 'indexeddb', 'deno_kv', 's3', 'values',
  ]);
});

for (const { name, code } of examples.filter((e) => e.name !== 'durable-object')) {
  test(`docs/stores.md example: ${name} (as printed, in a fresh project)`, { skip: needs[name] }, () => {
    const out = runExample(code, { runtime: { deno_kv: 'deno', bun_sqlite: 'bun' }[name] ?? 'node' });
    assert.deepEqual(out.trim().split('\n'), expectedOutput(code));
  });
}

/** `// $ curl [-X M] [-H 'h: v'] [-d body] URL` then `// <answer>`: sent to the Worker in workerd. */
test('docs/stores.md example: durable-object, the Worker as printed in workerd, with the curl answers it shows', async () => {
  const code = examples.find((e) => e.name === 'durable-object').code;
  const worker = await bundleWorker({ source: code }, 'doc-do');
  const mf = await miniflare(worker, { durableObjects: { RESOURCES: 'FencedResource' } });
  try {
    const lines = code.split('\n');
    let n = 0;
    for (const [i, line] of lines.entries()) {
      const m = line.match(/^\/\/ \$ curl (.*)$/);
      if (!m) continue;
      const words = m[1].match(/'[^']*'|\S+/g).map((w) => w.replace(/^'|'$/g, ''));
      let method = 'GET';
      const headers = {};
      let body;
      let url;
      for (let j = 0; j < words.length; j++) {
        if (words[j] === '-X') method = words[++j];
        else if (words[j] === '-H') {
          const [h, v] = words[++j].split(/:\s*/);
          headers[h] = v;
        } else if (words[j] === '-d') body = words[++j];
        else url = words[j];
      }
      const r = await mf.dispatchFetch(url, { method, headers, body });
      assert.equal(await r.text(), lines[i + 1].replace(/^\/\/ /, ''), line);
      n++;
    }
    assert.equal(n, 3);
  } finally {
    await mf.dispose();
    rmSync(worker.dir, { recursive: true, force: true });
  }
});
