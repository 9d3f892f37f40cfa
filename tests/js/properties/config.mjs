// Shared settings of the property tests (issue 19). In CI they run with a fixed
// seed and a bounded number of runs (a few seconds per property); a soak runs
// them longer: `npm run soak:properties` (README "Property tests").
//
//   FENCEGATE_PROPERTY_RUNS   runs per property (default: each property's CI count)
//   FENCEGATE_PROPERTY_SEED   the seed (default 19; `random` for a new one each run, printed)
import fc from 'fast-check';
import { FencegateError, errorCodes } from '../../../pkg/node.mjs';

const runsEnv = process.env.FENCEGATE_PROPERTY_RUNS;
const seedEnv = process.env.FENCEGATE_PROPERTY_SEED;

/** The fast-check parameters of one property: `ciRuns` unless FENCEGATE_PROPERTY_RUNS is set. */
export function params(ciRuns) {
  const numRuns = runsEnv === undefined ? ciRuns : Number(runsEnv);
  if (!Number.isSafeInteger(numRuns) || numRuns < 1) throw new Error('FENCEGATE_PROPERTY_RUNS must be a positive integer');
  let seed = 19;
  if (seedEnv === 'random') seed = (Math.random() * 2 ** 31) | 0;
  else if (seedEnv !== undefined) seed = Number(seedEnv);
  if (seedEnv !== undefined || runsEnv !== undefined) process.stderr.write(`property runs: ${numRuns}, seed: ${seed}\n`);
  return { numRuns, seed, endOnFailure: true, includeErrorInReport: true };
}

/** Whether `e` is a FencegateError with one of the documented codes. */
export function isOwnError(e) {
  return e instanceof FencegateError && errorCodes().includes(e.code);
}

const throwing = (what) => () => {
  throw new Error(`${what} was called`);
};

/**
 * Hostile values a new user's code can hand over: no prototype, Proxies
 * (transparent traps: a trap that throws is the documented exception),
 * objects whose conversions throw, symbols, sparse arrays, odd numbers, text
 * with lone surrogates. Made fresh per call so nothing is shared between runs.
 */
export function hostileValues() {
  return [
    Object.create(null),
    new Proxy({}, {}),
    new Proxy([], {}),
    new Proxy(Object.create(null), {}),
    { toString: throwing('toString'), valueOf: throwing('valueOf') },
    { [Symbol.toPrimitive]: throwing('Symbol.toPrimitive') },
    { toJSON: throwing('toJSON') },
    Object.assign(Object.create(null), { toJSON: () => ({ v: 1, mark: '99' }) }),
    Symbol('hostile'),
    Object(Symbol('boxed')),
    [, 'x'], // eslint-disable-line no-sparse-arrays
    [undefined],
    new Array(3),
    NaN,
    -0,
    Infinity,
    -Infinity,
    2 ** 53,
    0.5,
    -1,
    2n ** 64n,
    -1n,
    0n,
    '\ud800',
    'a\udc00b',
    '',
    'x'.repeat(3000),
    new Date(NaN),
    new Map([[1, 2]]),
    new Uint8Array(3),
    new Number(5),
    new String('k'),
    () => 1,
    true,
    null,
    undefined,
  ];
}

/** Any value: fast-check's `anything` (bigints, no-prototype objects, sparse arrays, boxed values…), hostile values, and plausible ones. */
export function anyValue() {
  return fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 0, max: hostileValues().length - 1 }).map((i) => hostileValues()[i]) },
    {
      weight: 3,
      arbitrary: fc.anything({
        withBigInt: true,
        withNullPrototype: true,
        withBoxedValues: true,
        withSparseArray: true,
        withTypedArray: true,
        withMap: true,
        withSet: true,
        withDate: true,
      }),
    },
    { weight: 2, arbitrary: fc.constantFrom(1, 5, 7n, 'k', 'allow', 'strict', 'adopt', 'reject-future', {}, [], null, undefined, 64) },
    { weight: 1, arbitrary: fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 8 }) },
  );
}
