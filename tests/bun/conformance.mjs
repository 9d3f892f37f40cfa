// Runs the store conformance suite (tests/js/stores/cases.mjs) in Bun against
// fencegate/sqlite over Bun's built-in bun:sqlite (better-sqlite3 does not load
// in Bun), and prints the results as JSON on the last line. Started by
// tests/pack/bun.test.mjs:  bun tests/bun/conformance.mjs <dir> [lying <names>]
import { Database } from 'bun:sqlite';
import { SqliteStore } from '../../pkg/adapters/sqlite.mjs';
import { runCases } from '../js/stores/run-cases.mjs';

const [dir, variant, names] = process.argv.slice(2);
let n = 0;

function open(file) {
  const db = new Database(file, { create: true });
  db.exec('PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 20000');
  return db;
}

/** Drops the precondition: reads outside the transaction, then writes unconditionally. */
class LyingStore extends SqliteStore {
  // the gate drives `transaction` below, not SqliteStore's own textTransaction verb
  textTransaction = undefined;

  constructor(db) {
    super(db);
    this.db = db;
  }
  async transaction(key, fn) {
    const row = this.db.prepare('SELECT state, value FROM fencegate WHERE key = ?').get(key);
    const out = fn(row == null ? null : row.state);
    if (out === null) return false;
    await new Promise((r) => setTimeout(r, 1));
    const value = out.change.kind === 'set' ? this.encodeValue(out.change.value) : out.change.kind === 'delete' ? null : (row?.value ?? null);
    this.db.prepare('INSERT OR REPLACE INTO fencegate (key, state, value, version) VALUES (?, ?, ?, 1)').run(key, JSON.stringify(out.nextState), value);
    return true;
  }
}

const make = (db) => (variant === 'lying' ? new LyingStore(db) : new SqliteStore(db));

const target = {
  shape: 'transaction',
  async open() {
    const file = `${dir}/store-${n++}.db`;
    const dbs = [open(file)];
    const db = () => dbs[dbs.length - 1];
    const store = make(db());
    return {
      store,
      // close the database and open the same file again: a process restart
      reopen: async () => {
        db().close();
        dbs.push(open(file));
        return make(db());
      },
      raw: async (key) => {
        const row = db().prepare('SELECT state, value FROM fencegate WHERE key = ?').get(key);
        return row == null ? null : { state: row.state, value: row.value };
      },
      putRaw: async (key, state, value) => {
        db().prepare('INSERT OR REPLACE INTO fencegate (key, state, value, version) VALUES (?, ?, ?, 100)').run(key, state, value);
      },
      close: async () => {
        for (const d of dbs) d.close();
      },
    };
  },
};

console.log(JSON.stringify(await runCases(target, names ? JSON.parse(names) : undefined)));
