// The main job, part 3: fencing your own data. A real SQLite `orders` table that
// fencegate does not own; the fence row lives beside it in fencegate's table. The
// leader's UPDATE runs inside gate.transaction: the token check, the fence row and
// the caller's UPDATE commit in one IMMEDIATE transaction, or nothing does.
// A paused old leader wakes up and sends its refund: refused, and its UPDATE never
// runs. A retry with the same op id after a lost reply does not apply twice.
// Prints each step and exits non-zero on any deviation.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Gate } from 'fencegate';
import { SqliteStore } from 'fencegate/sqlite';

const file = join(mkdtempSync(join(tmpdir(), 'fencegate-orders-')), 'shop.db');
const db = new Database(file);
db.pragma('journal_mode = WAL');
db.exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL, refunds INTEGER NOT NULL DEFAULT 0);
         INSERT INTO orders (id, status) VALUES (42, 'paid');`);
console.log(`your own table: orders in SQLite file ${file}\n`);

const gate = new Gate(new SqliteStore(db));
const order = () => db.prepare('SELECT id, status, refunds FROM orders WHERE id = 42').get();

let failures = 0;
let step = 0;
function expect(label, actual, expected) {
  const ok = JSON.stringify(actual) === JSON.stringify(expected);
  step += 1;
  console.log(`${String(step).padStart(2)}. ${ok ? 'ok  ' : 'FAIL'} ${label}`);
  if (!ok) {
    failures += 1;
    console.log(`      expected ${JSON.stringify(expected)}\n      actual   ${JSON.stringify(actual)}`);
  }
}

// The caller's own statement, exactly as it would be written without fencegate.
const setStatus = (status) => (tx) => tx.prepare('UPDATE orders SET status = ? WHERE id = 42').run(status).changes;
const refund = (tx) => tx.prepare("UPDATE orders SET status = 'refunded', refunds = refunds + 1 WHERE id = 42").run().changes;

// Leader A holds epoch 33 and starts a refund… then pauses (GC, VM stall) before sending it.
let v = await gate.transaction('orders/42', 33, setStatus('refund-requested'));
expect(`leader A (epoch 33) marks the order: ${v.outcome} (mark ${v.markBefore} → ${v.markAfter})`, [v.outcome, order().status], ['advance', 'refund-requested']);

// A's lease expires; leader B gets epoch 34, fences A out and ships the order instead.
v = await gate.transaction('orders/42', 34, setStatus('shipped'));
expect(`leader B (epoch 34) ships it: ${v.outcome} (mark ${v.markBefore} → ${v.markAfter})`, [v.outcome, v.markAfter, order()], ['advance', 34, { id: 42, status: 'shipped', refunds: 0 }]);

// A wakes up and sends its UPDATE: refused inside the transaction; the statement never runs.
let ran = false;
v = await gate.transaction('orders/42', 33, (tx) => { ran = true; return refund(tx); });
expect(`zombie A (epoch 33) sends the refund: ${v.outcome} ${v.code}; its UPDATE ran: ${ran}`, [v.outcome, v.code, ran, order()], ['reject', 'STALE_TOKEN', false, { id: 42, status: 'shipped', refunds: 0 }]);

// B refunds with an op id; the reply is "lost", B retries with the same op id: applied once.
v = await gate.transaction('orders/42', 34, refund, { opId: 'refund-42-1' });
expect(`leader B refunds (op id refund-42-1): ${v.outcome}, rows changed ${v.result}`, [v.outcome, v.result, order().refunds], ['accept', 1, 1]);
v = await gate.transaction('orders/42', 34, refund, { opId: 'refund-42-1' });
expect(`B retries after a lost reply, same op id: ${v.outcome} (original ${v.original}); refunds still 1`, [v.outcome, v.original, order().refunds], ['duplicate', 'accept', 1]);

// Inside a transaction you already have: fenceInSync throws on a refusal, so better-sqlite3 rolls back.
const refundIn = db.transaction((token) => {
  gate.fenceInSync(db, 'orders/42', token);
  return refund(db);
});
let code = null;
try {
  refundIn.immediate(33);
} catch (e) {
  code = e.code;
}
expect(`zombie A inside its own db.transaction (fenceInSync): thrown ${code}, rolled back`, [code, order()], ['STALE_TOKEN', { id: 42, status: 'refunded', refunds: 1 }]);

// The statement itself fails: the whole transaction rolls back, the mark stays.
let failed = null;
try {
  await gate.transaction('orders/42', 35, (tx) => { setStatus('closed')(tx); tx.prepare('UPDATE no_such_table SET x = 1').run(); });
} catch (e) {
  failed = e.code;
}
expect(`a statement that fails (epoch 35): ${failed}; mark still 34, status still refunded`, [failed, await gate.mark('orders/42'), order().status], ['CALLBACK_FAILED', 34, 'refunded']);

db.close();
const again = new Database(file);
const reopened = new Gate(new SqliteStore(again));
expect('after a reopen: the mark and the order as committed', [await reopened.mark('orders/42'), again.prepare('SELECT status, refunds FROM orders WHERE id = 42').get()], [34, { status: 'refunded', refunds: 1 }]);
again.close();

console.log(failures === 0 ? `\norders scenario: all ${step} steps as expected` : `\norders scenario: ${failures} of ${step} steps FAILED`);
process.exit(failures === 0 ? 0 : 1);
