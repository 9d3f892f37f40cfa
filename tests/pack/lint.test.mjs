// Packaging checks on the packed tarball (issue 18): the file list of
// `npm pack --dry-run` equals tests/pack/files.txt (a build product never goes
// missing from the tarball or leaks into it), the real tarball holds exactly
// those files, and the ecosystem's packaging linters report nothing: publint
// (--strict: warnings fail too) and @arethetypeswrong/cli (every entry and
// subpath, ESM and CJS, node10 / node16 / bundler resolution).
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
    const inTar = execFileSync('tar', ['-xzOf', tarball, `package/${f}`], { encoding: 'utf8' });
    assert.equal(inTar, readFileSync(join(root, f), 'utf8'), f);
  }
});

test('publint --strict on the tarball: no errors, warnings or suggestions', () => {
  const r = spawnSync(bin('publint'), ['run', '--strict', tarball], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^All good!$/m, r.stdout + r.stderr);
});

test('attw on the tarball: no problems for any entry or subpath (node10, node16 CJS and ESM, bundler)', () => {
  const r = spawnSync(bin('attw'), [tarball, '--format', 'json'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const report = JSON.parse(r.stdout);
  assert.deepEqual([report.problems, report.analysis.problems], [{}, []]);
  const entries = Object.keys(report.analysis.entrypoints).sort();
  assert.deepEqual(entries, ['.', './etcd', './express', './hono', './http', './mysql', './otel', './package.json', './postgres', './prometheus', './redis', './sqlite']);
  for (const [entry, info] of Object.entries(report.analysis.entrypoints)) {
    for (const kind of ['node10', 'node16-cjs', 'node16-esm', 'bundler']) {
      const res = info.resolutions[kind];
      assert.ok(res?.resolution?.fileName, `${entry} ${kind}: ${JSON.stringify(res)}`);
    }
  }
});
