// Bun 1.4 (npm `bun`, pinned): the packed tarball installed with `bun add` into
// a fresh project and run under Bun: the README's Node quick start, Gate over
// MemoryHostStore, the Issuer, require() from CommonJS, fencegate/sqlite over
// bun:sqlite, and the CLI (--help, reconcile on what the SQLite example wrote).
// The store conformance suite runs under Bun against fencegate/sqlite over
// bun:sqlite (tests/bun/conformance.mjs), and a lying variant is caught.
// better-sqlite3 does not load in Bun; bun:sqlite is what works there.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readmeBlocks } from '../doc-blocks.mjs';
import { caseNames } from '../js/stores/run-cases.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const bun = join(root, 'node_modules/.bin/bun');
const env = { ...process.env, BUN_INSTALL_CACHE_DIR: join(tmpdir(), 'fencegate-bun-cache'), NO_COLOR: '1' };
let project;

before(() => {
  const tarball = execFileSync('bash', [join(root, 'scripts/pack.sh')], { encoding: 'utf8' }).trim();
  project = mkdtempSync(join(tmpdir(), 'fencegate-bun-'));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  execFileSync(bun, ['add', tarball], { cwd: project, env, stdio: 'pipe' });
});

after(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

function runBun(name, code, args = []) {
  writeFileSync(join(project, name), code);
  return execFileSync(bun, [name, ...args], { cwd: project, env, encoding: 'utf8' });
}

test('Bun: the version is the pinned one', () => {
  assert.equal(execFileSync(bun, ['--version'], { encoding: 'utf8' }).trim(), '1.4.4');
});

test('Bun: the README Node quick start logs exactly what Node logs (as JSON: the runtimes format objects differently)', () => {
  const [block] = readmeBlocks('Quick start: Node');
  const asJson = `console.log = (...a) => process.stdout.write(JSON.stringify(a) + '\\n');\n`;
  const underBun = runBun('quick.mjs', asJson + block);
  const underNode = execFileSync(process.execPath, ['quick.mjs'], { cwd: project, encoding: 'utf8' });
  assert.equal(underBun, underNode);
  assert.equal(underBun.split('\n').at(-2), '["advance"]');
});

test('Bun: Gate over MemoryHostStore, and the Issuer handing out epochs the gate fences', () => {
  const out = runBun('issuer.mjs', `
import { Gate, Issuer, MemoryHostStore } from 'fencegate';
const store = new MemoryHostStore();
const issuer = new Issuer(store);
const gate = new Gate(store);
const a = await issuer.acquire({ scope: 'orders', holder: 'A', ttlMs: 1000, now: 0 });
const w = await gate.write('orders/1', a.epoch, { total: 3 }, { holder: 'A' });
const b = await issuer.acquire({ scope: 'orders', holder: 'B', ttlMs: 1000, now: 2000 });
await gate.establish('orders/1', b.epoch, { holder: 'B' });
const late = await gate.write('orders/1', a.epoch, { total: 0 }, { holder: 'A' });
console.log(a.epoch, w.outcome, b.epoch, late.code, JSON.stringify(await gate.read('orders/1')));
`);
  assert.equal(out, '1 advance 2 STALE_TOKEN {"mark":2,"value":{"total":3},"hasValue":true}\n');
});

test('Bun: require("fencegate") from CommonJS', () => {
  const out = runBun('cjs.cjs', `
const { MemoryGate, FencegateError } = require('fencegate');
const g = new MemoryGate();
g.write('k', 5, 'a');
console.log(g.write('k', 4, 'b').code, typeof FencegateError);
`);
  assert.equal(out, 'STALE_TOKEN function\n');
});

test('Bun: fencegate/sqlite over bun:sqlite, then the CLI reconciles what it wrote', () => {
  const out = runBun('sqlite.mjs', `
import { Database } from 'bun:sqlite';
import { Gate } from 'fencegate';
import { SqliteStore } from 'fencegate/sqlite';
const db = new Database('app.db');
const gate = new Gate(new SqliteStore(db));
console.log((await gate.write('report-42', 7, { status: 'draft' })).outcome, (await gate.write('report-42', 6, 'x')).code);
db.close();
`);
  assert.equal(out, 'advance STALE_TOKEN\n');
  const cli = join(project, 'node_modules/fencegate/bin/fencegate.mjs');
  const help = spawnSync(bun, [cli, '--help'], { cwd: project, env, encoding: 'utf8' });
  assert.equal(help.status, 0);
  assert.match(help.stdout, /^usage: fencegate reconcile/);
  const first = JSON.parse(execFileSync(bun, [cli, 'reconcile', '--sqlite', 'app.db', '--scope', 'report-42', '--key', 'report-42'], { cwd: project, env, encoding: 'utf8' }));
  assert.deepEqual(first.changes, [{ scope: 'report-42', target: 'issuer', action: 'raise', epochBefore: 0, epochAfter: 7, revoked: null }]);
  const again = JSON.parse(execFileSync(bun, [cli, 'reconcile', '--sqlite', 'app.db', '--scope', 'report-42', '--key', 'report-42'], { cwd: project, env, encoding: 'utf8' }));
  assert.deepEqual([again.changed, again.scopes[0].issuer.epoch], [false, 7]);
});

function conformance(args) {
  const dir = mkdtempSync(join(tmpdir(), 'fencegate-bun-sqlite-'));
  try {
    const out = execFileSync(bun, ['tests/bun/conformance.mjs', dir, ...args], { cwd: root, env, encoding: 'utf8' });
    return JSON.parse(out.trim().split('\n').at(-1));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('Bun: the whole conformance suite passes for fencegate/sqlite over bun:sqlite (file reopened for the restart cases)', () => {
  const results = conformance([]);
  assert.deepEqual(results.filter((r) => !r.ok), []);
  assert.deepEqual(results.map((r) => r.name), caseNames('transaction'));
});

test('Bun: a variant that reads outside the transaction fails the race case', () => {
  const name = 'concurrent writers: the advances form one chain, the rest are STALE_TOKEN, the largest wins';
  const results = conformance(['lying', JSON.stringify([name])]);
  assert.deepEqual(results.map((r) => [r.name, r.ok, r.assertion]), [[name, false, true]]);
});

test('Bun: your own table over bun:sqlite — gate.transaction runs the UPDATE only under a current token; fenceInSync rolls back a zombie', () => {
  const out = runBun('own.mjs', `
import { Database } from 'bun:sqlite';
import { Gate } from 'fencegate';
import { SqliteStore } from 'fencegate/sqlite';
const db = new Database(':memory:');
db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT); INSERT INTO orders VALUES (42, 'paid')");
const gate = new Gate(new SqliteStore(db));
const set = (s) => (tx) => tx.prepare('UPDATE orders SET status = ? WHERE id = 42').run(s).changes;
const a = await gate.transaction('orders/42', 34, set('shipped'));
let ran = false;
const b = await gate.transaction('orders/42', 33, (tx) => { ran = true; return set('refunded')(tx); });
const refund = db.transaction((t) => { gate.fenceInSync(db, 'orders/42', t); db.prepare("UPDATE orders SET status = 'zombie' WHERE id = 42").run(); });
let code = null;
try { refund.immediate(33); } catch (e) { code = e.code; }
console.log(JSON.stringify([a.outcome, a.result, b.code, ran, code, db.prepare('SELECT status FROM orders WHERE id = 42').get().status, await gate.mark('orders/42')]));
`);
  assert.equal(out, '["advance",1,"STALE_TOKEN",false,"STALE_TOKEN","shipped",34]\n');
});
