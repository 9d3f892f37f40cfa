// Reconcile after a restore (DESIGN R11, docs/decisions/reconcile-planner.md; the seed's section on
// counter rollback: "恢复流程必须同时保全发号序列与资源状态").
//
// What to repair is decided in Rust (`src/reconcile.rs`, `__reconcilePlan`):
// this module reads the issuer's record and the resources' fence records of
// each scope through the host stores, hands them to the planner, and carries
// the plan out — the issuer's raise first, then (planned again from the
// raise's actual result) every resource's establish or quarantine. A dry run
// reports the plan and writes nothing. It never lowers anything and a second
// run changes nothing. The mapping from scopes to resource keys is the
// caller's: fencegate cannot know which keys a scope's tokens are used on.
import * as wasm from '../dist/fencegate_issuer.js';
import { loadIssuerSide } from './runtime.mjs';
import { FencegateError } from './errors.mjs';
import { invalid, checkKey, listOf, checkOptions } from './common.mjs';
import { checkScope } from './issuer.mjs';

/**
 * `scopes` as `[{ scope, keys }]`: accepts `{ scope: keys }` or an array of
 * `{ scope, keys }`. Every scope and every key is checked (holes of sparse
 * arrays included) before anything is read or written, and each member is read
 * once: the checked copy is what reconcile uses.
 */
function scopeList(scopes) {
  let entries;
  if (Array.isArray(scopes)) {
    entries = listOf(scopes, 'scopes', (s) => {
      if (s === null || typeof s !== 'object') throw invalid('each entry of scopes is { scope, keys }', { scope: s });
    }).map((s) => checkOptions(s, ['scope', 'keys'], 'scopes entry'));
  } else if (scopes !== null && typeof scopes === 'object') {
    entries = Object.entries(scopes).map(([scope, keys]) => ({ scope, keys }));
  } else {
    entries = [];
  }
  if (entries.length === 0) throw invalid('scopes must map each scope to its resource keys: { scope: [key, …] }', { scopes });
  return entries.map(({ scope, keys }) => {
    if (scope === '') throw invalid('each scope needs a non-empty name', { scope });
    checkScope(scope);
    const what = `the keys of scope ${JSON.stringify(scope)}`;
    const list = listOf(keys, 'keys', (k) => {
      if (typeof k !== 'string') throw invalid(`${what} must be an array of strings`, { keys });
      checkKey(k);
    });
    return { scope, keys: list };
  });
}

/**
 * What reconcile reads of one scope: the issuer's record (`cur`), the fence
 * records of the keys (`read`) and the keys whose record could not be decoded
 * (`errors`, CORRUPT_STATE: left untouched). Any other failure throws.
 * @internal (also the reading of tests/js/properties/reconcile-js-planner.mjs)
 */
export async function readScope(issuer, gate, scope, keys) {
  const cur = await issuer.current(scope);
  const read = [];
  const errors = [];
  for (const key of keys) {
    try {
      read.push(await gate.inspect(key));
    } catch (e) {
      if (!(e instanceof FencegateError) || e.code !== 'CORRUPT_STATE') throw e;
      errors.push({ key, code: e.code, message: e.message });
    }
  }
  return { cur, read, errors };
}

/**
 * Reconciles issuer and resource state after a restore (see the module notes).
 *
 * * `issuer` — an `Issuer` over the issuer's store.
 * * `gate` — a `Gate` over the resources' store (it needs `load`).
 * * `scopes` — `{ scope: [key, …] }` (or `[{ scope, keys }]`): the resource
 *   keys each scope's tokens are used on.
 * * `now` — host time in ms (decides whether a lease is live); default `Date.now()`.
 * * `dryRun` — compute and report, write nothing.
 *
 * Resolves to `{ dryRun, changed, changes, scopes, errors }`: `changes` lists every
 * write made (or, in a dry run, that would be made) as
 * `{ scope, target: 'issuer', action: 'raise' | 'raise+revoke', epochBefore, epochAfter, revoked }`
 * or `{ scope, target: 'resource', key, action: 'establish' | 'quarantine', markBefore, markAfter, holder | floor }`;
 * `scopes` has, per scope, what was read (`issuer`, `keys`), the `conflicts`
 * found (`{ key, epoch, resourceHolder, leaseHolder, live }`) and keys it could not
 * read or repair (`errors`: `{ key, code, message }`, e.g. CORRUPT_STATE, or a
 * refused establish — left untouched); the top-level `errors` counts them.
 */
export async function reconcile(options) {
  if (options === null || typeof options !== 'object') throw invalid('reconcile takes { issuer, gate, scopes, now?, dryRun? }');
  // An unknown name (`dryrun`) must never turn a dry run into a real one: refused before anything is read.
  options = checkOptions(options, ['issuer', 'gate', 'scopes', 'now', 'dryRun'], 'reconcile');
  const { issuer, gate, dryRun = false } = options;
  if (issuer === null || typeof issuer?.current !== 'function' || typeof issuer?.raise !== 'function') {
    throw invalid('reconcile needs an Issuer', { issuer });
  }
  if (gate === null || typeof gate?.inspect !== 'function' || typeof gate?.quarantine !== 'function') {
    throw invalid('reconcile needs a Gate over the resources\' host store', { gate });
  }
  if (typeof dryRun !== 'boolean') throw invalid('dryRun must be a boolean', { dryRun });
  const now = options.now ?? Date.now();
  if (!Number.isSafeInteger(now) || now < 0) throw invalid('now must be a safe integer ≥ 0 (host ms)', { now });
  const list = scopeList(options.scopes);

  await loadIssuerSide(); // the planner is on the issuer side
  const bigint = issuer.epochs === 'bigint';
  const changes = [];
  const scopes = [];
  for (const { scope, keys } of list) {
    const { cur, read, errors } = await readScope(issuer, gate, scope, keys);
    const input = { issuer: cur, keys: read, now, bigint };
    let plan = wasm.__reconcilePlan(input);
    errors.push(...plan.errors);

    // 1. The issuer: raise (revoking a live lease the plan says cannot be
    // valid), then plan the resources from what the raise actually did.
    if (plan.raise !== null && !dryRun) {
      const result = await issuer.raise({ scope, atLeast: plan.raise.atLeast, now, revoke: true });
      if (!result.ok) throw new FencegateError(result.code, `reconcile: raising ${JSON.stringify(scope)} was refused`, { scope, result });
      plan = wasm.__reconcilePlan({ ...input, raised: { epochBefore: result.epochBefore, epoch: result.epoch, revoked: result.revoked } });
    }
    if (plan.raise?.change) changes.push({ scope, target: 'issuer', ...plan.raise.change });

    // 2. The resources: nothing below the issuer's epoch.
    for (const s of plan.resources) {
      if (dryRun) {
        changes.push({ scope, target: 'resource', ...s });
      } else if (s.action === 'establish') {
        const v = await gate.establish(s.key, s.markAfter, { holder: s.holder });
        if (v.code === 'STALE_TOKEN') continue; // a new owner got there first: already above E
        if (!v.ok) {
          errors.push({ key: s.key, code: v.code, message: `establish(${JSON.stringify(s.key)}, ${s.markAfter}) for ${JSON.stringify(s.holder)} was refused: ${v.code}` });
          continue;
        }
        changes.push({ scope, target: 'resource', ...s, markBefore: v.markBefore, markAfter: v.markAfter });
      } else {
        const q = await gate.quarantine(s.key, s.floor);
        if (q.changed) changes.push({ scope, target: 'resource', ...s, markBefore: q.markBefore, markAfter: q.markAfter, floor: q.floor });
      }
    }

    scopes.push({ scope, issuer: plan.issuer, keys: read, conflicts: plan.conflicts, errors });
  }
  return { dryRun, changed: changes.length > 0, changes, scopes, errors: scopes.reduce((n, sc) => n + sc.errors.length, 0) };
}
