// Packaging checks on the packed tarball (issue 18): the file list of
// `npm pack --dry-run` equals tests/pack/files.txt (a build product never goes
// missing from the tarball or leaks into it), the real tarball holds exactly
// those files, and the ecosystem's packaging linters report nothing: publint
// (--strict: warnings fail too) and @arethetypeswrong/cli (every entry and
// subpath, ESM and CJS, node10 / node16 / bundler resolution; the ES-module-only
// runtime adapters under attw's esm-only profile).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = (name) => join(root, 'node_modules/.bin', name);
const expected = readFileSync(join(root, 'tests/pack/files.txt'), 'utf8').trim().split('\n');
let tarball;

before(() => {
  tarball = execFileSync('bash', [join(root, 'scripts/pack.sh')], { encoding: 'utf8' }).trim();
});

test('npm pack --dry-run lists exactly tests/pack/files.txt', () => {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json'], { cwd: join(root, 'pkg'), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const files = JSON.parse(out)[0].files.map((f) => f.path).sort();
  assert.deepEqual(files, expected);
});

test('the packed tarball holds exactly those files (license texts and changelog included)', () => {
  const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n')
    .map((f) => f.replace(/^package\//, '')).sort();
  assert.deepEqual(files, expected);
  for (const f of ['LICENSE-MIT', 'LICENSE-APACHE', 'CHANGELOG.md']) {
    const inTar = execFileSync('tar', ['-xzOf', tarball, `package/${f}`], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    assert.equal(inTar, readFileSync(join(root, f), 'utf8'), f);
  }
});

test('publint --strict on the tarball: no errors, warnings or suggestions', () => {
  // No colours: under CI=true publint's colour library turns them on.
  const r = spawnSync(bin('publint'), ['run', '--strict', tarball], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const plain = r.stdout.replace(/\x1b\[[0-9;]*m/g, '');
  assert.match(plain, /^All good!$/m, r.stdout + r.stderr);
});

// The runtime adapters are ES modules only (workerd, browsers and Deno load ES
// modules; docs/decisions/package-exports.md): no `require` condition, so require()
// does not resolve them. attw checks them under its esm-only profile.
const ESM_ONLY = ['./deno-kv', './durable-object', './indexeddb', './r2'];

test('attw on the tarball: no problems for any entry or subpath (node10, node16 CJS and ESM, bundler)', () => {
  const r = spawnSync(bin('attw'), [tarball, '--format', 'json', '--exclude-entrypoints', ...ESM_ONLY], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const report = JSON.parse(r.stdout);
  assert.deepEqual([report.problems, report.analysis.problems], [{}, []]);
  const entries = Object.keys(report.analysis.entrypoints).sort();
  assert.deepEqual(entries, ['.', './etcd', './express', './guard', './hono', './http', './memory', './mysql', './otel', './package.json', './postgres', './prometheus', './redis', './s3', './sqlite']);
  for (const [entry, info] of Object.entries(report.analysis.entrypoints)) {
    for (const kind of ['node10', 'node16-cjs', 'node16-esm', 'bundler']) {
      const res = info.resolutions[kind];
      assert.ok(res?.resolution?.fileName, `${entry} ${kind}: ${JSON.stringify(res)}`);
    }
  }
  const text = spawnSync(bin('attw'), [tarball, '--exclude-entrypoints', ...ESM_ONLY], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  assert.match(text.stdout, /No problems found/, text.stdout + text.stderr);
});

test('attw --profile esm-only on the ES-module-only subpaths: they resolve from ESM, bundlers and node10 types; require() is not offered', () => {
  const r = spawnSync(bin('attw'), [tarball, '--format', 'json', '--profile', 'esm-only', '--entrypoints', ...ESM_ONLY], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const report = JSON.parse(r.stdout);
  // the only finding: node16 from CJS does not resolve, which the esm-only profile ignores
  const cjsOnly = ESM_ONLY.map((entrypoint) => ({ kind: 'NoResolution', entrypoint, resolutionKind: 'node16-cjs' }));
  const byEntry = (a, b) => a.entrypoint.localeCompare(b.entrypoint);
  assert.deepEqual([...report.analysis.problems].sort(byEntry), cjsOnly);
  assert.deepEqual(Object.keys(report.analysis.entrypoints).sort(), ESM_ONLY);
  for (const [entry, info] of Object.entries(report.analysis.entrypoints)) {
    const types = `/node_modules/fencegate/adapters/${entry.slice(2)}.d.ts`;
    for (const kind of ['node10', 'node16-esm', 'bundler']) {
      assert.equal(info.resolutions[kind]?.resolution?.fileName, types, `${entry} ${kind}`);
    }
    assert.equal(info.resolutions['node16-cjs']?.resolution, undefined, `${entry} node16-cjs`);
  }
});
