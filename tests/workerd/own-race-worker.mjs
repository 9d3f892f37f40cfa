// Races and lying stores on the caller's own data in a Durable Object, run inside real
// workerd by tests/js/own-data/durable-object-race.test.mjs:
//   Kv  (a KV-backed object): DurableObjectStore, the body gets storage.transaction's txn
//   Sql (a SQLite-backed object): DurableObjectSqlStore, the body gets ctx.storage.sql
// POST /<class>/<object> with one of
//   {"scenario":"cases","variant":"honest"|"checkOutside"|"statementsFirst"}
//       → the own-data conformance cases (OWN_CASES) against that store: [{ name, ok, … }]
//   {"scenario":"setup","accounts":N,"start":S}          the bank: N accounts of S each
//   {"scenario":"transfer","client","api","batch":[{ worker, op, token, src, dst, amount, waitMs }…]}
//       → the batch's transfers at once through the gates of `client` (one Gate per client and
//         batch slot, kept in the object): [{ ok, outcome, code, result } or { error }…]
//   {"scenario":"sameEvent"}  two gates, one key, one request
//   {"scenario":"bank"}  → the accounts, the transfers and what the object saw at once
import { DurableObjectStore, DurableObjectSqlStore } from 'fencegate/durable-object';
import { Gate } from 'fencegate';
import { runOwnCases } from '../js/stores/run-cases.mjs';
import { checkOutside, statementsFirst, wrapStore } from '../js/own-data/liars.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `store` whose fencedTransaction starts after a timer, as another request's would. */
const deferred = (store) => wrapStore(store, {
  fencedTransaction: async (key, step) => {
    await sleep(0);
    return store.fencedTransaction(key, step);
  },
});

/** What a transfer answered, as plain data. */
async function outcomeOf(p) {
  try {
    const v = await p;
    return { ok: v.ok && v.outcome !== 'duplicate', outcome: v.outcome, code: v.code, result: v.result ?? null };
  } catch (e) {
    return { ok: false, error: e?.code ?? String(e) };
  }
}

/**
 * One request's transfers (`msg.batch`), all at once: the j-th through `gate(j)` (a Gate of
 * its own), started when `next(started)` resolves after the one before it started (`started`:
 * `{ entered, done }`, Promises of its body's start and of its end), so the request's own
 * transactions overlap. `body(t, enter)` is the transfer's body, calling `enter()` first.
 * Answers the outcomes in batch order.
 */
async function batch(msg, gate, body, call, next) {
  const all = [];
  let previous = null;
  for (const [j, t] of msg.batch.entries()) {
    if (previous !== null) await next(previous, t);
    let enter;
    const entered = new Promise((r) => (enter = r));
    const done = outcomeOf(call(gate(j), t, body(t, enter)));
    previous = { entered, done };
    all.push(done);
  }
  return Promise.all(all);
}

/** Counts how many of something are in progress at once, and the most there were. */
class Gauge {
  now = 0;
  max = 0;
  async around(p) {
    this.now++;
    this.max = Math.max(this.max, this.now);
    try {
      return await p();
    } finally {
      this.now--;
    }
  }
}

export class Kv {
  constructor(ctx) {
    this.storage = ctx.storage;
    this.n = 0;
    this.gates = new Map();
    this.requests = new Gauge();
    this.transactions = new Gauge();
    this.bodies = new Gauge();
  }

  async fetch(request) {
    const msg = await request.json();
    const storage = this.storage;
    return this.requests.around(async () => {
      if (msg.scenario === 'cases') return Response.json(await this.cases(msg.variant));
      if (msg.scenario === 'setup') {
        await storage.deleteAll();
        for (let i = 1; i <= msg.accounts; i++) await storage.put(`acct:${i}`, msg.start);
        await storage.put('seq', 0);
        return Response.json({});
      }
      if (msg.scenario === 'transfer') {
        const gate = (j) => {
          const id = `${msg.client}/${j}`;
          if (!this.gates.has(id)) this.gates.set(id, new Gate(new DurableObjectStore(storage, { prefix: 'fence:' })));
          return this.gates.get(id);
        };
        // the body awaits a slow service (the test's HTTP server, answering after waitMs) between its
        // reads and its writes; not a timer: workerd stalls a transaction callback that awaits one
        // (docs/stores.md "Your own data on Durable Objects")
        const service = async (ms) => (await fetch(`${msg.api}/wait?ms=${ms}`)).text();
        const body = ({ worker, op, token, src, dst, amount, waitMs }, enter) => (txn) => this.bodies.around(async () => {
          enter();
          const a = await txn.get(`acct:${src}`);
          await service(waitMs);
          const b = await txn.get(`acct:${dst}`);
          await txn.put(`acct:${src}`, a - amount);
          await service(waitMs);
          await txn.put(`acct:${dst}`, b + amount);
          const seq = (await txn.get('seq')) + 1;
          await txn.put('seq', seq);
          await txn.put(`transfer:${worker}:${op}`, { worker, op, token, seq, src, dst, amount });
          return seq;
        });
        // the next transfer starts once the one before it is inside its body (or refused)
        const next = (previous) => Promise.race([previous.entered, previous.done]);
        // before any transaction of its own, the request waits: the other requests get in here
        await sleep(msg.batch[0].waitMs);
        return Response.json(await batch(msg, gate, body, (g, t, b) => this.transactions.around(() => g.transaction('bank/ledger', t.token, b, { opId: `w${t.worker}-${t.op}` })), next));
      }
      if (msg.scenario === 'sameEvent') return Response.json(await this.sameEvent());
      if (msg.scenario === 'bank') {
        const accounts = [...(await storage.list({ prefix: 'acct:' })).values()];
        const transfers = [...(await storage.list({ prefix: 'transfer:' })).values()];
        return Response.json({
          accounts, transfers, seq: await storage.get('seq'),
          maxRequests: this.requests.max, maxTransactions: this.transactions.max, maxBodies: this.bodies.max,
        });
      }
      return Response.json({ unknownScenario: msg.scenario }, { status: 400 });
    });
  }

  /**
   * Two gates on this storage, one key, inside one request: writer 6's body awaits a timer;
   * writer 7 starts while it waits (when a Promise the body resolved settles). What each
   * answered, the caller's key and the mark after.
   */
  async sameEvent() {
    const storage = this.storage;
    const prefix = `same-${this.n++}:`;
    const a = new Gate(new DurableObjectStore(storage, { prefix }));
    const b = new Gate(new DurableObjectStore(storage, { prefix }));
    const own = `${prefix}own`;
    await a.transaction('k', 5, (txn) => txn.put(own, '5'));
    let entered;
    const inBody = new Promise((r) => (entered = r));
    const p6 = outcomeOf(a.transaction('k', 6, async (txn) => {
      entered();
      await sleep(50);
      await txn.put(own, '6');
      return 6;
    }));
    await inBody;
    const p7 = outcomeOf(b.transaction('k', 7, async (txn) => {
      await txn.put(own, '7');
      return 7;
    }));
    const [v6, v7] = await Promise.all([p6, p7]);
    return { v6, v7, own: await storage.get(own), mark: await new Gate(new DurableObjectStore(storage, { prefix })).mark('k') };
  }

  /** OWN_CASES against DurableObjectStore, honest or lying, on this object's storage. */
  cases(variant) {
    const storage = this.storage;
    const target = {
      shape: 'transaction',
      open: async () => {
        const real = new DurableObjectStore(storage, { prefix: `case-${this.n++}:` });
        const store = variant === 'checkOutside'
          ? checkOutside(real)
          : variant === 'statementsFirst'
            ? statementsFirst(real, (run) => run(storage)) // the storage itself: each put commits on its own
            : real;
        return {
          store,
          raw: async (key) => {
            const e = await storage.get(real.storageKey(key));
            return e === undefined ? null : { state: e.state, value: e.value };
          },
          own: {
            sync: false,
            setup: (id) => storage.put(`own:${id}`, 'init'),
            write: (id, v, sleepMs = 0) => async (txn) => {
              if (sleepMs > 0) await sleep(sleepMs);
              await txn.put(`own:${id}`, v);
              return 1;
            },
            read: (id) => storage.get(`own:${id}`),
            other: async () => null,
          },
          close: async () => {},
        };
      },
    };
    return runOwnCases(target);
  }
}

export class Sql {
  constructor(ctx) {
    this.ctx = ctx;
    this.n = 0;
    this.gates = new Map();
    this.requests = new Gauge();
    this.transactions = new Gauge();
  }

  async fetch(request) {
    const msg = await request.json();
    const { storage } = this.ctx;
    const sql = storage.sql;
    return this.requests.around(async () => {
      if (msg.scenario === 'cases') return Response.json(await this.cases(msg.variant));
      if (msg.scenario === 'setup') {
        sql.exec('DROP TABLE IF EXISTS accounts; DROP TABLE IF EXISTS transfers; DROP TABLE IF EXISTS fence_bank');
        sql.exec('CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL); CREATE TABLE transfers (id INTEGER PRIMARY KEY AUTOINCREMENT, worker INTEGER, op INTEGER, token INTEGER, src INTEGER, dst INTEGER, amount INTEGER)');
        for (let i = 1; i <= msg.accounts; i++) sql.exec('INSERT INTO accounts VALUES (?, ?)', i, msg.start);
        return Response.json({});
      }
      if (msg.scenario === 'transfer') {
        // one Gate per client and slot, each with its own state cache: a gate whose cache is behind
        // the newest epoch decides from it, its conditional UPDATE misses, the row is read again
        const gate = (j) => {
          const id = `${msg.client}/${j}`;
          if (!this.gates.has(id)) this.gates.set(id, new Gate(new DurableObjectSqlStore(storage, { table: 'fence_bank' }), { stateCache: 64 }));
          return this.gates.get(id);
        };
        const body = ({ worker, op, token, src, dst, amount }) => (tx) => {
          const a = tx.exec('SELECT balance FROM accounts WHERE id = ?', src).one().balance;
          tx.exec('UPDATE accounts SET balance = ? WHERE id = ?', a - amount, src);
          tx.exec('UPDATE accounts SET balance = balance + ? WHERE id = ?', amount, dst);
          return tx.exec('INSERT INTO transfers (worker, op, token, src, dst, amount) VALUES (?, ?, ?, ?, ?, ?) RETURNING id', worker, op, token, src, dst, amount).one().id;
        };
        // the next transfer starts after a timer: the other requests run there
        const next = (_, t) => sleep(t.waitMs);
        return Response.json(await batch(msg, gate, body, (g, t, b) => this.transactions.around(() => g.transaction('bank/ledger', t.token, b, { opId: `w${t.worker}-${t.op}` })), next));
      }
      if (msg.scenario === 'bank') {
        return Response.json({
          accounts: sql.exec('SELECT balance FROM accounts ORDER BY id').toArray().map((r) => r.balance),
          transfers: sql.exec('SELECT id AS seq, worker, op, token, src, dst, amount FROM transfers ORDER BY id').toArray(),
          maxRequests: this.requests.max, maxTransactions: this.transactions.max,
        });
      }
      return Response.json({ unknownScenario: msg.scenario }, { status: 400 });
    });
  }

  /** OWN_CASES against DurableObjectSqlStore, honest or lying, on this object's SQL storage. */
  cases(variant) {
    const { storage } = this.ctx;
    const sql = storage.sql;
    sql.exec('CREATE TABLE IF NOT EXISTS fg_own (id TEXT PRIMARY KEY, v TEXT NOT NULL)');
    const target = {
      shape: 'transaction',
      open: async () => {
        const real = new DurableObjectSqlStore(storage, { table: `case_${this.n++}` });
        const store = variant === 'checkOutside'
          // read and decided synchronously, then an await before the write (a store that awaits,
          // say, a log write in between): there other requests run
          ? checkOutside(real, () => sleep(10))
          : variant === 'statementsFirst'
            ? statementsFirst(real, (run) => run(sql)) // ctx.storage.sql outside transactionSync: each statement commits
            : real;
        return {
          store,
          raw: async (key) => {
            const rows = sql.exec(`SELECT state, value FROM "${real.table}" WHERE key = ?`, key).toArray();
            return rows.length === 0 ? null : { state: rows[0].state, value: rows[0].value };
          },
          own: {
            // transactionSync: the body is synchronous, so the sleep of the interleaving case is left out
            // (nothing can run inside it anyway)
            sync: true,
            setup: async (id) => void sql.exec("INSERT INTO fg_own VALUES (?, 'init')", id),
            write: (id, v) => (tx) => {
              tx.exec('UPDATE fg_own SET v = ? WHERE id = ?', v, id);
              return 1;
            },
            read: async (id) => sql.exec('SELECT v FROM fg_own WHERE id = ?', id).one().v,
            // "another process" is another request: it runs at the object's next await, never
            // inside this synchronous transaction (the same store, reached after a timer)
            other: async () => ({ store: deferred(store), close: async () => {} }),
          },
          close: async () => {},
        };
      },
    };
    return runOwnCases(target);
  }
}

export default {
  fetch(request, env) {
    const [, cls, object] = new URL(request.url).pathname.split('/');
    const ns = cls === 'sql' ? env.SQL : env.KV;
    return ns.get(ns.idFromName(object)).fetch(request);
  },
};
