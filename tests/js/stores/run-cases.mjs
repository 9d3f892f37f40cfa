// Runs the conformance cases (cases.mjs) inside another runtime (workerd,
// Deno, Chromium) against a target opened there, and reports each case's
// result as plain data for the Node test that started the runtime. The same
// case code runs everywhere; only the target differs.
import { CASES, CAS_CASES, RACE_CASES, OWN_CASES } from './cases.mjs';

/** The case names for a shape, in the order they run. */
export function caseNames(shape) {
  return Object.keys(casesFor(shape));
}

function casesFor(shape) {
  return shape === 'cas' ? { ...CASES, ...RACE_CASES, ...CAS_CASES } : { ...CASES, ...RACE_CASES };
}

/** The names of the transaction-form cases (OWN_CASES), in the order they run. */
export function ownCaseNames() {
  return Object.keys(OWN_CASES);
}

/** `[{ name, ok, assertion, error, message }]`, one per case (or per name in `only`): `error` the first line of the failure's message, `message` its stack. */
export function runCases(target, only) {
  return runAll(casesFor(target.shape), target, only);
}

/**
 * The transaction-form cases (OWN_CASES) against `target`, whose opened `t` has
 * `own` (the caller's data: cases.mjs) and a store with `fencedTransaction`; the same
 * `[{ name, ok, assertion, error, message }]`.
 */
export function runOwnCases(target, only) {
  return runAll(OWN_CASES, target, only);
}

async function runAll(cases, target, only) {
  const results = [];
  for (const [name, run] of Object.entries(cases)) {
    if (only && !only.includes(name)) continue;
    const t = await target.open();
    try {
      await run({ ...t, shape: target.shape });
      results.push({ name, ok: true });
    } catch (e) {
      results.push({ name, ok: false, assertion: e?.name === 'AssertionError' || e?.code === 'ERR_ASSERTION', error: String(e?.message ?? e).split('\n')[0], message: String(e?.stack ?? e) });
    } finally {
      await t.close();
    }
  }
  return results;
}
