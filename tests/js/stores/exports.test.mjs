// The adapters as a user reaches them: `fencegate/memory`, `/sqlite`, `/redis`,
// `/postgres`, `/mysql`, `/etcd`, `/s3` (and `/r2`, ES modules only) through the package's exports map, from ESM, CommonJS and
// TypeScript (node16 resolution), in a scratch project that links pkg/ as
// node_modules/fencegate.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
let dir;

before(() => {
  // inside the repo (build/ is git-ignored) so the clients resolve from its node_modules
  mkdirSync(join(root, 'build'), { recursive: true });
  dir = mkdtempSync(join(root, 'build', 'exports-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(join(root, 'pkg'), join(dir, 'node_modules', 'fencegate'), 'dir');
});
after(() => rmSync(dir, { recursive: true, force: true }));

const run = (file, source) => {
  writeFileSync(join(dir, file), source);
  return execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8' }).trim();
};

test('ESM: fencegate/sqlite works with Gate from fencegate', () => {
  const out = run(
    'esm.mjs',
    `import { Gate } from 'fencegate';
     import { SqliteStore } from 'fencegate/sqlite';
     import { RedisStore } from 'fencegate/redis';
     import { PostgresStore } from 'fencegate/postgres';
     import { MysqlStore, RETRY_ERRNOS } from 'fencegate/mysql';
     import { EtcdStore } from 'fencegate/etcd';
     import Database from 'better-sqlite3';
     const gate = new Gate(new SqliteStore(new Database(':memory:')));
     const v = await gate.write('k', 2n ** 60n, 'x');
     const stale = await gate.write('k', 2n ** 60n - 1n, 'y');
     console.log(JSON.stringify([v.outcome, String(v.markAfter), stale.code, (await gate.read('k')).value,
       typeof RedisStore, typeof PostgresStore, typeof MysqlStore, RETRY_ERRNOS, typeof EtcdStore]));`,
  );
  assert.equal(out, JSON.stringify(['advance', String(2n ** 60n), 'STALE_TOKEN', 'x', 'function', 'function', 'function', [1213, 1205, 1020], 'function']));
});

test('fencegate/memory is the main entry\'s MemoryHostStore, from ESM and from CommonJS', () => {
  const esm = run(
    'memory.mjs',
    `import { Gate, Issuer, MemoryHostStore as Main } from 'fencegate';
     import { MemoryHostStore } from 'fencegate/memory';
     const store = new MemoryHostStore();
     const gate = new Gate(store);
     const v = await gate.write('k', 3, 'x');
     const lease = await new Issuer(store).acquire({ scope: 's', holder: 'h', ttlMs: 10, now: 0 });
     console.log(JSON.stringify([MemoryHostStore === Main, v.outcome, (await gate.read('k')).value, lease.epoch, store.keys()]));`,
  );
  assert.equal(esm, JSON.stringify([true, 'advance', 'x', 1, ['issuer:s', 'k']]));
  const cjs = run(
    'memory.cjs',
    `const { Gate, MemoryHostStore: Main } = require('fencegate');
     const { MemoryHostStore } = require('fencegate/memory');
     const gate = new Gate(new MemoryHostStore());
     gate.write('k', 4, 'y').then((v) => console.log(JSON.stringify([MemoryHostStore === Main, v.outcome, v.markAfter])));`,
  );
  assert.equal(cjs, JSON.stringify([true, 'advance', 4]));
});

test('CommonJS: require("fencegate/sqlite") and friends', () => {
  const out = run(
    'cjs.cjs',
    `const { Gate } = require('fencegate');
     const { SqliteStore } = require('fencegate/sqlite');
     const { RedisStore } = require('fencegate/redis');
     const { PostgresStore } = require('fencegate/postgres');
     const { MysqlStore } = require('fencegate/mysql');
     const { EtcdStore } = require('fencegate/etcd');
     const { FencegateError, valueCodec } = require('fencegate');
     const { Etcd3 } = require('etcd3');
     const Database = require('better-sqlite3');
     const gate = new Gate(new SqliteStore(new Database(':memory:')));
     const client = new Etcd3({ hosts: 'http://127.0.0.1:1' });
     let refused;
     try { new EtcdStore(client, { encode: valueCodec.encode }); } catch (e) { refused = [e instanceof FencegateError, e.code]; }
     const etcd = new EtcdStore(client);
     client.close();
     gate.write('k', 7, 'x').then((v) => console.log(JSON.stringify([v.outcome, v.markAfter, typeof RedisStore, typeof PostgresStore, typeof MysqlStore,
       refused, etcd.encodeValue(new Map([['a', 1]])), etcd.etcdKeys('k')])));`,
  );
  assert.equal(out, JSON.stringify(['advance', 7, 'function', 'function', 'function', [true, 'INVALID_ARGUMENT'], 'devalue:[["Map",1,2],"a",1]',
    { state: 'fencegate/s/k', value: 'fencegate/v/k', commit: 'fencegate/c/k' }]));
});

test('wrong clients and options are INVALID_ARGUMENT (the FencegateError class of require("fencegate") for CommonJS)', () => {
  const cases = `[
       () => new MysqlStore({}), () => new MysqlStore(null), () => new MysqlStore(mysql.createPool({ uri: 'mysql://u@127.0.0.1:1/d' }), { table: 'a-b' }),
       () => new MysqlStore(mysql.createPool({ uri: 'mysql://u@127.0.0.1:1/d' }), { encode: String }),
       () => new PostgresStore(() => 1), () => new PostgresStore('postgres://x'), () => new PostgresStore(postgres('postgres://u@127.0.0.1:1/d'), { table: '1x' }),
       () => new RedisStore({ get() {} }), () => new RedisStore(createClient(), { prefix: 1 }), () => new RedisStore(createCluster({ rootNodes: [] })),
       () => new SqliteStore({}), () => new SqliteStore(new Database(':memory:'), { table: 'a-b' }),
       () => new EtcdStore({}), () => new EtcdStore(null), () => new EtcdStore(etcd, { prefix: 1 }), () => new EtcdStore(etcd, null),
     ].map((f) => { try { f(); return 'no error'; } catch (e) { return e instanceof FencegateError ? e.code : String(e); } })`;
  // (etcd: an etcd3 client on an address nothing listens on; it connects only on a call)
  const esm = run(
    'invalid.mjs',
    `import { FencegateError } from 'fencegate';
     import { MysqlStore } from 'fencegate/mysql';
     import { PostgresStore } from 'fencegate/postgres';
     import { RedisStore } from 'fencegate/redis';
     import { SqliteStore } from 'fencegate/sqlite';
     import Database from 'better-sqlite3';
     import mysql from 'mysql2';
     import postgres from 'postgres';
     import { createClient, createCluster } from 'redis';
     import { EtcdStore } from 'fencegate/etcd';
     import { Etcd3 } from 'etcd3';
     const etcd = new Etcd3({ hosts: 'http://127.0.0.1:1' });
     console.log(JSON.stringify(${cases}));
     process.exit(0);`,
  );
  const cjs = run(
    'invalid.cjs',
    `const { FencegateError } = require('fencegate');
     const { MysqlStore } = require('fencegate/mysql');
     const { PostgresStore } = require('fencegate/postgres');
     const { RedisStore } = require('fencegate/redis');
     const { SqliteStore } = require('fencegate/sqlite');
     const Database = require('better-sqlite3');
     const mysql = require('mysql2');
     const postgres = require('postgres');
     const { createClient, createCluster } = require('redis');
     const { EtcdStore } = require('fencegate/etcd');
     const { Etcd3 } = require('etcd3');
     const etcd = new Etcd3({ hosts: 'http://127.0.0.1:1' });
     console.log(JSON.stringify(${cases}));
     process.exit(0);`,
  );
  assert.equal(esm, JSON.stringify(Array(16).fill('INVALID_ARGUMENT')));
  assert.equal(cjs, esm);
});

test('CommonJS: the adapters refuse with the same FencegateError class and keep a Map (one codec, one error class)', () => {
  const out = run(
    'cjs-codec.cjs',
    `const { Gate, FencegateError, valueCodec } = require('fencegate');
     const { SqliteStore } = require('fencegate/sqlite');
     const Database = require('better-sqlite3');
     const store = new SqliteStore(new Database(':memory:'));
     const gate = new Gate(store);
     (async () => {
       const e = await gate.write('k', 1, { items: [0, 1, 2, () => 1] }).catch((x) => x);
       const v = await gate.write('k', 2, new Map([['a', 1]]));
       const r = await gate.read('k');
       console.log(JSON.stringify([e instanceof FencegateError, e.code, e.message, v.outcome, r.value instanceof Map, [...r.value],
         store.encodeValue(new Set([1])) === valueCodec.encode(new Set([1]))]));
     })();`,
  );
  assert.equal(out, JSON.stringify([true, 'INVALID_ARGUMENT', 'value.items[3]: a function is not encodable by the default codec', 'advance', true, [['a', 1]], true]));
});

test('TypeScript (node16) sees the Gate and adapter types', () => {
  // (lib esnext: index.d.ts uses Symbol.dispose)
  writeFileSync(
    join(dir, 'use.mts'),
    `import { Gate, type CasStore, type Verdict } from 'fencegate';
     import { SqliteStore } from 'fencegate/sqlite';
     import { RedisStore } from 'fencegate/redis';
     import { PostgresStore } from 'fencegate/postgres';
     import { EtcdStore } from 'fencegate/etcd';
     import { Etcd3 } from 'etcd3';
     declare const db: import('fencegate/sqlite').SqliteDatabase;
     const mine: CasStore<string> = { load: () => null, commit: async () => true };
     const a = new Gate<string>(mine, { maxRetries: 3, commitTimeoutMs: 100 });
     const b = new Gate(new SqliteStore<number>(db));
     export async function f(): Promise<Verdict[]> {
       return [await a.write('k', 1, 'v'), await b.delete('k', 2n), ...(await a.deleteMany(['x'], 3))];
     }
     export const types = [RedisStore, PostgresStore];
     // the real clients fit the adapters' structural client types
     import { MysqlStore } from 'fencegate/mysql';
     import mysql from 'mysql2/promise';
     import mysqlCb from 'mysql2';
     import postgres from 'postgres';
     import { createClient } from 'redis';
     import { Redis as IORedis } from 'ioredis';
     export const stores = [
       new MysqlStore(mysql.createPool('mysql://u@h/d')), new MysqlStore(mysqlCb.createConnection('mysql://u@h/d')),
       new PostgresStore(postgres('postgres://u@h/d')),
       new RedisStore(createClient()), new RedisStore(new IORedis()),
     ];
     export const etcd = new Gate(new EtcdStore<string>(new Etcd3({ hosts: 'http://127.0.0.1:1' }), { prefix: 'app/' }));`,
  );
  execFileSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--module', 'node16', '--moduleResolution', 'node16',
      '--target', 'es2022', '--lib', 'esnext,dom', 'use.mts'],
    { cwd: dir, encoding: 'utf8', stdio: 'pipe' },
  );
});

test('fencegate/s3 from ESM and CommonJS: the FencegateError class of the main entry, a byte value checked, a stream refused; fencegate/r2 is ES modules only', () => {
  const body = (load) => `${load}
     const { S3 } = require('@aws-sdk/client-s3');
     const client = new S3({ endpoint: 'http://127.0.0.1:1', region: 'us-east-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
     const store = new S3Store(client, { bucket: 'my-bucket', prefix: 'p/' });
     const out = [store.objectKey('k'), store.encodeValue('bytes'), decodeObjectBody(encodeObjectBody('{"v":1,"mark":"1"}', null, 'AAAAAAAAAAAAAAAAAAAAAA')).state];
     for (const f of [() => new S3Store(client, {}), () => store.encodeValue({}), () => store.objectKey('a/../b')]) {
       try { f(); out.push('no error'); } catch (e) { out.push(e instanceof FencegateError ? e.code + ' ' + (e.reason ?? e.option) : String(e)); }
     }
     console.log(JSON.stringify(out));
     client.destroy();`;
  const expected = '["p/k","","{\\"v\\":1,\\"mark\\":\\"1\\"}","INVALID_ARGUMENT bucket","INVALID_ARGUMENT NOT_BYTES","INVALID_ARGUMENT KEY_DOT_SEGMENT"]';
  assert.equal(run('s3.cjs', body(`const { FencegateError } = require('fencegate'); const { S3Store, decodeObjectBody, encodeObjectBody } = require('fencegate/s3');`)), expected);
  assert.equal(
    run('s3.mjs', body(`import { createRequire } from 'node:module'; import { FencegateError } from 'fencegate'; import { S3Store, decodeObjectBody, encodeObjectBody } from 'fencegate/s3'; const require = createRequire(import.meta.url);`)),
    expected,
  );
  assert.equal(run('r2.cjs', `try { require('fencegate/r2'); console.log('resolved'); } catch (e) { console.log(e.code); }`), 'ERR_PACKAGE_PATH_NOT_EXPORTED');
  assert.equal(run('r2.mjs', `import { R2Store } from 'fencegate/r2'; try { new R2Store({}); } catch (e) { console.log(e.code); }`), 'INVALID_ARGUMENT');
});
