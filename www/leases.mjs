// The demo's lease issuer: fencegate's `Issuer` over the same IndexedDB store
// as the gate (its record is `issuer:leader`; resource records use their own keys).
// It hands out epochs 1, 2, 3, … per acquisition, one live lease at a time, and
// commits each epoch before returning it (DESIGN R8).

export const SCOPE = 'leader';
export const TTL_MS = 10_000;

/** `{ label, acquire(holder, now), current(), recovery }` over `store` (an IdbStore). */
export function makeIssuer(mod, store) {
  const issuer = new mod.Issuer(store);
  const key = issuer.keyOf(SCOPE);
  return {
    label: "fencegate's Issuer (epochs persisted in IndexedDB)",
    acquire: (holder, now) => issuer.acquire({ scope: SCOPE, holder, ttlMs: TTL_MS, now }),
    current: () => issuer.current(SCOPE),
    // Recovery (R11): the page shows its controls only when this build's Issuer has `raise`.
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
