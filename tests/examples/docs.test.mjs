// docs/hosts.md shows the example files themselves: every block marked
// `<!-- file: PATH -->` must equal that file, and every example file must be shown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './helpers.mjs';
import { docBlocks } from '../doc-blocks.mjs';

const blocks = docBlocks('docs/hosts.md').filter((b) => b.file !== null).map((b) => ({ path: b.file, code: b.code }));

test('docs/hosts.md shows every example file', () => {
  assert.deepEqual(blocks.map((b) => b.path).sort(), [
    'examples/deno/server.mjs',
    'examples/edge-worker/src/worker.mjs',
    'examples/edge-worker/wrangler.jsonc',
    'examples/node-service/holder.mjs',
    'examples/node-service/server.mjs',
    'examples/vercel-edge/api/fence.mjs',
  ]);
});

for (const { path, code } of blocks) {
  test(`docs/hosts.md block is exactly ${path}`, () => {
    assert.equal(code, readFileSync(join(root, path), 'utf8'));
  });
}
