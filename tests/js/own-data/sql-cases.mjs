// The own-data cases of a network SQL engine (sql-engines.mjs), mirroring
// sqlite.test.mjs: Gate.transaction (advance, accept, stale refused without
// running the statements, a throwing body rolled back, one application per op
// id, bad bodies), fenceIn inside the caller's own BEGIN … COMMIT, the state
// cache, and a concurrent race under each isolation level. Exact verdicts,
// the caller's rows and the fence row after each case.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { tableName } from './sql-engines.mjs';

export function ownDataCases(engine) {
  describe(`own data on ${engine.name}`, { skip: engine.skip }, () => {
    let client;
    let orders;
    let fence;
    let store;
    const q = (text, params) => engine.query(client, text, params);
    const p = engine.ph;
    const K = engine.keyColumn;
    const dump = async () => JSON.stringify(await q(`SELECT id, status FROM ${orders} ORDER BY id`));
    const status = async (id) => (await q(`SELECT status FROM ${orders} WHERE id = ${p(1)}`, [id]))[0].status;
    const fenceRow = async (key) => {
      const rows = await q(`SELECT state, value, CAST(version AS CHAR(20)) AS version FROM ${fence} WHERE ${K} = ${p(1)}`, [key]);
      return rows.length === 0 ? null : { ...rows[0], version: String(rows[0].version).trim() };
    };
    /** The body: one UPDATE of the caller's row, answering the rows it changed. */
    const setStatus = (s, id = 42) => async (tx) => (await engine.exec(tx, `UPDATE ${orders} SET status = ${p(1)} WHERE id = ${p(2)}`, [s, id])).count;
    const key = (() => {
      let i = 0;
      return (name) => `${name}/${i++}`;
    })();

    before(async () => {
      client = await engine.connect();
      orders = tableName('orders');
      fence = tableName('fence');
      await q(`CREATE TABLE ${orders} (id INTEGER PRIMARY KEY, status VARCHAR(200) NOT NULL)`);
      store = await new engine.Store(client, { table: fence }).init();
    });
    after(async () => {
      await q(`DROP TABLE IF EXISTS ${orders}`);
      await q(`DROP TABLE IF EXISTS ${fence}`);
      await engine.end(client);
    });
    const reset = async () => {
      await q(`DELETE FROM ${orders}`);
      await q(`INSERT INTO ${orders} (id, status) VALUES (42, 'new'), (43, 'new')`);
    };

    for (const stateCache of [0, 1024]) {
      test(`transaction (stateCache ${stateCache}): advance, accept, stale refused without running the statements`, async () => {
        await reset();
        const k = key('orders');
        const gate = new Gate(store, { stateCache });
        let calls = 0;
        const counted = (s) => (tx) => {
          calls++;
          return setStatus(s)(tx);
        };
        assert.deepEqual(await gate.transaction(k, 33, counted('paid')), {
          key: k, ok: true, outcome: 'advance', code: null, token: 33, markBefore: 0, markAfter: 33, result: 1,
        });
        assert.deepEqual(await gate.transaction(k, 34, counted('shipped')), {
          key: k, ok: true, outcome: 'advance', code: null, token: 34, markBefore: 33, markAfter: 34, result: 1,
        });
        assert.deepEqual(await gate.transaction(k, 34, counted('shipped-2')), {
          key: k, ok: true, outcome: 'accept', code: null, token: 34, markBefore: 34, markAfter: 34, result: 1,
        });
        const before = await dump();
        const row = await fenceRow(k);
        assert.deepEqual(await gate.transaction(k, 33, counted('refunded')), {
          key: k, ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 33, markBefore: 34, markAfter: 34,
        });
        assert.equal(calls, 3);
        assert.equal(await dump(), before);
        assert.deepEqual(await fenceRow(k), row);
        assert.equal(await status(42), 'shipped-2');
        assert.equal(await gate.mark(k), 34);
        assert.deepEqual(await fenceRow(k), { state: '{"v":1,"mark":"34"}', value: null, version: '3' });
      });
    }

    test('transaction: a throwing body rolls back (CALLBACK_FAILED, cause kept), mark, fence row and rows as before', async () => {
      await reset();
      const k = key('orders');
      const gate = new Gate(store);
      await gate.transaction(k, 5, setStatus('paid'));
      const before = await dump();
      const row = await fenceRow(k);
      const boom = new Error('no such column: stauts');
      const err = await gate
        .transaction(k, 6, async (tx) => {
          await setStatus('half-done')(tx);
          throw boom;
        })
        .catch((e) => e);
      assert.ok(err instanceof FencegateError);
      assert.equal(err.code, 'CALLBACK_FAILED');
      assert.equal(err.cause, boom);
      assert.equal(err.key, k);
      assert.deepEqual(err.verdict, { key: k, ok: true, outcome: 'advance', code: null, token: 6, markBefore: 5, markAfter: 6 });
      // a statement the engine refuses: the same, its own error as the cause
      const bad = await gate.transaction(k, 7, (tx) => engine.exec(tx, `UPDATE ${orders} SET stauts = 'x'`)).catch((e) => e);
      assert.equal(bad.code, 'CALLBACK_FAILED');
      assert.ok(bad.cause instanceof Error && /stauts/.test(bad.cause.message), String(bad.cause));
      assert.equal(await dump(), before);
      assert.deepEqual(await fenceRow(k), row);
      assert.deepEqual(row, { state: '{"v":1,"mark":"5"}', value: null, version: '1' });
      assert.equal(await gate.mark(k), 5);
    });

    for (const stateCache of [0, 1024]) {
      test(`transaction (stateCache ${stateCache}): a body that ends the transaction itself is never reported as applied (INVALID_ARGUMENT); ROLLBACK TO SAVEPOINT is not an end`, async () => {
        const mysql = engine.Store.name === 'MysqlStore';
        const BEGIN = mysql ? 'START TRANSACTION' : 'BEGIN';
        const statusOf = async () => status(42);
        const cases = [
          // [statements, what the body committed itself: the mark after and the row after]
          [['ROLLBACK'], 'rolled back'],
          [["UPDATE ORDERS SET status = 'before-commit' WHERE id = 42", 'COMMIT'], 'committed'],
          [["UPDATE ORDERS SET status = 'before-commit' WHERE id = 42", 'COMMIT', BEGIN, "UPDATE ORDERS SET status = 'after-begin' WHERE id = 42"], 'committed'],
          ...(mysql ? [[["UPDATE ORDERS SET status = 'before-commit' WHERE id = 42", 'CREATE TABLE IF NOT EXISTS fg_implicit_commit (i INT)'], 'committed']] : []),
        ];
        let token = 10;
        for (const [statements, ends] of cases) {
          await reset();
          const k = key('orders');
          const gate = new Gate(store, { stateCache });
          assert.equal((await gate.transaction(k, 5, setStatus('paid'))).outcome, 'advance');
          token++;
          const e = await gate
            .transaction(k, token, async (tx) => {
              for (const text of statements) await engine.exec(tx, text.replace('ORDERS', orders));
            })
            .catch((x) => x);
          assert.ok(e instanceof FencegateError, `${statements}: ${e && e.code} ${e && e.message}`);
          assert.equal(e.code, 'INVALID_ARGUMENT', String(statements));
          assert.match(e.message, /ended the transaction itself/);
          // what the body's own COMMIT committed stays (the fence row with it); the rest is rolled back
          assert.equal(await statusOf(), ends === 'committed' ? 'before-commit' : 'paid', String(statements));
          assert.equal(await new Gate(store, { stateCache: 0 }).mark(k), ends === 'committed' ? token : 5, String(statements));
        }
        await q('DROP TABLE IF EXISTS fg_implicit_commit');
        // a savepoint rolled back inside the body keeps the transaction: applied
        await reset();
        const k = key('orders');
        const gate = new Gate(store, { stateCache });
        const v = await gate.transaction(k, 5, async (tx) => {
          await engine.exec(tx, `UPDATE ${orders} SET status = 'kept' WHERE id = 42`);
          await engine.exec(tx, 'SAVEPOINT fg_sp');
          await engine.exec(tx, `UPDATE ${orders} SET status = 'undone' WHERE id = 43`);
          await engine.exec(tx, 'ROLLBACK TO SAVEPOINT fg_sp');
          return 'done';
        });
        assert.deepEqual([v.ok, v.outcome, v.result], [true, 'advance', 'done']);
        assert.deepEqual([await status(42), await status(43)], ['kept', 'new']);
      });
    }

    test('transaction: the same op id applies once (duplicate: the statements do not run again)', async () => {
      await reset();
      const k = key('orders');
      const gate = new Gate(store);
      let calls = 0;
      const inc = async (tx) => {
        calls++;
        return (await engine.exec(tx, `UPDATE ${orders} SET status = CONCAT(status, '+') WHERE id = 43`)).count;
      };
      assert.deepEqual(await gate.transaction(k, 7, inc, { opId: 'refund-1' }), {
        key: k, ok: true, outcome: 'advance', code: null, token: 7, markBefore: 0, markAfter: 7, result: 1,
      });
      const row = await fenceRow(k);
      // another gate (another process) too: the op id is in the fence row
      for (const g of [gate, new Gate(store, { stateCache: 0 })]) {
        assert.deepEqual(await g.transaction(k, 7, inc, { opId: 'refund-1' }), {
          key: k, ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 7, markBefore: 7, markAfter: 7,
        });
      }
      assert.equal(calls, 1);
      assert.equal(await status(43), 'new+');
      assert.deepEqual(await fenceRow(k), row);
    });

    test('transaction: bad bodies are INVALID_ARGUMENT, a malformed token MALFORMED_TOKEN; nothing written', async () => {
      await reset();
      const k = key('orders');
      const gate = new Gate(store);
      const before = await dump();
      for (const body of [undefined, null, 'UPDATE orders SET status = 1', [['x']], {}]) {
        const e = await gate.transaction(k, 1, body).catch((x) => x);
        assert.ok(e instanceof FencegateError, String(body));
        assert.equal(e.code, 'INVALID_ARGUMENT', String(body));
      }
      let calls = 0;
      assert.deepEqual(await gate.transaction(k, 0, () => calls++), {
        key: k, ok: false, outcome: 'reject', code: 'MALFORMED_TOKEN', token: null, markBefore: 0, markAfter: 0,
      });
      assert.equal(calls, 0);
      assert.equal(await dump(), before);
      assert.equal(await fenceRow(k), null);
    });

    test('fenceIn inside the caller\'s BEGIN … COMMIT: applies with the caller\'s UPDATE; stale and duplicate throw and the caller rolls back', async () => {
      await reset();
      const k = key('orders');
      const gate = new Gate(store);
      const refund = (token, s, options) =>
        engine.manual(client, async (tx) => {
          const v = await gate.fenceIn(tx, k, token, options);
          await setStatus(s)(tx);
          return v;
        });
      assert.deepEqual(await refund(9, 'refunded'), { key: k, ok: true, outcome: 'advance', code: null, token: 9, markBefore: 0, markAfter: 9 });
      assert.equal(await status(42), 'refunded');
      assert.deepEqual(await fenceRow(k), { state: '{"v":1,"mark":"9"}', value: null, version: '1' });
      const before = await dump();
      const thrown = await refund(8, 'zombie').catch((e) => e);
      assert.ok(thrown instanceof FencegateError);
      assert.equal(thrown.code, 'STALE_TOKEN');
      assert.equal(thrown.mark, 9);
      assert.deepEqual(thrown.verdict, { key: k, ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 8, markBefore: 9, markAfter: 9 });
      assert.equal(await dump(), before);
      assert.deepEqual(await refund(10, 'again', { opId: 'o-1' }), { key: k, ok: true, outcome: 'advance', code: null, token: 10, markBefore: 9, markAfter: 10 });
      const dup = await refund(10, 'twice', { opId: 'o-1' }).catch((e) => e);
      assert.equal(dup.code, 'DUPLICATE_OPERATION');
      assert.equal(dup.verdict.outcome, 'duplicate');
      assert.equal(await status(42), 'again');
      assert.equal(await gate.mark(k), 10);
      // a transaction the caller rolls back after fenceIn applied: the fence row rolls back with it
      const row = await fenceRow(k);
      const t = await engine.open(client);
      assert.equal((await gate.fenceIn(t.handle, k, 11)).outcome, 'advance');
      await t.rollback();
      assert.deepEqual(await fenceRow(k), row);
      assert.equal(await gate.mark(k), 10);
    });

    test('fenceIn holds the fence row\'s lock: a second caller\'s fenceIn waits for the first commit, then decides on it', async () => {
      const k = key('orders');
      const gate = new Gate(store);
      const t1 = await engine.open(client);
      assert.equal((await gate.fenceIn(t1.handle, k, 5)).outcome, 'advance');
      await t1.commit();
      const a = await engine.open(client);
      assert.deepEqual(await gate.fenceIn(a.handle, k, 6), { key: k, ok: true, outcome: 'advance', code: null, token: 6, markBefore: 5, markAfter: 6 });
      let settled = false;
      const b = await engine.open(client);
      const second = new Gate(store).fenceIn(b.handle, k, 6).then(
        (v) => ((settled = true), v),
        (e) => ((settled = true), e),
      );
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(settled, false, 'the second fenceIn waited for the row lock');
      await a.commit();
      // after the first commit it sees mark 6 (accept at 6), on the row the first wrote
      assert.deepEqual(await second, { key: k, ok: true, outcome: 'accept', code: null, token: 6, markBefore: 6, markAfter: 6 });
      await b.commit();
      assert.deepEqual(await fenceRow(k), { state: '{"v":1,"mark":"6"}', value: null, version: '3' });
    });

    test('fenceIn refuses a pool and a handle outside a transaction (INVALID_ARGUMENT, nothing written)', async () => {
      const k = key('orders');
      const gate = new Gate(store);
      const pooled = await gate.fenceIn(client, k, 1).catch((e) => e);
      assert.ok(pooled instanceof FencegateError);
      assert.equal(pooled.code, 'INVALID_ARGUMENT');
      for (const bad of [null, 42, {}, () => {}]) {
        assert.equal((await gate.fenceIn(bad, k, 1).catch((e) => e)).code, 'INVALID_ARGUMENT', String(bad));
      }
      const outside = await engine.idle(client, (h) => gate.fenceIn(h, k, 1).catch((e) => e));
      assert.equal(outside.code, 'INVALID_ARGUMENT', outside.message);
      assert.match(outside.message, /no transaction is open/);
      assert.equal(await fenceRow(k), null);
    });

    test('transaction with the state cache: another process\'s newer epoch is seen (the cached precondition fails, the row is read)', async () => {
      await reset();
      const k = key('orders');
      const a = new Gate(store, { stateCache: 64 });
      const b = new Gate(new engine.Store(client, { table: fence }), { stateCache: 0 });
      assert.equal((await a.transaction(k, 10, setStatus('a10'))).outcome, 'advance');
      assert.equal((await b.transaction(k, 11, setStatus('b11'))).outcome, 'advance');
      assert.deepEqual(await a.transaction(k, 10, setStatus('zombie')), {
        key: k, ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 10, markBefore: 11, markAfter: 11,
      });
      assert.equal(await status(42), 'b11');
      assert.deepEqual(await a.transaction(k, 11, setStatus('a11')), {
        key: k, ok: true, outcome: 'accept', code: null, token: 11, markBefore: 11, markAfter: 11, result: 1,
      });
      assert.equal(await status(42), 'a11');
      assert.deepEqual(await fenceRow(k), { state: '{"v":1,"mark":"11"}', value: null, version: '3' });
    });

    for (const level of ['read committed', 'repeatable read', 'serializable']) {
      for (const stateCache of [0, 64]) {
        test(`concurrent transactions under ${level.toUpperCase()} (stateCache ${stateCache}): one chain of advances, no lost update of the caller's counter`, async () => {
          const c = await engine.connect(level);
          try {
            const s = new engine.Store(c, { table: fence, ...engine.storeOptions(level) });
            const k = key('counter');
            const id = 1000 + Math.floor(Math.random() * 1e6);
            await q(`INSERT INTO ${orders} (id, status) VALUES (${p(1)}, '0')`, [id]);
            const tokens = [3, 9, 1, 7, 12, 2, 8, 4, 11, 6, 5, 10, 12, 9];
            const ran = [];
            // one gate per writer, as separate processes; each body is a read-modify-write of one row
            const vs = await Promise.all(
              tokens.map((tok) =>
                new Gate(s, { maxRetries: 200, stateCache }).transaction(k, tok, async (tx) => {
                  const { rows } = await engine.exec(tx, `SELECT status FROM ${orders} WHERE id = ${p(1)}`, [id]);
                  const n = Number(rows[0].status);
                  await engine.exec(tx, `UPDATE ${orders} SET status = ${p(1)} WHERE id = ${p(2)}`, [String(n + 1), id]);
                  ran.push(tok);
                  return n + 1;
                }),
              ),
            );
            const applied = vs.filter((v) => v.ok);
            const advances = applied.filter((v) => v.outcome === 'advance').sort((x, y) => x.markAfter - y.markAfter);
            let mark = 0;
            const all = JSON.stringify(vs);
            for (const v of advances) {
              assert.equal(v.markBefore, mark, `${all} advance to ${v.markAfter} started from ${v.markBefore}, the chain was at ${mark}`);
              mark = v.markAfter;
            }
            assert.equal(mark, 12, all);
            for (const v of vs.filter((x) => !x.ok)) {
              assert.deepEqual([v.outcome, v.code], ['reject', 'STALE_TOKEN']);
              assert.ok(v.markBefore > v.token);
            }
            for (const v of applied.filter((x) => x.outcome === 'accept')) assert.deepEqual([v.token, v.markAfter], [v.markBefore, v.markBefore], all); // an accept is at the mark
            // every committed body saw the one before it: results are 1..applied, the row holds the count
            assert.deepEqual(applied.map((v) => v.result).sort((x, y) => x - y), applied.map((_, i) => i + 1));
            assert.equal(await status(id), String(applied.length));
            assert.equal(await gate0(s).mark(k), 12, `${all} ${JSON.stringify(await fenceRow(k))}`);
            assert.ok(ran.length >= applied.length);
          } finally {
            await engine.end(c);
          }
        });
      }
    }
  });
}

const gate0 = (s) => new Gate(s, { stateCache: 0 });
