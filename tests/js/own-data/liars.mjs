// Host stores that lie about the transaction form (docs/stores.md "Your own data"), built
// around an honest store of any engine, for the own-data conformance cases
// (tests/js/stores/cases.mjs OWN_CASES) to catch. Plain JavaScript: the same module runs
// in Node, workerd, Chromium and Deno. The two lies are the model's broken variants
// (model/src/lib.rs TxnVariant):
//   checkOutside    the fence record is read and decided outside the engine's transaction;
//                   the transaction then writes that decision without looking again
//   statementsFirst the caller's statements run first, on a handle whose writes commit at
//                   once; the decision and the fence write come after, in a transaction of
//                   their own, so a refusal leaves the statements in place
// Engines that check at commit instead of locking (Deno KV's atomic check, etcd's Txn
// compare) re-check what they read inside fencedTransaction, so there the check-outside lie
// is a commit that drops that check: see tests/deno/own-cases.mjs and
// tests/js/own-data/etcd-race.test.mjs.

/**
 * An object with every method of `real` (its own and its classes') bound to it (load,
 * encodeValue, transaction, textTransaction, commitFrom, fenceIn…), then `overrides` on
 * top: the lying store.
 */
export function wrapStore(real, overrides) {
  const w = {};
  for (let p = real; p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const name of Object.getOwnPropertyNames(p)) {
      if (name === 'constructor' || name in w) continue;
      const d = Object.getOwnPropertyDescriptor(p, name);
      if (typeof d.value === 'function') w[name] = d.value.bind(real);
    }
  }
  return Object.assign(w, overrides);
}

const thenable = (x) => x !== null && (typeof x === 'object' || typeof x === 'function') && typeof x.then === 'function';

/**
 * `real` deciding outside its transaction: `real.load(key)` (a read of its own), the
 * decision on that state, `gap()` (an await, where another request of the same object may
 * run: a Durable Object commits synchronous code between two awaits at once), then
 * `real.fencedTransaction` told to write that decision whatever it reads inside.
 */
export function checkOutside(real, gap = null) {
  return wrapStore(real, {
    async fencedTransaction(key, step) {
      let record = real.load(key);
      if (thenable(record)) record = await record;
      const plan = step.decide(record === null || record === undefined ? null : record.state);
      if (plan === null) return null;
      if (gap !== null) await gap();
      return real.fencedTransaction(key, { cached: null, decide: () => plan, run: step.run, body: step.body });
    },
  });
}

/**
 * `real` running the caller's statements before the decision: `autocommit(run)` gives
 * `run` a handle whose writes commit at once (the Durable Object storage itself, its SQL
 * outside transactionSync, an IndexedDB transaction of their own…) and resolves when they
 * did; then `real.fencedTransaction` decides and writes the fence, running nothing more.
 * The driver refuses statements before any decision, so the store first decides on "no
 * record" (a store that trusts its own guess); the verdict is the second decision, on the
 * stored state.
 */
export function statementsFirst(real, autocommit) {
  return wrapStore(real, {
    async fencedTransaction(key, step) {
      if (step.decide(null) === null) return null;
      await autocommit((handle) => step.run(handle));
      return real.fencedTransaction(key, { ...step, cached: null, run: () => undefined });
    },
  });
}

/** The own-data case (OWN_CASES) that catches each lie. */
export const CAUGHT_BY = {
  checkOutside: 'transaction form: a writer that starts while another decides inside its transaction waits for it (or cannot commit), never decides on the old mark',
  // the refused call (token 4) ran the body: 3 calls, not 2
  statementsFirst: 'transaction form: advance, accept, stale refused without the body; a throwing body rolls back',
};
