// One OS process of the bank-transfer race (bank-race.test.mjs): its own connection, one
// token (its epoch), OPS transfers between the accounts with gate.transaction on one fence
// key; each transfer records itself (worker, op, token) in `transfers` inside the same
// transaction. Sends back every op's outcome: the verdict (ok or refused) or the error code.
import { Gate } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { PostgresStore } from '../../../pkg/adapters/postgres.mjs';
import { MysqlStore } from '../../../pkg/adapters/mysql.mjs';
import { openSqlite, pgPool, mysqlPool } from '../stores/targets.mjs';

process.once('message', async ({ engine, file, table, worker, token, ops, accounts, delayMs, paceMs, seed }) => {
  let s = seed;
  const random = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  let gate;
  let body;
  let close;
  const pick = () => {
    const src = 1 + Math.floor(random() * accounts);
    const dst = 1 + ((src + Math.floor(random() * (accounts - 1))) % accounts);
    return [src, dst, 1 + Math.floor(random() * 50)];
  };
  if (engine === 'sqlite') {
    const db = openSqlite(file);
    gate = new Gate(new SqliteStore(db, { table }), { maxRetries: 100 });
    const move = db.prepare('UPDATE accounts SET balance = balance + ? WHERE id = ?');
    const log = db.prepare('INSERT INTO transfers (worker, op, token, src, dst, amount) VALUES (?, ?, ?, ?, ?, ?)');
    body = (i, [src, dst, amt]) => () => {
      move.run(-amt, src);
      move.run(amt, dst);
      log.run(worker, i, token, src, dst, amt);
      return amt;
    };
    close = async () => db.close();
  } else if (engine === 'mysql') {
    const pool = await mysqlPool();
    gate = new Gate(new MysqlStore(pool, { table }), { maxRetries: 100 });
    body = (i, [src, dst, amt]) => async (c) => {
      await c.execute('UPDATE accounts SET balance = balance + ? WHERE id = ?', [-amt, src]);
      await c.execute('UPDATE accounts SET balance = balance + ? WHERE id = ?', [amt, dst]);
      await c.execute('INSERT INTO transfers (worker, op, token, src, dst, amount) VALUES (?, ?, ?, ?, ?, ?)', [worker, i, token, src, dst, amt]);
      return amt;
    };
    close = () => pool.end();
  } else {
    const pool = await pgPool();
    gate = new Gate(new PostgresStore(pool, { table }), { maxRetries: 100 });
    body = (i, [src, dst, amt]) => async (c) => {
      await c.query('UPDATE accounts SET balance = balance + $1 WHERE id = $2', [-amt, src]);
      await c.query('UPDATE accounts SET balance = balance + $1 WHERE id = $2', [amt, dst]);
      await c.query('INSERT INTO transfers (worker, op, token, src, dst, amount) VALUES ($1, $2, $3, $4, $5, $6)', [worker, i, token, src, dst, amt]);
      return amt;
    };
    close = () => pool.end();
  }
  process.send({ ready: true });
  await new Promise((r) => process.once('message', r)); // go
  if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
  const outcomes = [];
  for (let i = 0; i < ops; i++) {
    if (paceMs > 0) await new Promise((r) => setTimeout(r, paceMs));
    const t = pick();
    try {
      const v = await gate.transaction('bank/ledger', token, body(i, t), { opId: `w${worker}-${i}` });
      outcomes.push({ i, ok: v.ok && v.outcome !== 'duplicate', outcome: v.outcome, code: v.code, result: v.result ?? null });
    } catch (e) {
      outcomes.push({ i, ok: false, error: e.code ?? String(e) });
    }
  }
  await close();
  process.send({ outcomes });
  process.disconnect();
});
