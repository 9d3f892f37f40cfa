// One process of the guard race (tests/js/guard/postgres.test.mjs): `count` fenced
// transactions with the current token on orders/1 and on its own key, each adding 1
// to the protected row; prints the outcomes as JSON.
import pg from 'pg';
import { Gate } from '../../../pkg/node.mjs';
import { PostgresStore as OwnStore } from '../../../pkg/adapters/postgres.mjs';

const [, , url, id, count, token] = process.argv;
const pool = new pg.Pool({ connectionString: url, max: 2 });
const gate = new Gate(new OwnStore(pool), { stateCache: 0, maxRetries: 50 });
const out = { ok: 0, refused: [] };
for (let i = 0; i < Number(count); i++) {
  for (const row of [1, Number(id)]) {
    try {
      const v = await gate.transaction(`orders/${row}`, Number(token), (c) => c.query('UPDATE orders SET n = n + 1 WHERE id = $1', [row]));
      if (v.ok && v.result.rowCount === 1) out.ok++;
      else out.refused.push(v.code ?? v.outcome);
    } catch (e) {
      out.refused.push(`${e.code}: ${e.message}`);
    }
  }
}
await pool.end();
process.stdout.write(JSON.stringify(out));
