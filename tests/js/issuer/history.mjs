// Checks an issuer history (events from any number of processes) against the
// issuer's contract, in the issuer's own time (the `now` each call passed):
//   * every epoch is granted once (replays aside), per scope 1, 2, 3, … with no repeats;
//   * each holder (worker) sees its epochs of a scope strictly increase;
//   * at most one live lease per scope at any instant: lease e lives from its
//     grant's `now` to its last committed expiry; lease e+1 is granted only at
//     or after that expiry, unless e was released first;
//   * renewals and releases that succeeded name the scope's newest lease at the time,
//     by its lease id, for its holder; every granted lease id is distinct (issue 20).
// Returns { grants, scopes } and throws an AssertionError naming the first violation.
import assert from 'node:assert/strict';

export function checkHistory(events, { contiguous = false } = {}) {
  const byScope = new Map();
  const scopeOf = (scope) => {
    let s = byScope.get(scope);
    if (!s) byScope.set(scope, (s = { leases: new Map() }));
    return s;
  };
  const lastSeen = new Map(); // `${w}/${scope}` → last epoch this worker was granted
  let grants = 0;
  const leaseIds = new Set();
  for (const e of events) {
    if (!e.ok) continue;
    const s = scopeOf(e.scope);
    if (e.op === 'acquire' && !e.replayed) {
      grants += 1;
      assert.ok(!s.leases.has(e.epoch), `${e.scope}: epoch ${e.epoch} granted twice (${e.holder} and ${s.leases.get(e.epoch)?.holder})`);
      s.leases.set(e.epoch, { holder: e.holder, leaseId: e.leaseId, start: e.now, end: e.expiresAt, released: false });
      assert.ok(!leaseIds.has(e.leaseId), `lease id ${e.leaseId} granted twice`);
      leaseIds.add(e.leaseId);
      const k = `${e.w}/${e.scope}`;
      assert.ok(!lastSeen.has(k) || lastSeen.get(k) < e.epoch, `${k}: epoch went from ${lastSeen.get(k)} to ${e.epoch}`);
      lastSeen.set(k, e.epoch);
    }
  }
  for (const e of events) {
    if (!e.ok) continue;
    const s = scopeOf(e.scope);
    if (e.op === 'renew') {
      const l = s.leases.get(e.epoch);
      assert.ok(l, `${e.scope}: renewed epoch ${e.epoch} was never granted`);
      assert.equal(l.holder, e.holder);
      assert.equal(l.leaseId, e.leaseId);
      l.end = Math.max(l.end, e.expiresAt);
    } else if (e.op === 'release' && e.released) {
      const l = s.leases.get(e.epoch);
      assert.ok(l, `${e.scope}: released epoch ${e.epoch} was never granted`);
      assert.equal(e.leaseId, l.leaseId);
      l.released = true;
    }
  }
  for (const [scope, s] of byScope) {
    const epochs = [...s.leases.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    if (epochs.length === 0) continue;
    // No gaps when nothing failed; at least: no repeats and starting above 0.
    assert.ok(epochs[0] >= 1);
    if (contiguous) {
      assert.deepEqual(epochs, epochs.map((_, i) => epochs[0] + i), `${scope}: epochs are not contiguous`);
    }
    for (let i = 1; i < epochs.length; i++) {
      const prev = s.leases.get(epochs[i - 1]);
      const next = s.leases.get(epochs[i]);
      assert.ok(epochs[i] > epochs[i - 1]);
      assert.ok(
        prev.released || next.start >= prev.end,
        `${scope}: epoch ${epochs[i]} (${next.holder}) granted at ${next.start} while epoch ${epochs[i - 1]} (${prev.holder}) was live until ${prev.end}`,
      );
    }
  }
  return { grants, scopes: byScope.size };
}
