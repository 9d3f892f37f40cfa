// The README's Node quick start, run as printed (with 'fencegate' pointed at the
// built package), and its printed results compared with what it logs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readmeBlocks } from '../../doc-blocks.mjs';

const pkg = new URL('../../../pkg/node.mjs', import.meta.url).href;

test('README "Quick start: Node" runs and logs what its comments say', () => {
  const [block] = readmeBlocks('Quick start: Node');
  const file = join(mkdtempSync(join(tmpdir(), 'fg-readme-')), 'quick.mjs');
  writeFileSync(file, block.replace("from 'fencegate'", `from '${pkg}'`));
  const out = execFileSync('node', [file], { encoding: 'utf8' });
  assert.equal(out, [
    "{",
    "  key: 'orders/42',",
    "  ok: false,",
    "  outcome: 'reject',",
    "  code: 'STALE_TOKEN',",
    "  token: 33,",
    "  markBefore: 34,",
    "  markAfter: 34",
    "}",
    "{ mark: 34, value: { status: 'shipped' }, hasValue: true }",
    "advance",
    "",
  ].join('\n'));
});

test('README state format example decodes to mark 41', async () => {
  const { decodeState, encodeState } = await import(pkg);
  const [json] = readmeBlocks('Persisted state format', 'json');
  assert.deepEqual(decodeState(json.trim()), { mark: 41 });
  assert.equal(JSON.stringify(encodeState(41)), json.trim());
});

test('README "Same-epoch semantics" examples run and log what their comments say', () => {
  const outs = readmeBlocks('Same-epoch semantics: operation ids, holders, audit').map((block) => {
    const file = join(mkdtempSync(join(tmpdir(), 'fg-readme-')), 'same.mjs');
    writeFileSync(file, block.replace("from 'fencegate'", `from '${pkg}'`));
    return execFileSync('node', [file], { encoding: 'utf8' });
  });
  assert.deepEqual(outs, ['advance\nduplicate advance 5\n1\nOP_ID_REUSED\n10\n', 'advance\nSAME_EPOCH_REJECTED\nadvance\n']);
});

test('README "Host stores" SQLite example runs against a real SQLite file', () => {
  const [block] = readmeBlocks('Host stores (SQLite, Redis, PostgreSQL, your own)');
  // Inside the repository so better-sqlite3 resolves from its node_modules.
  const dir = mkdtempSync(join(new URL('../../../build/', import.meta.url).pathname, 'readme-'));
  const file = join(dir, 'sqlite.mjs');
  const sqlite = new URL('../../../pkg/adapters/sqlite.mjs', import.meta.url).href;
  writeFileSync(file, block.replace("from 'fencegate/sqlite'", `from '${sqlite}'`).replace("from 'fencegate'", `from '${pkg}'`) + '\nconsole.log(v.outcome, v.markAfter);\n');
  assert.equal(execFileSync('node', [file], { cwd: dir, encoding: 'utf8' }), 'advance 7\n');
  // The README's CLI example, run next in the same directory, acts on what the SQLite example wrote.
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const cli = readme.match(/`npx fencegate (reconcile --sqlite [^`]+)`/)[1].split(' ');
  const bin = new URL('../../../pkg/bin/fencegate.mjs', import.meta.url).pathname;
  const report = JSON.parse(execFileSync('node', [bin, ...cli], { cwd: dir, encoding: 'utf8' }));
  assert.deepEqual(report.changes, [{ scope: 'report-42', target: 'issuer', action: 'raise', epochBefore: 0, epochAfter: 7, revoked: null }]);
  assert.deepEqual(report.scopes[0].keys, [{ key: 'report-42', exists: true, mark: 7, holder: null, quarantine: null }]);
});

test('README "Fencing your own data" SQLite example runs against a real SQLite file and logs what its comments say', () => {
  const [block] = readmeBlocks('Fencing your own data: one line inside your transaction');
  const dir = mkdtempSync(join(new URL('../../../build/', import.meta.url).pathname, 'readme-own-'));
  const file = join(dir, 'own.mjs');
  const sqlite = new URL('../../../pkg/adapters/sqlite.mjs', import.meta.url).href;
  writeFileSync(file, block.replace("from 'fencegate/sqlite'", `from '${sqlite}'`).replace("from 'fencegate'", `from '${pkg}'`));
  assert.equal(execFileSync('node', [file], { cwd: dir, encoding: 'utf8' }), 'advance 34 1\nSTALE_TOKEN shipped\nSTALE_TOKEN\n');
});
