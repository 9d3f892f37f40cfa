// Runs the conformance cases (cases.mjs) inside another runtime (workerd,
// Deno, Chromium) against a target opened there, and reports each case's
// result as plain data for the Node test that started the runtime. The same
// case code runs everywhere; only the target differs.
import { CASES, CAS_CASES, RACE_CASES } from './cases.mjs';

/** The case names for a shape, in the order they run. */
export function caseNames(shape) {
  return Object.keys(casesFor(shape));
}

function casesFor(shape) {
  return shape === 'cas' ? { ...CASES, ...RACE_CASES, ...CAS_CASES } : { ...CASES, ...RACE_CASES };
}

/** `[{ name, ok, assertion, message }]`, one per case (or per name in `only`). */
export async function runCases(target, only) {
  const results = [];
  for (const [name, run] of Object.entries(casesFor(target.shape))) {
    if (only && !only.includes(name)) continue;
    const t = await target.open();
    try {
      await run({ ...t, shape: target.shape });
      results.push({ name, ok: true });
    } catch (e) {
      results.push({ name, ok: false, assertion: e?.name === 'AssertionError' || e?.code === 'ERR_ASSERTION', message: String(e?.stack ?? e) });
    } finally {
      await t.close();
    }
  }
  return results;
}
