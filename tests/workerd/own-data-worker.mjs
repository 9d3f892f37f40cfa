// The caller's own data in a Durable Object (docs/stores.md "Your own data"),
// run inside real workerd by tests/js/own-data/durable-object.test.mjs:
//   Kv  (a KV-backed object): DurableObjectStore, the body gets storage.transaction's txn
//   Sql (a SQLite-backed object): DurableObjectSqlStore, the body gets ctx.storage.sql
// POST /<class>/<object> {"scenario": name, …} → what the scenario saw, as JSON
// (verdicts as the gate answered them, errors as { code, … }, the data after).
import { DurableObjectStore, DurableObjectSqlStore } from 'fencegate/durable-object';
import { Gate } from 'fencegate';
import { runCases } from '../js/stores/run-cases.mjs';

/** An error as plain data: its code, message, whether its cause is `cause`, its verdict. */
function shown(e, cause) {
  const out = { code: e?.code ?? e?.name, message: e?.message };
  if (cause !== undefined) out.causeIsBody = e?.cause === cause;
  if (e?.verdict !== undefined) out.verdict = e.verdict;
  if (e?.mark !== undefined) out.mark = e.mark;
  return out;
}

async function caught(p, cause) {
  try {
    return { value: await p };
  } catch (e) {
    return { error: shown(e, cause) };
  }
}

function caughtSync(f, cause) {
  try {
    return { value: f() };
  } catch (e) {
    return { error: shown(e, cause) };
  }
}

export class Kv {
  constructor(ctx) {
    this.storage = ctx.storage;
  }

  async orders() {
    return Object.fromEntries(await this.storage.list({ prefix: 'order:' }));
  }

  async fetch(request) {
    const { scenario, stateCache } = await request.json();
    const storage = this.storage;
    const store = new DurableObjectStore(storage);
    const gate = new Gate(store, stateCache === undefined ? {} : { stateCache });
    const out = {};
    if (scenario === 'transaction') {
      await storage.put('order:42', 'new');
      let calls = 0;
      const setStatus = (s) => async (txn) => {
        calls++;
        await txn.put('order:42', s);
        await txn.put(`order:log:${calls}`, s);
        return calls;
      };
      out.verdicts = [];
      out.verdicts.push(await gate.transaction('orders/42', 33, setStatus('paid')));
      out.verdicts.push(await gate.transaction('orders/42', 34, setStatus('shipped')));
      out.verdicts.push(await gate.transaction('orders/42', 34, setStatus('shipped-2')));
      out.verdicts.push(await gate.transaction('orders/42', 33, setStatus('refunded')));
      out.calls = calls;
      out.orders = await this.orders();
      out.mark = await gate.mark('orders/42');
      out.entry = await storage.get(store.storageKey('orders/42'));
    } else if (scenario === 'throws') {
      await storage.put('order:42', 'new');
      await gate.transaction('orders/42', 5, async (txn) => txn.put('order:42', 'paid'));
      const boom = new Error('the refund service said no');
      out.thrown = (await caught(gate.transaction('orders/42', 6, async (txn) => {
        await txn.put('order:42', 'half-done');
        await txn.put('order:other', 'half-done');
        throw boom;
      }), boom)).error;
      out.orders = await this.orders();
      out.mark = await gate.mark('orders/42');
    } else if (scenario === 'duplicate') {
      await storage.put('order:43', 0);
      let calls = 0;
      const inc = async (txn) => {
        calls++;
        await txn.put('order:43', (await txn.get('order:43')) + 1);
        return 'counted';
      };
      out.first = await gate.transaction('orders/43', 7, inc, { opId: 'refund-1' });
      out.again = await gate.transaction('orders/43', 7, inc, { opId: 'refund-1' });
      out.calls = calls;
      out.orders = await this.orders();
    } else if (scenario === 'arguments') {
      out.body = [];
      for (const body of [undefined, 'order:42', {}]) out.body.push((await caught(gate.transaction('orders/42', 1, body))).error.code);
      out.storageAsHandle = (await caught(gate.fenceIn(storage, 'orders/42', 1))).error;
      out.entry = (await storage.get(store.storageKey('orders/42'))) ?? null;
    } else if (scenario === 'fenceIn') {
      await storage.put('order:42', 'new');
      const refund = (token, s, options, after) => storage.transaction(async (txn) => {
        const v = await gate.fenceIn(txn, 'orders/42', token, options);
        await txn.put('order:42', s);
        if (after) await after(txn);
        return v;
      });
      out.applied = await refund(9, 'refunded');
      out.afterApplied = await this.orders();
      out.stale = (await caught(refund(8, 'zombie'))).error;
      out.afterStale = await this.orders();
      // a caller that catches the refusal and goes on putting: fenceIn rolled the transaction back
      out.caughtAndPut = await caught(storage.transaction(async (txn) => {
        await txn.put('order:42', 'zombie-before');
        try {
          await gate.fenceIn(txn, 'orders/42', 8);
        } catch (e) {
          out.caughtCode = e.code;
        }
        await txn.put('order:42', 'zombie-after');
        return 'committed?';
      }));
      out.afterCaught = await this.orders();
      out.once = await refund(10, 'once', { opId: 'o-1' });
      out.twice = (await caught(refund(10, 'twice', { opId: 'o-1' }))).error;
      out.afterDuplicate = await this.orders();
      out.mark = await gate.mark('orders/42');
    } else {
      return Response.json({ unknownScenario: scenario }, { status: 400 });
    }
    return Response.json(out);
  }
}

export class Sql {
  constructor(ctx) {
    this.ctx = ctx;
    this.n = 0;
  }

  orders() {
    return this.ctx.storage.sql.exec('SELECT id, status FROM orders ORDER BY id').toArray();
  }

  fenceRow(store, key) {
    const rows = this.ctx.storage.sql.exec(`SELECT state, value, version FROM "${store.table}" WHERE key = ?`, key).toArray();
    return rows.length === 0 ? null : rows[0];
  }

  async fetch(request) {
    const { scenario, stateCache, only } = await request.json();
    const { storage } = this.ctx;
    const sql = storage.sql;
    if (scenario === 'conformance') return Response.json(await this.conformance(only));
    sql.exec('DROP TABLE IF EXISTS orders');
    sql.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL); INSERT INTO orders VALUES (42, 'new'), (43, 'new')");
    const store = new DurableObjectSqlStore(storage, { table: `fence_${this.n++}` });
    const gate = new Gate(store, stateCache === undefined ? {} : { stateCache });
    let calls = 0;
    const setStatus = (s, id = 42) => (tx) => {
      calls++;
      return tx.exec('UPDATE orders SET status = ? WHERE id = ?', s, id).rowsWritten;
    };
    const out = {};
    if (scenario === 'transaction') {
      out.verdicts = [];
      out.verdicts.push(await gate.transaction('orders/42', 33, setStatus('paid')));
      out.verdicts.push(await gate.transaction('orders/42', 34, setStatus('shipped')));
      out.verdicts.push(await gate.transaction('orders/42', 34, setStatus('shipped-2')));
      out.verdicts.push(await gate.transaction('orders/42', 33, setStatus('refunded')));
      out.calls = calls;
      out.orders = this.orders();
      out.mark = await gate.mark('orders/42');
      out.fence = this.fenceRow(store, 'orders/42');
      // a second gate (another instance's view) advances; this gate's cache still says 34
      const other = new Gate(new DurableObjectSqlStore(storage, { table: store.table }), { stateCache: 0 });
      out.other = await other.transaction('orders/42', 35, setStatus('other'));
      out.zombie = await gate.transaction('orders/42', 34, setStatus('zombie'));
      out.ordersAfter = this.orders();
      out.fenceAfter = this.fenceRow(store, 'orders/42');
      // statements per fence step on a key the gate has just written: the cache makes it one conditional UPDATE
      let statements = 0;
      const counted = { sql: { exec: (...a) => { statements++; return sql.exec(...a); } }, transactionSync: (f) => storage.transactionSync(f) };
      const g = new Gate(new DurableObjectSqlStore(counted, { table: store.table }), { stateCache });
      await g.transaction('orders/42', 36, () => 0);
      statements = 0;
      await g.transaction('orders/42', 37, () => 0);
      out.statementsCachedKey = statements;
    } else if (scenario === 'throws') {
      await gate.transaction('orders/42', 5, setStatus('paid'));
      const boom = new Error('no such column: stauts');
      out.thrown = (await caught(gate.transaction('orders/42', 6, (tx) => {
        tx.exec("UPDATE orders SET status = 'half-done' WHERE id = 42");
        tx.exec("UPDATE orders SET status = 'half-done' WHERE id = 43");
        throw boom;
      }), boom)).error;
      out.sqlError = (await caught(gate.transaction('orders/42', 6, (tx) => tx.exec('UPDATE orders SET stauts = 1')))).error;
      out.async = (await caught(gate.transaction('orders/42', 6, async (tx) => setStatus('async')(tx)))).error;
      out.orders = this.orders();
      out.mark = await gate.mark('orders/42');
      out.fence = this.fenceRow(store, 'orders/42');
    } else if (scenario === 'duplicate') {
      const inc = (tx) => {
        calls++;
        return tx.exec("UPDATE orders SET status = status || '+' WHERE id = 43").rowsWritten;
      };
      out.first = await gate.transaction('orders/43', 7, inc, { opId: 'refund-1' });
      out.again = await gate.transaction('orders/43', 7, inc, { opId: 'refund-1' });
      out.calls = calls;
      out.orders = this.orders();
    } else if (scenario === 'fenceIn') {
      const refund = (token, s, options) => storage.transactionSync(() => {
        const v = gate.fenceInSync(sql, 'orders/42', token, options);
        sql.exec('UPDATE orders SET status = ? WHERE id = 42', s);
        return v;
      });
      out.applied = refund(9, 'refunded');
      out.stale = caughtSync(() => refund(8, 'zombie')).error;
      out.afterStale = this.orders();
      out.once = refund(10, 'once', { opId: 'o-1' });
      out.twice = caughtSync(() => refund(10, 'twice', { opId: 'o-1' })).error;
      out.afterDuplicate = this.orders();
      // the async form on the same handle, inside an explicit transactionSync it cannot await: a verdict Promise
      out.otherHandle = (await caught(gate.fenceIn({ exec() {} }, 'orders/42', 11))).error;
      out.mark = await gate.mark('orders/42');
      out.fence = this.fenceRow(store, 'orders/42');
    } else if (scenario === 'plain') {
      // the store as an ordinary gate store: write, read, delete, stale refused
      out.write = await gate.write('v', 3, { a: 1 });
      out.stale = await gate.write('v', 2, 'old');
      out.read = await gate.read('v');
      out.del = await gate.delete('v', 4);
      out.readAfter = await gate.read('v');
      out.row = this.fenceRow(store, 'v');
      out.constructor = [];
      for (const args of [[undefined], [{ sql: {} }], [storage, { table: 'bad-name' }], [storage, { table: '_cf_fence' }], [storage, { tabel: 'x' }]]) {
        out.constructor.push(caughtSync(() => new DurableObjectSqlStore(...args)).error.message);
      }
    } else {
      return Response.json({ unknownScenario: scenario }, { status: 400 });
    }
    return Response.json(out);
  }

  /** The store conformance suite against DurableObjectSqlStore on this object's SQL storage. */
  async conformance(only) {
    const { storage } = this.ctx;
    const target = {
      shape: 'transaction',
      open: async () => {
        const options = { table: `case_${this.n++}` };
        const store = new DurableObjectSqlStore(storage, options);
        const t = store.table;
        return {
          store,
          reopen: async () => new DurableObjectSqlStore(storage, options),
          raw: async (key) => {
            const rows = storage.sql.exec(`SELECT state, value FROM "${t}" WHERE key = ?`, key).toArray();
            return rows.length === 0 ? null : { state: rows[0].state, value: rows[0].value };
          },
          putRaw: async (key, state, value) => {
            storage.sql.exec(
              `INSERT INTO "${t}" (key, state, value, version) VALUES (?, ?, ?, 1) ON CONFLICT (key) DO UPDATE SET state = excluded.state, value = excluded.value, version = version + 1`,
              key, state, value ?? null,
            );
          },
          close: async () => {},
        };
      },
    };
    return runCases(target, only);
  }
}

export default {
  fetch(request, env) {
    const [, cls, object] = new URL(request.url).pathname.split('/');
    const ns = cls === 'sql' ? env.SQL : env.KV;
    return ns.get(ns.idFromName(object)).fetch(request);
  },
};
