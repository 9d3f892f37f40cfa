// One conformance suite, run against every host store: the in-memory
// compare-and-set and transaction references, SQLite, Redis and PostgreSQL.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CASES, CAS_CASES, RACE_CASES, CACHE_CASES, OWN_CASES, setStateCache } from './cases.mjs';
import { TARGETS, LYING_REAL, LYING_COMMIT_FROM, LYING_OWN, lyingCas } from './targets.mjs';

// Every case runs twice: gates with the state cache on (the default) and off (issue 14).
for (const [mode, size] of [['cache on', undefined], ['cache off', 0]]) {
  for (const target of TARGETS) {
    describe(`conformance (${mode}): ${target.name}`, { skip: target.skip }, () => {
      before(() => setStateCache(size));
      after(() => setStateCache(undefined));
      const cases = target.shape === 'cas' ? { ...CASES, ...RACE_CASES, ...CAS_CASES, ...CACHE_CASES } : { ...CASES, ...RACE_CASES };
      // the transaction form (docs/stores.md "Your own data"): targets that give the caller's own data
      for (const [name, run] of Object.entries(OWN_CASES)) {
        test(name, { skip: target.ownData !== true && 'no fencedTransaction / own data on this target' }, async () => {
          const t = await target.open();
          try {
            assert.equal(typeof t.store.fencedTransaction, 'function');
            await run({ ...t, shape: target.shape });
          } finally {
            await t.close();
          }
        });
      }
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
}

describe('conformance catches a commitFrom that drops its precondition (issue 14)', () => {
  // commitFrom that checks nothing, or the version but not the state text.
  for (const target of LYING_COMMIT_FROM) {
    for (const name of [
      'another writer advances the key between two writes of a cached gate: STALE_TOKEN, nothing stored',
      'a restored record with the cached version but another state fails the precondition (version and state)',
    ]) {
      if (target.versionOnly && name.startsWith('another writer')) continue; // the version alone catches that one
      test(`fails: ${target.name}: ${name}`, { skip: target.skip }, async () => {
        const t = await target.open();
        try {
          await assert.rejects(CACHE_CASES[name]({ ...t, shape: 'cas' }), assert.AssertionError);
        } finally {
          await t.close();
        }
      });
    }
  }
});

describe('conformance catches a fencedTransaction that decides outside its transaction', () => {
  for (const target of LYING_OWN) {
    test(`fails: ${target.name}`, { skip: target.skip }, async () => {
      const t = await target.open();
      try {
        await assert.rejects(OWN_CASES['transaction form: a writer that starts while another decides inside its transaction waits for it (or cannot commit), never decides on the old mark']({ ...t, shape: target.shape }), assert.AssertionError);
      } finally {
        await t.close();
      }
    });
  }
});

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
