// THE ORACLE of tests/js/properties/reconcile-plan.test.mjs: reconcile() as
// pkg/lib/reconcile.mjs was before issue 12 moved its planning into Rust
// (src/reconcile.rs), kept verbatim (only its import paths changed, and the
// export renamed). The Rust planner must make exactly the plan this did.
// Reconcile after a restore (issue 9, DESIGN R11; the seed's section on
// counter rollback: "恢复流程必须同时保全发号序列与资源状态").
//
// An issuer restored from an old backup hands out epochs again that resources
// have already seen; a resource restored from an old backup (or one that lost
// its record) accepts epochs it had already fenced out. Both sides start fine;
// the protocol is not safe. `reconcile` reads the issuer's record and the
// resources' fence records of each scope through the host stores and repairs
// them, only ever raising:
//
//   1. issuer: the scope's epoch is raised to the largest mark any of its
//      resources has (the next acquisition issues a larger epoch). A live lease
//      that cannot be a valid ownership is revoked: its epoch is below that
//      mark, or equal to it while the resource bound the epoch to another
//      holder (one epoch handed to two owners).
//   2. resources: a key whose mark is below the issuer's epoch E is raised:
//      while E's lease is live, `establish(key, E, { holder })` binds the live
//      holder (it keeps working, every older epoch is refused); otherwise the
//      key is quarantined at E (every epoch ≤ E is refused until a new owner
//      establishes a larger one).
//
// It never lowers anything and a second run changes nothing. The mapping from
// scopes to resource keys is the caller's: fencegate cannot know which keys a
// scope's tokens are used on.
import { FencegateError } from '../../../pkg/lib/errors.mjs';
import { invalid, checkKey, listOf } from '../../../pkg/lib/common.mjs';
import { checkScope } from '../../../pkg/lib/issuer.mjs';

const MAX_SAFE = 2n ** 53n - 1n;
const MAX_U64 = 2n ** 64n - 1n;

function big(epoch) {
  return typeof epoch === 'bigint' ? epoch : BigInt(epoch);
}

function max(a, b) {
  return big(a) >= big(b) ? a : b;
}

function same(a, b) {
  return big(a) === big(b);
}

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
    }).map((s) => ({ scope: s.scope, keys: s.keys }));
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
export async function reconcileJs(options) {
  if (options === null || typeof options !== 'object') throw invalid('reconcile takes { issuer, gate, scopes, now?, dryRun? }');
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

  const changes = [];
  const scopes = [];
  for (const { scope, keys } of list) {
    const cur = await issuer.current(scope);
    const live = cur.lease !== null && now < cur.lease.expiresAt ? cur.lease : null;
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
    // A mark above the issuer's epoch limit (a resource that took a bigint
    // token, a 'number' issuer) cannot be repaired by raising: the issuer
    // could never issue past it. Such a key is an error of its own and is
    // left out of the raise; the rest of the scope is repaired as usual.
    const limit = issuer.epochs === 'bigint' ? MAX_U64 : MAX_SAFE;
    let maxMark = 0;
    for (const r of read) {
      if (big(r.mark) > limit) {
        errors.push({
          key: r.key,
          code: 'EPOCH_OVERFLOW',
          message: `the mark of ${JSON.stringify(r.key)} (${r.mark}) is above the largest epoch this issuer can issue (${limit}); not raised, left untouched: reconcile it with an issuer of epochs 'bigint'`,
        });
        continue;
      }
      maxMark = max(maxMark, r.mark);
    }

    // One epoch, two owners: a resource bound the issuer's current epoch to
    // another holder than the issuer's lease names (reported even when that
    // lease has ended; only a live one needs revoking).
    const conflicts = [];
    if (cur.lease !== null) {
      for (const r of read) {
        if (same(r.mark, cur.epoch) && r.holder !== null && r.holder !== cur.lease.holder) {
          conflicts.push({ key: r.key, epoch: cur.epoch, resourceHolder: r.holder, leaseHolder: cur.lease.holder, live: live !== null });
        }
      }
    }
    const liveConflict = conflicts.some((c) => c.live);

    // 1. The issuer: above every mark; revoke a live lease that cannot be valid.
    let epoch = cur.epoch;
    let lease = live;
    const behind = big(maxMark) > big(cur.epoch);
    if (behind || liveConflict) {
      const revoke = live !== null; // live and (epoch < maxMark, or a conflict at maxMark)
      let result;
      if (dryRun) {
        result = { epochBefore: cur.epoch, epoch: max(cur.epoch, maxMark), revoked: revoke };
      } else {
        result = await issuer.raise({ scope, atLeast: max(maxMark, 1), now, revoke: true });
        if (!result.ok) throw new FencegateError(result.code, `reconcile: raising ${JSON.stringify(scope)} was refused`, { scope, result });
      }
      epoch = result.epoch;
      if (result.revoked) lease = null;
      if (!same(result.epochBefore, result.epoch) || result.revoked) {
        changes.push({
          scope,
          target: 'issuer',
          action: result.revoked ? 'raise+revoke' : 'raise',
          epochBefore: result.epochBefore,
          epochAfter: result.epoch,
          revoked: result.revoked ? { holder: live.holder, epoch: cur.epoch } : null,
        });
      }
    }

    // 2. The resources: nothing below the issuer's epoch.
    for (const r of read) {
      if (big(r.mark) >= big(epoch)) continue;
      if (lease !== null) {
        // A live lease that survived step 1 is the lease of `epoch` itself.
        const holder = lease.holder;
        let v = { ok: true, markBefore: r.mark, markAfter: epoch, code: null };
        if (!dryRun) v = await gate.establish(r.key, epoch, { holder });
        if (v.code === 'STALE_TOKEN') continue; // a new owner got there first: already above E
        if (!v.ok) {
          errors.push({ key: r.key, code: v.code, message: `establish(${JSON.stringify(r.key)}, ${epoch}) for ${JSON.stringify(holder)} was refused: ${v.code}` });
          continue;
        }
        changes.push({ scope, target: 'resource', key: r.key, action: 'establish', markBefore: v.markBefore, markAfter: v.markAfter, holder });
      } else {
        let q = { changed: true, markBefore: r.mark, markAfter: epoch, floor: epoch };
        if (!dryRun) q = await gate.quarantine(r.key, epoch);
        if (q.changed) {
          changes.push({ scope, target: 'resource', key: r.key, action: 'quarantine', markBefore: q.markBefore, markAfter: q.markAfter, floor: q.floor });
        }
      }
    }

    scopes.push({
      scope,
      issuer: {
        epoch: cur.epoch,
        // No lease id: with the holder it renews or releases the lease (issue 20), and reports get printed and logged.
        lease: cur.lease === null ? null : { holder: cur.lease.holder, expiresAt: cur.lease.expiresAt, live: live !== null },
      },
      keys: read,
      conflicts,
      errors,
    });
  }
  return { dryRun, changed: changes.length > 0, changes, scopes, errors: scopes.reduce((n, sc) => n + sc.errors.length, 0) };
}
