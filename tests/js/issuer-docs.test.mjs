// Runs docs/issuer.md's examples as printed (the package import pointed at the
// built package), and checks what they print.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const doc = fs.readFileSync(path.join(root, 'docs/issuer.md'), 'utf8');

function example(name) {
  const m = doc.match(new RegExp('```js\\n// example: ' + name + '\\n([\\s\\S]*?)```'));
  assert.ok(m, `docs/issuer.md has no "example: ${name}" block`);
  return m[1];
}

function run(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fencegate-issuer-doc-'));
  const file = path.join(root, 'build', `issuer-doc-${name}-${process.pid}.mjs`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const adapters = (sub) => `'${path.join(root, 'pkg/adapters', `${sub}.mjs`)}'`;
  const code = example(name)
    .replace(/from 'fencegate'/g, `from '${path.join(root, 'pkg/node.mjs')}'`)
    .replace(/from 'fencegate\/(\w+)'/g, (_, sub) => `from ${adapters(sub === 'postgres' ? 'postgres' : sub)}`);
  fs.writeFileSync(file, code);
  try {
    return execFileSync(process.execPath, [file], { encoding: 'utf8', env: { ...process.env, EXAMPLE_DIR: dir }, cwd: root });
  } finally {
    fs.rmSync(file, { force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('docs/issuer.md in-memory example prints what it says', () => {
  // The lease id is random (issue 20): epoch 1, the tag of "orders", 22 random characters.
  assert.match(run('in-memory'), /^1 1\.HBaK2wDS[A-Za-z0-9_-]{21}[AQgw]\ntrue 1\nLEASE_NOT_HELD\ntrue\n$/);
});

test('docs/issuer.md SQLite example (issuer and gate in one store) prints what it says', { skip: !fs.existsSync(path.join(root, 'pkg/adapters/sqlite.mjs')) && 'the SQLite adapter is not in this tree' }, () => {
  assert.equal(run('sqlite'), 'accept\n1\n');
});
