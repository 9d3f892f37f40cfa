// The rogue writer (run.mjs --guard): a nemesis process that writes the guarded
// own-data tables (`items`, `item_log`) and the fence table (`res`) directly,
// with no fencegate — as a cron job, an old client version or a person with
// psql would — until SIGTERM. docs/guard.md: every such change must be refused
// by the database itself.
//   node rogue.mjs '<json>'   { spec, keys, history, seed }   spec: stores.mjs's, direct (no proxy)
//
// Each attempt is one `invoke` line (op 'rogue', its kind, key, table and the
// refusal it expects: `expect` { code, text }, text the parts of the message) and one
// completion: `ok` with the rows the statement changed (it landed; null: not counted, as for
// TRUNCATE on PostgreSQL), or `fail` with
// the error's `code` and `message`, and `lost: true` when the error is not the
// database's answer to the statement (the connection closed or was refused, the
// server is shutting down or starting, a lock or statement timeout, SQLITE_BUSY):
// then it may not have reached the guard, and the final state is what shows it did
// not land. check.mjs rule (g) reads these lines.
//
// Kinds: the protected tables — UPDATE, INSERT (… ON CONFLICT DO UPDATE), DELETE of a
// key's rows, TRUNCATE (PostgreSQL) or DELETE of every row (SQLite); the fence table —
// the key's fence row rewritten with a lower mark (a well-formed state, its op window
// emptied), a state that is not a well-formed fence state, the row deleted, TRUNCATE
// (PostgreSQL); and (PostgreSQL) one transaction that writes key A's fence row itself,
// as fencegate would, then changes key B's rows. A kind that needs an existing row is
// drawn only when one exists, so every attempt meets the guard's triggers; among the kinds
// a key allows, the least tried goes next. On SQLite half the attempts (drawn) run on a
// connection with a SqliteStore made on it (fencegate_pass registered: GUARD_REFUSED), the
// others on a plain connection (as the sqlite3 shell: "no such function: fencegate_pass").
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { rng } from './rng.mjs';

const require = createRequire(import.meta.url);
const cfg = JSON.parse(process.argv[2]);
const { spec, keys } = cfg;
const rand = rng(cfg.seed);
const fd = fs.openSync(cfg.history, 'a');
const mono = () => Number(process.hrtime.bigint() / 1000n);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (o) => fs.writeSync(fd, `${JSON.stringify({ ...o, t: Date.now(), m: mono() })}\n`);
const pick = (list) => list[Math.floor(rand() * list.length)];
let stopping = false;
process.on('SIGTERM', () => (stopping = true));

// States a writer without fencegate might put in a fence row: none is a well-formed fence state.
const GARBAGE = [
  'not json',
  '{"v":4,"mark":"99999"}', // members missing
  '{"v":4,"mark":"-1","holder":null,"ops":[],"evicted":null,"quarantine":null}',
  '{"v":4,"mark":"007","holder":null,"ops":[],"evicted":null,"quarantine":null}',
  '{"v":9,"mark":"1","holder":null,"ops":[],"evicted":null,"quarantine":null}',
  '[1,2,3]',
];

/** `state` (fence state text) with its mark lowered to `to` and nothing above it left in the state: well formed, so only the mark rule refuses it. */
function lowered(state, to) {
  const s = JSON.parse(state);
  s.mark = String(to);
  if ('ops' in s) s.ops = Array.isArray(s.ops) ? [] : {};
  if ('quarantine' in s) s.quarantine = null;
  return JSON.stringify(s);
}

/** The mark of a fence state text, or null when there is no row or no readable mark. */
function markOf(state) {
  if (state === null || state === undefined) return null;
  try {
    const m = JSON.parse(state).mark;
    return typeof m === 'string' && /^[0-9]+$/.test(m) ? BigInt(m) : null;
  } catch {
    return null;
  }
}

const db = await open(spec);
const tried = new Map(); // kind name → attempts
let n = 0;
while (!stopping) {
  n += 1;
  const key = pick(keys);
  const other = keys.length > 1 ? pick(keys.filter((k) => k !== key)) : null;
  const opId = `rogue-${n}`;
  const value = JSON.stringify({ w: opId, key, token: '0', holder: 'rogue' });
  const via = db.via();
  const has = await db.has(key, other).catch(() => null);
  if (has === null) {
    await sleep(100); // the server is away (a restart): try again
    continue;
  }
  // the least tried of the kinds this key allows now (ties drawn): every kind is tried, evenly
  const kinds = db.kinds.filter((k) => !k.needs || k.needs(has));
  const least = Math.min(...kinds.map((k) => tried.get(k.name) ?? 0));
  const kind = pick(kinds.filter((k) => (tried.get(k.name) ?? 0) === least));
  tried.set(kind.name, least + 1);
  const attempt = kind.make({ key, other, opId, value, has, to: has.mark === null ? null : BigInt(Math.floor(rand() * Number(has.mark))) });
  const id = `rogue.${n}`;
  log({ ev: 'invoke', id, p: -2, pid: process.pid, op: 'rogue', kind: kind.name, key, table: kind.table, via, expect: db.expect(kind, via, { key, other }) });
  try {
    const rows = await db.run(attempt, via);
    log({ ev: 'ok', id, op: 'rogue', kind: kind.name, key, rows });
  } catch (e) {
    const code = e && typeof e === 'object' && e.code !== undefined ? String(e.code) : 'ERROR';
    const message = String((e && e.message) || e).slice(0, 300);
    log({ ev: 'fail', id, op: 'rogue', kind: kind.name, key, code, message, ...(db.lost(e) ? { lost: true } : {}) });
  }
  await sleep(15 + rand() * 50);
}
await db.close();
fs.closeSync(fd);

async function open(spec) {
  const protectedKinds = (truncate) => [
    { name: 'items-update', table: 'items', op: 'UPDATE', needs: (h) => h.item, make: (a) => [['UPDATE items SET value = ? WHERE key = ?', [a.value, a.key]]] },
    { name: 'items-upsert', table: 'items', op: 'INSERT', make: (a) => [['INSERT INTO items (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [a.key, a.value]]] },
    { name: 'items-delete', table: 'items', op: 'DELETE', needs: (h) => h.item, make: (a) => [['DELETE FROM items WHERE key = ?', [a.key]]] },
    { name: 'log-insert', table: 'item_log', op: 'INSERT', make: (a) => [['INSERT INTO item_log (op_id, key) VALUES (?, ?)', [a.opId, a.key]]] },
    { name: 'log-update', table: 'item_log', op: 'UPDATE', needs: (h) => h.log, make: (a) => [['UPDATE item_log SET op_id = ? WHERE key = ?', [a.opId, a.key]]] },
    { name: 'log-delete', table: 'item_log', op: 'DELETE', needs: (h) => h.log, make: (a) => [['DELETE FROM item_log WHERE key = ?', [a.key]]] },
    truncate
      ? { name: 'items-truncate', table: 'items', op: 'TRUNCATE', make: () => [['TRUNCATE items', []]] }
      : { name: 'items-delete-all', table: 'items', op: 'DELETE', needs: (h) => h.item, make: () => [['DELETE FROM items', []]] },
  ];
  const fenceKinds = (truncate) => [
    { name: 'fence-lower', table: 'res', fence: 'the mark never goes down', needs: (h) => h.mark !== null && h.mark >= 1n, make: (a) => [['UPDATE res SET state = ?, version = version + 1 WHERE key = ?', [lowered(a.has.state, a.to), a.key]]] },
    {
      name: 'fence-garbage',
      table: 'res',
      fence: 'the new state refused',
      make: (a) => [['INSERT INTO res (key, state, value, version) VALUES (?, ?, NULL, 1) ON CONFLICT (key) DO UPDATE SET state = excluded.state, version = res.version + 1', [a.key, pick(GARBAGE)]]],
    },
    { name: 'fence-delete', table: 'res', fence: 'DELETE refused', needs: (h) => h.mark !== null, make: (a) => [['DELETE FROM res WHERE key = ?', [a.key]]] },
    ...(truncate ? [{ name: 'fence-truncate', table: 'res', fence: 'TRUNCATE of the fence table res refused', make: () => [['TRUNCATE res', []]] }] : []),
  ];

  if (spec.kind === 'sqlite') {
    const Database = require('better-sqlite3');
    const { SqliteStore } = await import(new URL('../../pkg/adapters/sqlite.mjs', import.meta.url));
    const plain = new Database(spec.file, { timeout: 2000 });
    const withStore = new Database(spec.file, { timeout: 2000 });
    new SqliteStore(withStore, { table: 'res' }); // registers fencegate_pass on this connection
    const conns = { plain, store: withStore };
    return {
      kinds: [...protectedKinds(false), ...fenceKinds(false)],
      via: () => (rand() < 0.5 ? 'store' : 'plain'),
      async has(key) {
        const state = plain.prepare('SELECT state FROM res WHERE key = ?').pluck().get(key) ?? null;
        return {
          state,
          mark: markOf(state),
          item: plain.prepare('SELECT 1 FROM items WHERE key = ?').get(key) !== undefined,
          log: plain.prepare('SELECT 1 FROM item_log WHERE key = ?').get(key) !== undefined,
        };
      },
      expect(kind, via, a) {
        // the fence table's triggers: RAISE(ABORT, 'FG002 …'); the protected tables': fencegate_pass
        if (kind.fence) return { code: 'SQLITE_CONSTRAINT_TRIGGER', text: [`FG002 fencegate guard: fence row ${a.key}: `, kind.fence] };
        return via === 'plain'
          ? { code: 'SQLITE_ERROR', text: ['no such function: fencegate_pass'] }
          : { code: 'GUARD_REFUSED', text: [`fencegate guard: ${kind.op} on ${kind.table} refused: this transaction did not pass the fence for key ${kind.name === 'items-delete-all' ? '' : a.key}`] };
      },
      async run(statements, via) {
        let rows = 0;
        for (const [text, params] of statements) rows += conns[via].prepare(text).run(...params).changes;
        return rows;
      },
      lost: (e) => typeof e?.code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(e.code),
      async close() {
        plain.close();
        withStore.close();
      },
    };
  }
  if (spec.kind === 'pg') {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: spec.url, max: 1, connectionTimeoutMillis: 2000, query_timeout: 5000, options: '-c lock_timeout=2000 -c statement_timeout=4000' });
    pool.on('error', () => {});
    const numbered = (text) => {
      let i = 0;
      return text.replace(/\?/g, () => `$${++i}`);
    };
    const crossKey = {
      name: 'cross-key',
      table: 'items',
      op: 'UPDATE',
      needs: (h) => h.otherItem && h.mark !== null,
      // key A's fence row written in this transaction (state unchanged, version raised), then key B's row changed
      make: (a) => [['UPDATE res SET version = version + 1 WHERE key = ?', [a.key]], ['UPDATE items SET value = ? WHERE key = ?', [a.value, a.other]]],
      tx: true,
    };
    return {
      kinds: [...protectedKinds(true), ...fenceKinds(true), crossKey],
      via: () => 'pg',
      async has(key, other) {
        const { rows } = await pool.query(
          'SELECT (SELECT state FROM res WHERE key = $1) AS state, EXISTS (SELECT 1 FROM items WHERE key = $1) AS item, EXISTS (SELECT 1 FROM item_log WHERE key = $1) AS log, EXISTS (SELECT 1 FROM items WHERE key = $2) AS other_item',
          [key, other],
        );
        const r = rows[0];
        return { state: r.state, mark: markOf(r.state), item: r.item, log: r.log, otherItem: other !== null && r.other_item };
      },
      expect(kind, _via, a) {
        if (kind.name === 'fence-truncate') return { code: 'FG002', text: [kind.fence] };
        if (kind.fence) return { code: 'FG002', text: [`fencegate guard: fence row ${a.key}: `, kind.fence] };
        if (kind.op === 'TRUNCATE') return { code: 'FG001', text: [`fencegate guard: TRUNCATE of ${kind.table} refused`] };
        if (kind.name === 'cross-key') return { code: 'FG001', text: [`fencegate guard: UPDATE on items refused: this transaction did not pass the fence for key ${a.other} `] };
        return { code: 'FG001', text: [`fencegate guard: ${kind.op} on ${kind.table} refused`, ` key ${a.key} `] };
      },
      async run(statements) {
        // rowCount: null for TRUNCATE
        if (statements.length === 1) return (await pool.query(numbered(statements[0][0]), statements[0][1])).rowCount;
        const c = await pool.connect();
        // a checked-out client whose connection dies (the server restarted) emits 'error', which
        // the pool hears only while the client is idle: unheard, it ends the process; the query
        // in flight rejects with the same error (a lost attempt)
        const ignore = () => {};
        c.on('error', ignore);
        let rows = 0;
        try {
          await c.query('BEGIN');
          for (const [text, params] of statements) rows += (await c.query(numbered(text), params)).rowCount;
          await c.query('COMMIT');
          c.removeListener('error', ignore);
          c.release();
          return rows;
        } catch (e) {
          await c.query('ROLLBACK').catch(() => {});
          c.removeListener('error', ignore);
          c.release(true); // a connection that may be broken is not reused
          throw e;
        }
      },
      // not the server's answer to the statement: no SQLSTATE (a socket error, a timeout), a
      // connection exception (08), an operator intervention such as a shutdown (57), too many
      // connections (53), a lock timeout (55P03)
      lost: (e) => typeof e?.code !== 'string' || !/^[0-9A-Z]{5}$/.test(e.code) || /^(08|53|57)/.test(e.code) || e.code === '55P03',
      close: () => pool.end(),
    };
  }
  throw new Error(`the rogue writer has no ${spec.kind} engine (sqlite, pg)`);
}
