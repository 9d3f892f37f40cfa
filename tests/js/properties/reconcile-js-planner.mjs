// THE ORACLE of tests/js/properties/reconcile-plan.test.mjs: reconcile() as
// pkg/lib/reconcile.mjs was before issue 12 moved its planning into Rust
// (src/reconcile.rs). Its planning and carrying out are kept verbatim; what is
// not planning is shared or cut: it reads through the package's own
// `readScope` (the same reads as before), takes only `{ scope: keys }` and
// checks no arguments (the package's reconcile does, tested elsewhere), and
// the export is renamed. The Rust
// planner must make exactly the plan this did.
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
import { readScope } from '../../../pkg/lib/reconcile.mjs';

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

/** The old reconcile(), for `{ issuer, gate, scopes: { scope: keys }, now, dryRun }`. */
export async function reconcileJs(options) {
  const { issuer, gate, dryRun = false, now } = options; // (checked by the package's reconcile)
  const list = Object.entries(options.scopes).map(([scope, keys]) => ({ scope, keys })); // (the test passes { scope: keys })

  const changes = [];
  const scopes = [];
  for (const { scope, keys } of list) {
    const { cur, read, errors } = await readScope(issuer, gate, scope, keys);
    const live = cur.lease !== null && now < cur.lease.expiresAt ? cur.lease : null;
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
