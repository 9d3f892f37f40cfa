// The caller's own entries on Deno KV under races (docs/stores.md "Your own data on Deno KV"),
// in Deno 2.9 (npm `deno`) on one local KV file:
//   - the bank race: 4 Deno processes (tests/deno/bank.mjs) on the same file move money
//     between account entries with gate.transaction, 2 with epoch 10 and, a little later, 2
//     with epoch 20; each body reads both accounts, checks them and sets both and a record of
//     itself in the fence's one atomic operation. The exact checks of bank-check.mjs, the
//     commit order read from each record's versionstamp.
//   - plain gate.write from 4 processes on one key: no STORE_ERROR ("database is locked" is a
//     lost compare-and-set: decided again).
//   - the own-data conformance cases (OWN_CASES, optimistic: Deno KV checks at commit) against
//     DenoKvStore and two liars (tests/deno/own-cases.mjs): an atomic operation that does not
//     check the fence entry it decided on, and the body's mutations committed before the
//     decision. Each lie fails the case named in CAUGHT_BY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ownCaseNames } from '../stores/run-cases.mjs';
import { CAUGHT_BY } from './liars.mjs';
import { bankPlan, checkBank } from './bank-check.mjs';
import { runProcs } from './bank-procs.mjs';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const deno = join(root, 'node_modules/.bin/deno');
const env = { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' };
const denoArgs = (script, ...args) => ['run', '--quiet', '--unstable-kv', '-A', script, ...args];
const inDeno = (script, ...args) => execFileSync(deno, denoArgs(script, ...args), { cwd: root, encoding: 'utf8', env }).trim().split('\n').at(-1);
const ACCOUNTS = 6;
const START = 1000;
const OPS = 30;

test('Deno KV bank race: 4 Deno processes on one KV file (2 at epoch 10, 2 later at epoch 20) move money between their own entries in the fence\'s atomic operation', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fencegate-denokv-bank-'));
  try {
    const file = join(dir, 'bank.kv');
    inDeno('tests/deno/bank.mjs', JSON.stringify({ mode: 'setup', file, accounts: ACCOUNTS, start: START }));
    const plan = bankPlan({ perEpoch: 2, paceMs: 15, freshDelayMs: 250 });
    const outcomes = await runProcs(
      plan.map((p, w) => [deno, denoArgs('tests/deno/bank.mjs', JSON.stringify({ mode: 'writer', file, worker: w, ops: OPS, accounts: ACCOUNTS, seed: 7 + w * 101, ...p }))]),
      { cwd: root, env },
    );
    const { balances, rows } = JSON.parse(inDeno('tests/deno/bank.mjs', JSON.stringify({ mode: 'read', file })));
    // the commit order: a record's versionstamp is its commit's (fixed-width hex, increasing)
    const stamps = rows.map((r) => r.versionstamp).sort();
    assert.equal(new Set(stamps).size, rows.length, 'each transfer record was set by a commit of its own');
    const stats = checkBank(assert, { plan, outcomes, rows: rows.map((r) => ({ ...r, seq: stamps.indexOf(r.versionstamp) + 1 })), balances, accounts: ACCOUNTS, start: START });
    t.diagnostic(JSON.stringify(stats));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Deno KV: 4 Deno processes writing one key of one KV file with plain gate.write: a commit another process holds the write lock against ("database is locked") is decided again, never STORE_ERROR', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fencegate-denokv-writes-'));
  try {
    const file = join(dir, 'writes.kv');
    const OPS_EACH = 40;
    const outcomes = await runProcs(
      [1, 2, 3, 4].map((token, w) => [deno, denoArgs('tests/deno/bank.mjs', JSON.stringify({ mode: 'writes', file, worker: w, token, ops: OPS_EACH }))]),
      { cwd: root, env },
    );
    const all = outcomes.flat();
    assert.deepEqual(all.filter((o) => o.error !== undefined), []);
    for (const o of all.filter((x) => !x.ok)) assert.deepEqual([o.outcome, o.code], ['reject', 'STALE_TOKEN']);
    // once token 4 applied only writer 3 could: its last write is the value
    assert.deepEqual(JSON.parse(inDeno('tests/deno/bank.mjs', JSON.stringify({ mode: 'mark', file }))), { mark: 4, value: `3-${OPS_EACH - 1}`, hasValue: true });
    assert.equal(outcomes[3].filter((o) => o.ok).length, OPS_EACH);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const [CASE_1, CASE_RACE] = ownCaseNames();

function cases(variant) {
  const dir = mkdtempSync(join(tmpdir(), 'fencegate-denokv-own-'));
  try {
    return JSON.parse(inDeno('tests/deno/own-cases.mjs', dir, variant));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('Deno KV: the own-data cases pass on DenoKvStore and catch both lies (no check of the fence entry decided on; the body\'s mutations before the decision)', () => {
  const honest = cases('honest');
  assert.deepEqual(honest.map((r) => [r.name, r.ok, r.message ?? null]), [[CASE_1, true, null], [CASE_RACE, true, null]]);

  const outside = cases('checkOutside');
  assert.equal(CAUGHT_BY.checkOutside, CASE_RACE);
  // writer 7 committed 5 → 7 first; writer 6's commit, checking nothing, then set 5 → 6 over it
  assert.deepEqual(outside.map((r) => [r.name, r.ok, r.assertion ?? null, r.error ?? null]), [
    [CASE_1, true, null, null],
    [CASE_RACE, false, true, 'writer 6 decided again on the mark 7 committed under it'],
  ]);

  const first = cases('statementsFirst');
  assert.equal(CAUGHT_BY.statementsFirst, CASE_1);
  assert.deepEqual(first.map((r) => [r.name, r.ok, r.assertion ?? null, r.error ?? null]), [
    [CASE_1, false, true, 'the body ran for the two calls that applied, not for the refused one'],
    // and writer 6's mutation, committed before its refusal, is the one in the data
    [CASE_RACE, false, true, 'the caller\'s data holds the statement of writer 7, the one that applied'],
  ]);
});
