// npm install proof: `npm pack` pkg/, install the tarball into a scratch
// project, and use it from Node ESM, Node CJS, TypeScript (tsc --strict against
// the shipped .d.ts) and a Worker in Miniflare (real workerd).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, mkdirSync, copyFileSync, existsSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readmeBlocks } from '../doc-blocks.mjs';
import { installedWorker } from '../js/workerd.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
let project;

before(() => {
  const tarball = execFileSync('bash', [join(root, 'scripts/pack.sh')], { encoding: 'utf8' }).trim();
  project = mkdtempSync(join(tmpdir(), 'fencegate-pack-'));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent', tarball], { cwd: project, stdio: 'inherit' });
});

test('the tarball holds the entries, types and wasm and nothing from the build tree', () => {
  const dir = join(project, 'node_modules', 'fencegate');
  for (const f of ['package.json', 'index.d.ts', 'node.mjs', 'node.cjs', 'workerd.mjs', 'browser.mjs', 'lib/core.mjs', 'dist/fencegate.js', 'dist/fencegate.cjs', 'dist/fencegate_bg.wasm', 'dist/index.d.cts',
    'adapters/durable-object.mjs', 'adapters/durable-object.d.ts', 'adapters/indexeddb.mjs', 'adapters/indexeddb.d.ts', 'adapters/deno-kv.mjs', 'adapters/deno-kv.d.ts']) {
    assert.ok(existsSync(join(dir, f)), f);
  }
  assert.equal(existsSync(join(dir, 'src')), false);
  assert.equal(existsSync(join(dir, 'lib/cjs-entry.mjs')), true);
});

const SCRIPT_BODY = `
const g = new MemoryGate();
const out = [];
out.push(g.write('k', 1, 'a').outcome);
out.push(g.write('k', 2n, 'b').outcome);
out.push(g.write('k', 1, 'c').code);
out.push(g.write('k', parseToken('2'), 'd').outcome);
try { parseToken('02'); } catch (e) { out.push(e instanceof FencegateError ? e.code : 'wrong class'); }
out.push(String(g.mark('k')), g.value('k'));
console.log(JSON.stringify(out));
`;
const EXPECTED = '["advance","advance","STALE_TOKEN","accept","MALFORMED_TOKEN","2","d"]';

test('npx fencegate reconcile runs from the installed tarball (issue 9, docs/restore.md)', () => {
  // The store's client is the caller's dependency: link the dev copy of better-sqlite3 in.
  if (!existsSync(join(project, 'node_modules/better-sqlite3'))) {
    symlinkSync(join(root, 'node_modules/better-sqlite3'), join(project, 'node_modules/better-sqlite3'), 'dir');
  }
  const npx = (...args) => spawnSync('npx', ['--no-install', 'fencegate', ...args], { cwd: project, encoding: 'utf8' });
  const help = npx('--help');
  assert.equal(help.status, 0);
  assert.match(help.stdout, /^usage: fencegate reconcile/);
  assert.equal(npx().status, 2);
  writeFileSync(join(project, 'seed-db.cjs'), `
const Database = require('better-sqlite3');
const db = new Database('app.db');
db.exec('CREATE TABLE fencegate (key TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL, value TEXT, version INTEGER NOT NULL) WITHOUT ROWID');
db.prepare("INSERT INTO fencegate VALUES ('issuer:orders', '{\\"v\\":1,\\"epoch\\":\\"3\\",\\"lease\\":null}', NULL, 1)").run();
db.prepare("INSERT INTO fencegate VALUES ('orders/1', '{\\"v\\":1,\\"mark\\":\\"7\\"}', '\\"x\\"', 1)").run();
db.close();
`);
  execFileSync('node', ['seed-db.cjs'], { cwd: project });
  const run = npx('reconcile', '--sqlite', 'app.db', '--scope', 'orders', '--key', 'orders/1', '--now', '1');
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout).changes, [
    { scope: 'orders', target: 'issuer', action: 'raise', epochBefore: 3, epochAfter: 7, revoked: null },
  ]);
  assert.equal(JSON.parse(npx('reconcile', '--sqlite', 'app.db', '--scope', 'orders', '--key', 'orders/1').stdout).changed, false);
});

test('Node ESM: import { … } from "fencegate"', () => {
  writeFileSync(join(project, 'esm.mjs'), `import { MemoryGate, parseToken, FencegateError } from 'fencegate';\n${SCRIPT_BODY}`);
  assert.equal(execFileSync('node', ['esm.mjs'], { cwd: project, encoding: 'utf8' }).trim(), EXPECTED);
});

test('Node ESM: "fencegate" is the one-file bundle dist/node.mjs, and every subpath shares its classes and Wasm instance', () => {
  // (docs/decisions/package-exports.md: the "node" import condition of each subpath points at a
  // dist/ copy that imports the core through dist/node.mjs, never a second copy of lib/.)
  writeFileSync(join(project, 'one-instance.mjs'), `
import { FencegateError, MemoryHostStore, Gate, parseToken } from 'fencegate';
import { MemoryHostStore as FromMemory } from 'fencegate/memory';
import { readFencing } from 'fencegate/http';
import { fencing as honoFencing } from 'fencegate/hono';
import { DenoKvStore } from 'fencegate/deno-kv';
import { IndexedDbStore } from 'fencegate/indexeddb';
import { SqliteStore } from 'fencegate/sqlite';
import { EtcdStore } from 'fencegate/etcd';
const err = (f) => { try { f(); return 'no error'; } catch (e) { return e instanceof FencegateError ? e.code : 'another class: ' + e; } };
const at = (spec) => import.meta.resolve(spec).split('/node_modules/fencegate/')[1];
const subpaths = ['memory', 'sqlite', 'redis', 'postgres', 'mysql', 'etcd', 'deno-kv', 'indexeddb', 'http', 'hono', 'express', 'otel', 'prometheus'];
const gate = new Gate(new FromMemory());
const v = await gate.write('k', parseToken('3'), 'x');
console.log(JSON.stringify([
  at('fencegate'), subpaths.map((s) => at('fencegate/' + s)),
  FromMemory === MemoryHostStore, v.outcome, readFencing({ 'fencing-token': '7' }).token,
  err(() => readFencing({ 'fencing-token': '7', 'fencing-op-id': 'a,b' })), typeof honoFencing,
  err(() => new DenoKvStore(null)), err(() => new IndexedDbStore(null)), err(() => new SqliteStore({})), err(() => new EtcdStore(null)),
]));
`);
  assert.equal(execFileSync('node', ['one-instance.mjs'], { cwd: project, encoding: 'utf8' }).trim(), JSON.stringify([
    'dist/node.mjs',
    ['memory', 'sqlite', 'redis', 'postgres', 'mysql', 'etcd', 'deno-kv', 'indexeddb'].map((s) => `dist/adapters/${s}.mjs`)
      .concat(['http', 'hono', 'express', 'otel', 'prometheus'].map((s) => `dist/integrations/${s}.mjs`)),
    true, 'advance', 7, 'INVALID_ARGUMENT', 'function',
    'INVALID_ARGUMENT', 'INVALID_ARGUMENT', 'INVALID_ARGUMENT', 'INVALID_ARGUMENT',
  ]));
  // The bundle imports no other module of the package (only node:module: createRequire, for Node < 20.16
  // and for the two parts it requires on first use, below).
  const bundle = readFileSync(join(project, 'node_modules/fencegate/dist/node.mjs'), 'utf8');
  assert.deepEqual([...new Set([...bundle.matchAll(/\bfrom\s*"([^"]+)"/g)].map((m) => m[1]))], ['node:module']);
});

test('Node ESM and CJS: devalue and the issuer side\'s glue are required on first use, not at import', () => {
  writeFileSync(join(project, 'lazy-parts.mjs'), `
import { createRequire } from 'node:module';
import { MemoryGate, Gate, Issuer, MemoryHostStore, valueCodec, reconcile } from 'fencegate';
const loaded = () => Object.keys(createRequire(import.meta.url).cache).map((f) => f.split('/dist/')[1]).filter(Boolean).sort();
const out = [new MemoryGate().write('k', 1, 'v').outcome, loaded()];
const text = valueCodec.encode(new Map([['a', 1n]]));
out.push(text, valueCodec.decode(text).get('a') === 1n, loaded());
const store = new MemoryHostStore();
const issuer = new Issuer(store);
const lease = await issuer.acquire({ scope: 's', holder: 'h', ttlMs: 10, now: 0 });
const plan = await reconcile({ issuer, gate: new Gate(store), scopes: { s: ['k'] }, now: 1 });
out.push(lease.epoch, plan.changed, loaded());
console.log(JSON.stringify(out));
`);
  assert.equal(execFileSync('node', ['lazy-parts.mjs'], { cwd: project, encoding: 'utf8' }).trim(), JSON.stringify([
    'advance', [], 'devalue:[["Map",1,2],"a",["BigInt","1"]]', true, ['devalue.cjs'], 1, true, ['devalue.cjs', 'fencegate_issuer_node.cjs'],
  ]));
  // CommonJS: its own copy of the glue (an error class per copy), devalue shared.
  writeFileSync(join(project, 'lazy-parts.cjs'), `
const { MemoryGate, Issuer, MemoryHostStore, valueCodec } = require('fencegate');
const loaded = () => Object.keys(require.cache).map((f) => f.split('/node_modules/fencegate/')[1]).filter(Boolean).sort();
const out = [new MemoryGate().write('k', 1, 'v').outcome, loaded()];
const text = valueCodec.encode(new Set([1n]));
out.push(text, valueCodec.decode(text).has(1n), loaded());
new Issuer(new MemoryHostStore()).acquire({ scope: 's', holder: 'h', ttlMs: 10, now: 0 }).then((lease) => {
  out.push(lease.epoch, loaded());
  console.log(JSON.stringify(out));
});
`);
  assert.equal(execFileSync('node', ['lazy-parts.cjs'], { cwd: project, encoding: 'utf8' }).trim(), JSON.stringify([
    'advance', ['dist/fencegate.cjs', 'node.cjs'], 'devalue:[["Set",1],["BigInt","1"]]', true, ['dist/devalue.cjs', 'dist/fencegate.cjs', 'node.cjs'],
    1, ['dist/devalue.cjs', 'dist/fencegate.cjs', 'dist/fencegate_issuer_cjs.cjs', 'node.cjs'],
  ]));
});

test('Node ESM and CJS as on Node 18 (no process.getBuiltinModule, no global crypto): the fallbacks load the .wasm and draw lease ids', () => {
  // dist/node.mjs reads the .wasm through createRequire where getBuiltinModule is missing, and both
  // entries load node:crypto's webcrypto on the Issuer's first lease id (docs/decisions/cold-start.md).
  const body = `const lease = await new Issuer(new MemoryHostStore()).acquire({ scope: 's', holder: 'h', ttlMs: 10, now: 0 });
console.log(JSON.stringify([typeof process.getBuiltinModule, typeof globalThis.crypto, new MemoryGate().write('k', 1, 'v').outcome, lease.epoch, /^1\\.BDpxh3TF[A-Za-z0-9_-]{21}[AQgw]$/.test(lease.leaseId)]));`;
  writeFileSync(join(project, 'old-node.mjs'), `delete process.getBuiltinModule;\ndelete globalThis.crypto;\nconst { MemoryGate, Issuer, MemoryHostStore } = await import('fencegate');\n${body}`);
  writeFileSync(join(project, 'old-node.cjs'), `delete globalThis.crypto;\nconst { MemoryGate, Issuer, MemoryHostStore } = require('fencegate');\n(async () => {\n${body}\n})();`);
  assert.equal(execFileSync('node', ['old-node.mjs'], { cwd: project, encoding: 'utf8' }).trim(), JSON.stringify(['undefined', 'undefined', 'advance', 1, true]));
  assert.equal(execFileSync('node', ['old-node.cjs'], { cwd: project, encoding: 'utf8' }).trim(), JSON.stringify([typeof process.getBuiltinModule, 'undefined', 'advance', 1, true]));
});

test('Node ESM and CJS in one process: an error from either copy is instanceof both FencegateError classes', () => {
  writeFileSync(join(project, 'dual.mjs'), `
import { createRequire } from 'node:module';
import { MemoryGate as EsmGate, FencegateError as EsmError, parseToken as esmParse } from 'fencegate';
const { FencegateError: CjsError, parseToken: cjsParse } = createRequire(import.meta.url)('fencegate');
const caught = (f) => { try { f(); } catch (e) { return e; } };
const fromEsm = caught(() => new EsmGate({ sameEpoch: 'nope' }));
const fromCjs = caught(() => cjsParse('07'));
console.log(JSON.stringify([
  EsmError === CjsError,
  fromEsm.code, fromEsm instanceof EsmError, fromEsm instanceof CjsError,
  fromCjs.code, fromCjs instanceof EsmError, fromCjs instanceof CjsError,
  caught(() => esmParse('x')) instanceof CjsError,
  new Error('x') instanceof EsmError, Object.assign(new Error('y'), { code: 'STALE_TOKEN' }) instanceof CjsError, null instanceof EsmError,
  fromCjs instanceof Error,
]));
`);
  assert.deepEqual(JSON.parse(execFileSync('node', ['dual.mjs'], { cwd: project, encoding: 'utf8' })), [
    false,
    'INVALID_ARGUMENT', true, true,
    'MALFORMED_TOKEN', true, true,
    true,
    false, false, false,
    true,
  ]);
});

test('Node CJS: require("fencegate")', () => {
  writeFileSync(join(project, 'cjs.cjs'), `const { MemoryGate, parseToken, FencegateError } = require('fencegate');\n${SCRIPT_BODY}`);
  assert.equal(execFileSync('node', ['cjs.cjs'], { cwd: project, encoding: 'utf8' }).trim(), EXPECTED);
});

test('browser entry without init() throws NOT_INITIALIZED, with init() works; the issuer side loads on first use, and again after a failed load', () => {
  const dir = join(project, 'node_modules', 'fencegate');
  writeFileSync(join(project, 'browser.mjs'), `
import { MemoryGate, Issuer, init, FencegateError } from './node_modules/fencegate/browser.mjs';
import { readFileSync } from 'node:fs';
const out = [];
try { new MemoryGate(); } catch (e) { out.push(e instanceof FencegateError ? e.code : String(e)); }
await init(readFileSync(${JSON.stringify(join(dir, 'dist/fencegate_bg.wasm'))}));
out.push(new MemoryGate().write('k', 1, 'v').outcome);
// The issuer side loads on first use: here from a URL Node cannot fetch, so
// NOT_INITIALIZED; after init(…, issuer) names its bytes, the next call loads it.
const issuer = new Issuer();
try { await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 1000, now: 0 }); } catch (e) { out.push(e instanceof FencegateError ? e.code : String(e)); }
await init(undefined, readFileSync(${JSON.stringify(join(dir, 'dist/fencegate_issuer_bg.wasm'))}));
out.push((await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 1000, now: 0 })).epoch);
console.log(JSON.stringify(out));
`);
  assert.equal(execFileSync('node', ['browser.mjs'], { cwd: project, encoding: 'utf8' }).trim(), '["NOT_INITIALIZED","advance","NOT_INITIALIZED",1]');
});

test('TypeScript: every export type-checks with tsc --noEmit --strict', () => {
  copyFileSync(join(root, 'tests/types/api.ts'), join(project, 'api.ts'));
  // the optional peers whose types the integrations' .d.ts refer to are the caller's dependencies
  for (const peer of ['hono', '@opentelemetry/api', 'prom-client']) {
    mkdirSync(dirname(join(project, 'node_modules', peer)), { recursive: true });
    if (!existsSync(join(project, 'node_modules', peer))) symlinkSync(join(root, 'node_modules', peer), join(project, 'node_modules', peer), 'dir');
  }
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom', 'esnext.disposable'], types: [], skipLibCheck: false },
    files: ['api.ts'],
  }));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module', dependencies: JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')).dependencies }));
  execFileSync(join(root, 'node_modules/.bin/tsc'), ['-p', project], { cwd: project, stdio: 'inherit' });
});

test('Worker in Miniflare (workerd): the package bundled as wrangler would, .wasm imported as a module', async () => {
  const src = join(project, 'worker-src.mjs');
  // The README's Worker quick start, exactly as printed.
  writeFileSync(src, readmeBlocks('Quick start: Cloudflare Worker')[0]);
  const mf = await installedWorker(project, src, join(project, 'worker-out'));
  try {
    const send = async (token, body) => {
      const headers = token === undefined ? {} : { 'fencing-token': token };
      const r = await mf.dispatchFetch('http://localhost/k', { method: 'POST', headers, body });
      const answer = await r.json();
      // problem bodies: the prose `detail` is checked in tests/js/integrations/http.test.mjs
      if (r.status !== 200) assert.equal(typeof answer.detail, 'string');
      delete answer.detail;
      return [r.status, r.headers.get('content-type'), answer];
    };
    const ok = (outcome, token, markBefore, mark) => [200, 'application/json', { key: 'k', outcome, code: null, token, markBefore, mark }];
    const refused = (status, code, title, token, markBefore, mark) => [status, 'application/problem+json', {
      type: `urn:fencegate:problem:${code.toLowerCase().replaceAll('_', '-')}`, title, status, code, key: 'k', outcome: 'reject', token, markBefore, mark,
    }];
    const max = '18446744073709551615';
    assert.deepEqual(await send('3', 'three'), ok('advance', '3', '0', '3'));
    assert.deepEqual(await send('3', 'three again'), ok('accept', '3', '3', '3'));
    assert.deepEqual(await send('2', 'two'), refused(409, 'STALE_TOKEN', 'Stale fencing token', '2', '3', '3'));
    assert.deepEqual(await send('03', 'x'), refused(400, 'MALFORMED_TOKEN', 'Malformed fencing token', '03', '3', '3'));
    assert.deepEqual(await send(undefined, 'x'), refused(428, 'MISSING_TOKEN', 'Fencing token required', null, '3', '3'));
    assert.deepEqual(await send(max, 'max'), ok('advance', max, '3', max));
    assert.deepEqual(await send('18446744073709551614', 'x'), refused(409, 'STALE_TOKEN', 'Stale fencing token', '18446744073709551614', max, max));
  } finally {
    await mf.dispose();
  }
});
