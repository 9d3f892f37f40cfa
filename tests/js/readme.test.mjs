// The README's Node quick start, run as printed (with 'fencegate' pointed at the
// built package), and its printed results compared with what it logs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readmeBlocks } from '../readme-blocks.mjs';

const pkg = new URL('../../pkg/node.mjs', import.meta.url).href;

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
