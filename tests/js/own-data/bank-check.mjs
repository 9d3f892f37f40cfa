// The bank-transfer race's plan and its checks, for the engines whose race runs outside
// bank-race.test.mjs (Durable Objects, IndexedDB, Deno KV, etcd): writers move money between
// accounts kept in the caller's own data with gate.transaction on one fence key
// ('bank/ledger'), half of them with epoch 10 and, a little later, half with epoch 20, so the
// epoch-10 writers go on after the newer epoch started. Each transfer records itself
// (worker, op, token) with its place in commit order (`seq`) in the same transaction.

/** The writers: the epoch-10 ones pace their transfers, so they are still going when epoch 20 starts. */
export function bankPlan({ perEpoch = 2, staleDelayMs = 0, freshDelayMs = 250, paceMs = 10 } = {}) {
  return [
    ...Array.from({ length: perEpoch }, () => ({ token: 10, delayMs: staleDelayMs, paceMs })),
    ...Array.from({ length: perEpoch }, (_, i) => ({ token: 20, delayMs: freshDelayMs + i * 50, paceMs: 0 })),
  ];
}

/** A seeded random source and the transfers it picks: `[src, dst, amount]`, src ≠ dst, accounts 1..n. */
export function transfers(seed, accounts) {
  let s = seed;
  const random = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  return {
    random,
    next() {
      const src = 1 + Math.floor(random() * accounts);
      const dst = 1 + ((src + Math.floor(random() * (accounts - 1))) % accounts);
      return [src, dst, 1 + Math.floor(random() * 50)];
    },
  };
}

/**
 * Checks one race, with `assert` (node:assert/strict):
 *   - `balances` (every account's balance after) sum to `accounts × start`;
 *   - `rows` (the transfers recorded in the caller's data: { worker, op, token, seq }) hold each
 *     (worker, op) at most once, and seq is 1..rows.length (one commit order, nothing lost);
 *   - every acknowledged transfer (outcome ok) is there, with its writer's token; every refused
 *     or failed one is absent; every refusal is `refusal` (the STALE_TOKEN reject) of an epoch-10
 *     writer; `maxErrors` failures (not verdicts) at most;
 *   - no epoch-10 transfer committed after the first epoch-20 one, and both epochs applied and
 *     the epoch-10 writers were refused;
 *   - in commit order the writer changes at least once per writer (they raced, not one after
 *     another).
 * `outcomes[w]` is writer w's list of `{ i, ok, outcome, code }` or `{ i, ok: false, error, message? }`.
 * Returns `{ acked, refused, errors, stale, fresh, switches }`.
 */
export function checkBank(assert, { plan, outcomes, rows, balances, accounts, start, maxErrors = 0, refusal = ['reject', 'STALE_TOKEN'] }) {
  assert.equal(balances.length, accounts);
  assert.equal(balances.reduce((a, b) => a + Number(b), 0), accounts * start, 'the sum of the balances is unchanged');
  const seen = new Map();
  for (const r of rows) {
    const k = `${r.worker}/${r.op}`;
    assert.ok(!seen.has(k), `transfer ${k} is in the caller's data twice`);
    seen.set(k, r);
  }
  assert.deepEqual(rows.map((r) => Number(r.seq)).sort((a, b) => a - b), rows.map((_, i) => i + 1), 'one commit order, no transfer lost or doubled');
  let acked = 0;
  let refused = 0;
  const errors = [];
  for (const [w, list] of outcomes.entries()) {
    for (const o of list) {
      const row = seen.get(`${w}/${o.i}`);
      if (o.ok) {
        acked++;
        assert.ok(row, `acknowledged transfer ${w}/${o.i} is missing`);
        assert.equal(Number(row.token), plan[w].token);
      } else {
        assert.equal(row, undefined, `refused transfer ${w}/${o.i} (${o.code ?? o.error}) is in the caller's data`);
        if (o.error === undefined) {
          refused++;
          assert.deepEqual([o.outcome, o.code], refusal);
          assert.equal(plan[w].token, 10);
        } else errors.push(o.message === undefined ? o.error : `${o.error}: ${o.message}`);
      }
    }
  }
  assert.ok(errors.length <= maxErrors, `failures: ${JSON.stringify(errors)}`);
  assert.equal(rows.length, acked, 'every transfer in the caller\'s data is an acknowledged one');
  const stale = rows.filter((r) => Number(r.token) === 10).map((r) => Number(r.seq));
  const fresh = rows.filter((r) => Number(r.token) === 20).map((r) => Number(r.seq));
  assert.ok(fresh.length > 0 && stale.length > 0, `both epochs applied: ${stale.length} at 10, ${fresh.length} at 20`);
  assert.ok(Math.max(...stale) < Math.min(...fresh), 'no epoch-10 transfer committed after the first epoch-20 one');
  assert.ok(refused > 0, 'the epoch-10 writers went on after epoch 20 and were refused');
  // in commit order, how often the next transfer is another writer's: the writers really raced
  const order = [...rows].sort((a, b) => Number(a.seq) - Number(b.seq));
  const switches = order.filter((r, i) => i > 0 && r.worker !== order[i - 1].worker).length;
  assert.ok(switches >= plan.length, `the writers' commits interleave: ${switches} changes of writer in commit order`);
  return { acked, refused, errors: errors.length, stale: stale.length, fresh: fresh.length, switches };
}
