// Runs docs/issuer.md's examples as printed (the package import pointed at the
// built package), and checks what they print.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { docBlock } from '../../doc-blocks.mjs';
import { runExample } from '../docs/doc-project.mjs';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const example = (name) => docBlock('docs/issuer.md', `example: ${name}`);

/** The example as printed, in a fresh project (tests/js/docs/doc-project.mjs): no injected variables. */
function run(name) {
  return runExample(example(name));
}

test('docs/issuer.md in-memory example prints what it says', () => {
  // The lease id is random (issue 20): epoch 1, the tag of "orders", 22 random characters.
  assert.match(run('in-memory'), /^1 1\.HBaK2wDS[A-Za-z0-9_-]{21}[AQgw]\ntrue 1\nLEASE_NOT_HELD\ntrue\n$/);
});

test('docs/issuer.md SQLite example (issuer and gate in one store) prints what it says', { skip: !fs.existsSync(path.join(root, 'pkg/adapters/sqlite.mjs')) && 'the SQLite adapter is not in this tree' }, () => {
  assert.equal(run('sqlite'), 'accept\n1\n');
});
