// Runs the examples in docs/stores.md (blocks starting with `// example: NAME`)
// against the built package through its exports map, and checks each
// `console.log(...); // expected` line's output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REDIS_URL, PG_URL, MYSQL_URL, ETCD_URLS } from './targets.mjs';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const doc = readFileSync(join(root, 'docs/stores.md'), 'utf8');
const examples = [...doc.matchAll(/```js\n\/\/ example: (\w+)\n([\s\S]*?)```/g)].map((m) => ({ name: m[1], code: m[2] }));
const noRedis = REDIS_URL ? false : 'FENCEGATE_REDIS_URL is not set';
const noPg = PG_URL ? false : 'FENCEGATE_PG_URL is not set';
const noEtcd = ETCD_URLS ? false : 'FENCEGATE_ETCD_URLS is not set';
const needs = { redis: noRedis, node_redis: noRedis, postgres: noPg, postgres_js: noPg, mysql: MYSQL_URL ? false : 'FENCEGATE_MYSQL_URL is not set', etcd: noEtcd, etcdlock: noEtcd };

test('docs/stores.md has the adapter and client examples, the etcd lock one and the values one', () => {
  assert.deepEqual(examples.map((e) => e.name), ['sqlite', 'redis', 'node_redis', 'postgres', 'postgres_js', 'mysql', 'etcd', 'etcdlock', 'values']);
});

for (const { name, code } of examples) {
  test(`docs/stores.md example: ${name}`, { skip: needs[name] }, () => {
    // inside the repo so ioredis/pg/better-sqlite3 resolve from its node_modules
    mkdirSync(join(root, 'build'), { recursive: true });
    const dir = mkdtempSync(join(root, 'build', 'docs-example-'));
    const data = mkdtempSync(join(tmpdir(), 'fencegate-doc-'));
    try {
      mkdirSync(join(dir, 'node_modules'));
      symlinkSync(join(root, 'pkg'), join(dir, 'node_modules', 'fencegate'), 'dir');
      writeFileSync(join(dir, 'example.mjs'), code);
      const out = execFileSync(process.execPath, ['example.mjs'], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, EXAMPLE_DIR: data },
      });
      const expected = code
        .split('\n')
        .filter((l) => l.startsWith('console.log(') && l.includes('// '))
        .map((l) => l.slice(l.lastIndexOf('// ') + 3).trim());
      assert.deepEqual(out.trim().split('\n'), expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(data, { recursive: true, force: true });
    }
  });
}

test('the Durable Object store in docs/stores.md is the one durable-object.test.mjs runs in workerd', () => {
  const squash = (t) => t.replace(/\/\/[^\n]*\n/g, '\n').replace(/\s+/g, ' ').trim();
  const block = doc.slice(doc.indexOf('**Durable Objects**')).match(/```js\n([\s\S]*?)```/)[1];
  const body = squash(block).replace(/^const gate = new Gate\(/, '').replace(/\);$/, '');
  const tested = squash(readFileSync(join(root, 'tests/js/stores/durable-object.test.mjs'), 'utf8'));
  assert.ok(tested.includes(`this.gate = new Gate(${body});`), body);
});
