// The own-data verbs on PostgreSQL for the guard tests, per docs own-data contract:
// fencedTransaction(key, step) on one pooled connection (BEGIN, locked read, fence write
// BEFORE the caller's statements, COMMIT) and fenceIn(client, key, step) on the caller's
// client. PostgresStore's own verbs are used instead where the adapter has them.
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';

async function fence(q, key, step, t = 'fencegate') {
  const { rows } = await q(`SELECT state FROM "${t}" WHERE key = $1 FOR UPDATE`, [key]);
  const plan = step.decide(rows.length === 0 ? null : rows[0].state);
  if (plan === null) return null;
  const r = rows.length === 0
    ? await q(`INSERT INTO "${t}" (key, state, value, version) VALUES ($1, $2, NULL, 1) RETURNING version::text AS version`, [key, plan.nextStateText])
    : await q(`UPDATE "${t}" SET state = $2, version = version + 1 WHERE key = $1 RETURNING version::text AS version`, [key, plan.nextStateText]);
  return r.rows[0].version;
}

export function pgOwnStore(pool, table = 'fencegate') {
  const store = new PostgresStore(pool, { table });
  if (typeof store.fencedTransaction === 'function') return store;
  store.fencedTransaction = async (key, step) => {
    const c = await pool.connect();
    const q = (text, values) => c.query(text, values);
    try {
      await q('BEGIN');
      const version = await fence(q, key, step, table);
      if (version === null) {
        await q('ROLLBACK');
        return null;
      }
      await step.run(c);
      await q('COMMIT');
      return { version };
    } catch (e) {
      await q('ROLLBACK').catch(() => {});
      if (['40001', '40P01'].includes(e?.code)) e.conflict = true;
      throw e;
    } finally {
      c.release();
    }
  };
  store.fenceIn = async (client, key, step) => {
    await fence((t, v) => client.query(t, v), key, step, table);
  };
  return store;
}
