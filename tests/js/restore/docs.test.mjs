// Runs docs/restore.md's example as printed (the package import pointed at the
// built package), and checks what it prints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { docBlock } from '../../doc-blocks.mjs';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

test('docs/restore.md example prints what it says', () => {
  const file = path.join(root, 'build', `restore-doc-${process.pid}.mjs`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, docBlock('docs/restore.md', 'example: restore').replace(/from 'fencegate'/g, `from '${path.join(root, 'pkg/node.mjs')}'`));
  try {
    const out = execFileSync(process.execPath, [file], { encoding: 'utf8' });
    assert.equal(out, "41 EPOCH_CONFLICT\naccept\n[ 'issuer raise+revoke 41→41' ]\nfalse\n42\n");
  } finally {
    fs.rmSync(file, { force: true });
  }
});
