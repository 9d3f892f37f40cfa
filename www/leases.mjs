// The demo's lease issuer: fencegate's `Issuer` when this build of the package
// exports one, over the same IndexedDB store; otherwise a minimal in-page lease
// counter, labelled as such on the page. Both hand out epochs 1, 2, 3, … per
// acquisition, one live lease at a time, and persist the counter before returning.

export const SCOPE = 'leader';
export const TTL_MS = 10_000;

/** `{ kind, label, acquire(holder, now), current() }` over `store` (an IdbStore). */
export function makeIssuer(mod, store) {
  if ('Issuer' in mod) {
    const issuer = new mod.Issuer(store);
    const key = issuer.keyOf(SCOPE);
    return {
      kind: 'fencegate',
      label: "fencegate's Issuer (epochs persisted in IndexedDB)",
      acquire: (holder, now) => issuer.acquire({ scope: SCOPE, holder, ttlMs: TTL_MS, now }),
      current: () => issuer.current(SCOPE),
      // Recovery (R11), shown only when this build's Issuer has `raise`.
      recovery:
        typeof issuer.raise === 'function'
          ? {
              /** A copy of the issuer's stored record, as an operator's backup would hold it. */
              backup: () => store.raw(key),
              /** Puts an old copy back, as restoring the issuer's storage from a backup would. */
              restore: (record) => store.replace(key, record),
              raise: (atLeast, now) => issuer.raise({ scope: SCOPE, atLeast, now }),
            }
          : null,
    };
  }
  return standIn(store);
}

/**
 * Stand-in until the package's Issuer ships: a counter and one lease in one
 * IndexedDB record, changed in one transaction. Not fencegate's code.
 */
function standIn(store) {
  const key = 'stand-in-issuer:' + SCOPE;
  return {
    kind: 'stand-in',
    recovery: null,
    label: 'in-page lease counter (a stand-in: this build of fencegate has no Issuer yet)',
    async acquire(holder, now) {
      let result;
      await store.update(key, (record) => {
        const s = record ?? { epoch: 0, lease: null };
        if (s.lease !== null && now < s.lease.expiresAt) {
          result = { ok: false, code: 'LEASE_HELD', scope: SCOPE, epoch: s.epoch, holder: s.lease.holder, expiresAt: s.lease.expiresAt };
          return null;
        }
        const epoch = s.epoch + 1;
        const expiresAt = now + TTL_MS;
        result = { ok: true, code: null, scope: SCOPE, epoch, leaseId: `${SCOPE}#${epoch}`, holder, expiresAt };
        return { epoch, lease: { holder, expiresAt } };
      });
      return result;
    },
    async current() {
      let s = null;
      await store.update(key, (record) => {
        s = record;
        return null;
      });
      return { scope: SCOPE, epoch: s?.epoch ?? 0, lease: s?.lease ?? null };
    },
  };
}
