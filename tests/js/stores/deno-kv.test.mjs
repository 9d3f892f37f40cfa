// fencegate/deno-kv in Deno 2.9 (npm `deno`) on a local KV file: the store
// conformance suite runs inside Deno (tests/deno/conformance.mjs) with a reopen
// of the file per restart case; a variant that drops the versionstamp check is
// caught; wrong arguments are INVALID_ARGUMENT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { caseNames } from './run-cases.mjs';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const deno = join(root, 'node_modules/.bin/deno');

function inDeno(script, args) {
  const dir = mkdtempSync(join(tmpdir(), 'fencegate-denokv-'));
  try {
    const out = execFileSync(deno, ['run', '--quiet', '--unstable-kv', '-A', script, dir, ...args], {
      cwd: root, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' },
    });
    return out.trim().split('\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('Deno KV: the whole conformance suite passes in Deno on a local KV file (reopened for the restart cases)', () => {
  const results = JSON.parse(inDeno('tests/deno/conformance.mjs', []).at(-1));
  assert.deepEqual(results.filter((r) => !r.ok), []);
  assert.deepEqual(results.map((r) => r.name), caseNames('cas'));
});

const INTERLEAVING = [
  'concurrent writers: the advances form one chain, the rest are STALE_TOKEN, the largest wins',
  'mark 5, writers 6 and 7 load 5, 7 commits first: 6 is rejected after reloading',
  'mark 7, a 7-writer loaded, 9 advanced: the 7-writer stores nothing, later 8 is rejected',
];

test('Deno KV: a variant that drops atomic().check(versionstamp) fails every interleaving case', () => {
  const results = JSON.parse(inDeno('tests/deno/conformance.mjs', ['lying', JSON.stringify(INTERLEAVING)]).at(-1));
  assert.deepEqual(results.map((r) => [r.name, r.ok, r.assertion]), INTERLEAVING.map((n) => [n, false, true]));
});

test('Deno KV: wrong arguments are INVALID_ARGUMENT', () => {
  const lines = inDeno('tests/deno/arguments.mjs', []);
  assert.deepEqual(lines, [
    'null INVALID_ARGUMENT DenoKvStore needs an open Deno.Kv (await Deno.openKv(path))',
    'object INVALID_ARGUMENT DenoKvStore needs an open Deno.Kv (await Deno.openKv(path))',
    'prefix INVALID_ARGUMENT prefix',
    'prefix [] INVALID_ARGUMENT prefix',
    'encode only INVALID_ARGUMENT decode',
    'function value INVALID_ARGUMENT 0',
  ]);
});
