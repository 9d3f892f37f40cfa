// One conformance suite, run against every host store: the in-memory
// compare-and-set and transaction references, SQLite, Redis and PostgreSQL.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CASES, CAS_CASES, RACE_CASES } from './cases.mjs';
import { TARGETS, LYING_REAL, lyingCas } from './targets.mjs';

for (const target of TARGETS) {
  describe(`conformance: ${target.name}`, { skip: target.skip }, () => {
    const cases = target.shape === 'cas' ? { ...CASES, ...RACE_CASES, ...CAS_CASES } : { ...CASES, ...RACE_CASES };
    for (const [name, run] of Object.entries(cases)) {
      test(name, async () => {
        const t = await target.open();
        try {
          await run({ ...t, shape: target.shape });
        } finally {
          await t.close();
        }
      });
    }
  });
}

describe('conformance catches a lying host', () => {
  // A host whose commit ignores the expected version checks, then writes
  // unconditionally: exactly the bug fencing exists to stop (DESIGN R1).
  const cases = { ...RACE_CASES, ...CAS_CASES };
  for (const name of [
    'concurrent writers: the advances form one chain, the rest are STALE_TOKEN, the largest wins',
    'mark 5, writers 6 and 7 load 5, 7 commits first: 6 is rejected after reloading',
    'mark 7, a 7-writer loaded, 9 advanced: the 7-writer stores nothing, later 8 is rejected',
    'conflicts past maxRetries are COMMIT_CONFLICT; commit false is never success',
  ]) {
    test(`fails: ${name}`, async () => {
      const t = await lyingCas.open();
      await assert.rejects(cases[name]({ ...t, shape: 'cas' }), assert.AssertionError);
    });
  }
  for (const target of LYING_REAL) {
    test(`fails: ${target.name}`, { skip: target.skip }, async () => {
      for (const name of [
        'mark 5, writers 6 and 7 load 5, 7 commits first: 6 is rejected after reloading',
        'mark 7, a 7-writer loaded, 9 advanced: the 7-writer stores nothing, later 8 is rejected',
      ]) {
        const t = await target.open();
        try {
          await assert.rejects(CAS_CASES[name]({ ...t, shape: 'cas' }), assert.AssertionError, name);
        } finally {
          await t.close();
        }
      }
    });
  }
  test('the lying host still passes the cases that need no interleaving (so the suite must have both)', async () => {
    const t = await lyingCas.open();
    await CASES['advance, accept, stale, missing and malformed tokens, exact after every step']({ ...t, shape: 'cas' });
  });
});
