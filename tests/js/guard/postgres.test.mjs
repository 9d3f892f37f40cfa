// The PostgreSQL guard (docs/guard.md) on a real server: raw changes refused with
// SQLSTATE FG001 and nothing changed; fenced transactions applied; the fence table keeps
// its marks; install twice changes nothing; remove keeps data and fence rows; a
// multi-process race shows no false refusals.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { Gate, FencegateError } from '../../../pkg/node.mjs';
import { installGuard, removeGuard, guardSql, GUARD_SQLSTATE, FENCE_SQLSTATE } from '../../../pkg/adapters/guard.mjs';
import { PostgresStore as OwnStore } from '../../../pkg/adapters/postgres.mjs';

const PG_URL = process.env.FENCEGATE_PG_URL;
const skip = !PG_URL && (process.env.FENCEGATE_REQUIRE_SERVICES ? false : 'FENCEGATE_PG_URL is not set');
let pool;
let gate;

const rows = async () => (await pool.query('SELECT id, status, n FROM orders ORDER BY id')).rows;
const fenceRows = async () => (await pool.query('SELECT key, state, value, version::int AS version FROM fencegate ORDER BY key')).rows;
const refused = async (sql, values) => {
  try {
    await pool.query(sql, values);
  } catch (e) {
    return { code: e.code, message: e.message };
  }
  return 'applied';
};
const catalog = async () => (await pool.query(`
  SELECT (SELECT array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname) FROM pg_trigger t WHERE t.tgrelid IN ('orders'::regclass, 'fencegate'::regclass) AND NOT t.tgisinternal) AS triggers,
         (SELECT array_agg(p.proname || ':' || md5(p.prosrc) ORDER BY p.proname) FROM pg_proc p WHERE p.proname IN ('fencegate_guard_orders', 'fencegate_fence_fencegate')) AS functions,
         (SELECT array_agg(attname::text ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'fencegate'::regclass AND attnum > 0 AND NOT attisdropped) AS fence_columns`)).rows[0];

async function reset() {
  await removeGuard(pool, { table: 'orders', fence: true }).catch(() => {});
  await pool.query('DROP TABLE IF EXISTS orders; DROP TABLE IF EXISTS fencegate');
  await new OwnStore(pool).init();
  await pool.query("CREATE TABLE orders (id int PRIMARY KEY, status text NOT NULL, n int NOT NULL DEFAULT 0); INSERT INTO orders (id, status) VALUES (1, 'new'), (2, 'new')");
  gate = new Gate(new OwnStore(pool), { stateCache: 0 });
  // fence rows for both orders before the guard (token 5), so the raw writes below meet a fence row
  await gate.transaction('orders/1', 5, () => null);
  await gate.transaction('orders/2', 5, () => null);
  await installGuard(pool, { table: 'orders', key: "'orders/' || id" });
}

before(async () => {
  if (skip) return;
  pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
});
after(async () => {
  if (pool) await pool.end();
});

const setStatus = (s, id = 1) => (c) => c.query('UPDATE orders SET status = $1 WHERE id = $2', [s, id]).then((r) => r.rowCount);

test('PostgreSQL guard: raw UPDATE / INSERT / DELETE / TRUNCATE from a plain client refused (FG001), rows unchanged', { skip }, async () => {
  await reset();
  const before = await rows();
  assert.deepEqual(await refused("UPDATE orders SET status = 'rogue' WHERE id = 1"), {
    code: 'FG001', message: 'fencegate guard: UPDATE on orders refused: this transaction did not pass the fence for key orders/1 (its fence row was not written by this transaction)',
  });
  assert.deepEqual(await refused("INSERT INTO orders (id, status) VALUES (3, 'rogue')"), {
    code: 'FG001', message: 'fencegate guard: INSERT on orders refused: key orders/3 has no fence row: this transaction did not pass the fence for it',
  });
  assert.deepEqual(await refused('DELETE FROM orders WHERE id = 2'), {
    code: 'FG001', message: 'fencegate guard: DELETE on orders refused: this transaction did not pass the fence for key orders/2 (its fence row was not written by this transaction)',
  });
  assert.equal((await refused('TRUNCATE orders')).code, 'FG001');
  assert.equal((await refused("COPY orders (id, status) FROM PROGRAM 'echo 9,x' WITH (FORMAT csv)")).code, 'FG001');
  assert.deepEqual(await rows(), before);
  assert.equal(GUARD_SQLSTATE, 'FG001');
});

test('PostgreSQL guard: the same UPDATE through gate.transaction with the current token applied; stale refused by fencegate, row unchanged', { skip }, async () => {
  await reset();
  assert.deepEqual(await gate.transaction('orders/1', 6, setStatus('paid')), {
    key: 'orders/1', ok: true, outcome: 'advance', code: null, token: 6, markBefore: 5, markAfter: 6, result: 1,
  });
  assert.deepEqual(await gate.transaction('orders/1', 6, setStatus('shipped')), {
    key: 'orders/1', ok: true, outcome: 'accept', code: null, token: 6, markBefore: 6, markAfter: 6, result: 1,
  });
  assert.deepEqual(await gate.transaction('orders/1', 5, setStatus('refunded')), {
    key: 'orders/1', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 5, markBefore: 6, markAfter: 6,
  });
  // a new row through the fence: its fence row is inserted first
  assert.deepEqual(await gate.transaction('orders/3', 1, (c) => c.query("INSERT INTO orders (id, status) VALUES (3, 'new')").then((r) => r.rowCount)), {
    key: 'orders/3', ok: true, outcome: 'advance', code: null, token: 1, markBefore: 0, markAfter: 1, result: 1,
  });
  assert.deepEqual(await rows(), [{ id: 1, status: 'shipped', n: 0 }, { id: 2, status: 'new', n: 0 }, { id: 3, status: 'new', n: 0 }]);
  assert.equal(await gate.mark('orders/1'), 6);
});

test('PostgreSQL guard: fenceIn in the caller\'s transaction passes for its key; a raw statement after COMMIT on the same client is refused', { skip }, async () => {
  await reset();
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    assert.equal((await gate.fenceIn(c, 'orders/2', 7)).outcome, 'advance');
    assert.equal((await c.query("UPDATE orders SET status = 'in' WHERE id = 2")).rowCount, 1);
    await c.query('COMMIT');
    const e = await c.query("UPDATE orders SET status = 'after' WHERE id = 2").catch((x) => x);
    assert.equal(e.code, 'FG001');
  } finally {
    c.release();
  }
  assert.deepEqual((await rows())[1], { id: 2, status: 'in', n: 0 });
});

test('PostgreSQL guard: a transaction that passed the fence for orders/1 and then changes orders/2 is refused (GUARD_REFUSED), nothing written', { skip }, async () => {
  await reset();
  const before = await rows();
  const fences = await fenceRows();
  const e = await gate.transaction('orders/1', 6, async (c) => {
    await c.query("UPDATE orders SET status = 'one' WHERE id = 1");
    await c.query("UPDATE orders SET status = 'two' WHERE id = 2");
  }).catch((x) => x);
  assert.ok(e instanceof FencegateError);
  assert.equal(e.code, 'GUARD_REFUSED');
  assert.equal(e.key, 'orders/1');
  assert.equal(e.cause.code, 'FG001');
  assert.equal(e.cause.message, 'fencegate guard: UPDATE on orders refused: this transaction did not pass the fence for key orders/2 (its fence row was not written by this transaction)');
  assert.equal(e.verdict.outcome, 'advance');
  // an UPDATE that moves a row to another key needs both keys
  const moved = await gate.transaction('orders/1', 6, (c) => c.query('UPDATE orders SET id = 9 WHERE id = 1')).catch((x) => x);
  assert.equal(moved.code, 'GUARD_REFUSED');
  assert.match(moved.cause.message, /key orders\/9 has no fence row/);
  assert.deepEqual(await rows(), before);
  assert.deepEqual(await fenceRows(), fences);
  assert.equal(await gate.mark('orders/1'), 5);
});

test('PostgreSQL guard: a writer bypassing fencegate cannot lower a mark, write garbage, delete or truncate the fence table (FG002)', { skip }, async () => {
  await reset();
  const fences = await fenceRows();
  const cases = [
    [`UPDATE fencegate SET state = '{"v":1,"mark":"4"}', version = version + 1 WHERE key = 'orders/1'`, 'fencegate guard: fence row orders/1: lowering the mark from 5 to 4 refused: the mark never goes down'],
    [`UPDATE fencegate SET state = 'garbage', version = version + 1 WHERE key = 'orders/1'`, 'fencegate guard: fence row orders/1: the new state refused: not JSON'],
    [`UPDATE fencegate SET state = '{"v":1,"mark":"05"}', version = version + 1 WHERE key = 'orders/1'`, 'fencegate guard: fence row orders/1: the new state refused: "mark" is not canonical decimal text in 0..2^64-1'],
    [`UPDATE fencegate SET state = '{"v":1,"mark":5}', version = version + 1 WHERE key = 'orders/1'`, 'fencegate guard: fence row orders/1: the new state refused: "mark" is not canonical decimal text in 0..2^64-1'],
    [`UPDATE fencegate SET state = '{"v":1,"mark":"18446744073709551616"}', version = version + 1 WHERE key = 'orders/1'`, 'fencegate guard: fence row orders/1: the new state refused: "mark" is not canonical decimal text in 0..2^64-1'],
    [`UPDATE fencegate SET state = '{"v":4.0,"mark":"9"}', version = version + 1 WHERE key = 'orders/1'`, 'fencegate guard: fence row orders/1: the new state refused: "v" is not 1, 2, 3 or 4'],
    [`UPDATE fencegate SET state = '{"v":1,"mark":"9","mark":"9"}', version = version + 1 WHERE key = 'orders/1'`, 'fencegate guard: fence row orders/1: the new state refused: its members are not those of its format version'],
    [`UPDATE fencegate SET state = '{"v":4,"mark":"9","holder":null,"ops":{},"evicted":null,"quarantine":null}', version = version + 1 WHERE key = 'orders/1'`, 'fencegate guard: fence row orders/1: the new state refused: "ops" is not a list of [id, mark before, fingerprint?]'],
    [`UPDATE fencegate SET state = '{"v":4,"mark":"9","holder":null,"ops":[],"evicted":null,"quarantine":"10"}', version = version + 1 WHERE key = 'orders/1'`, 'fencegate guard: fence row orders/1: the new state refused: "quarantine" is not null or a decimal at most the mark'],
    [`UPDATE fencegate SET state = '{"v":1,"mark":"9"}', version = version - 1 WHERE key = 'orders/1'`, 'fencegate guard: fence row orders/1: version 0 after 1 refused: the version only goes up'],
    [`UPDATE fencegate SET key = 'orders/7' WHERE key = 'orders/1'`, 'fencegate guard: fence row orders/1: changing its key to orders/7 refused'],
    [`INSERT INTO fencegate (key, state, value, version) VALUES ('x', '{"v":2,"mark":"1"}', NULL, 1)`, 'fencegate guard: fence row x: the new state refused: its members are not those of its format version'],
    ["DELETE FROM fencegate WHERE key = 'orders/2'", 'fencegate guard: fence row orders/2: DELETE refused: fence rows are never removed (that would lower the mark to 0)'],
    ['TRUNCATE fencegate', 'fencegate guard: TRUNCATE of the fence table fencegate refused: fence rows are never removed'],
  ];
  for (const [sql, message] of cases) assert.deepEqual(await refused(sql), { code: FENCE_SQLSTATE, message }, sql);
  assert.deepEqual(await fenceRows(), fences);
  // raising the mark by hand is not refused (the guard checks only that marks never go down)
  assert.equal(await refused(`UPDATE fencegate SET state = '{"v":1,"mark":"8"}', version = version + 1 WHERE key = 'orders/2'`), 'applied');
  assert.equal(await gate.mark('orders/2'), 8);
});

test('PostgreSQL guard: every state fencegate writes in the fixtures passes the SQL check', { skip }, async () => {
  await reset();
  const { readFileSync } = await import('node:fs');
  const today = JSON.parse(readFileSync(new URL('../../fixtures/formats-today.json', import.meta.url), 'utf8')).cases.filter((c) => c.kind === 'state');
  const old = JSON.parse(readFileSync(new URL('../../fixtures/state-v1-v3.json', import.meta.url), 'utf8')).cases;
  const texts = [...today.map((c) => c.text), ...old.map((c) => c.text)];
  assert.ok(texts.length >= 10, `${texts.length} fixture states`);
  for (const [i, text] of texts.entries()) {
    assert.equal(await refused('INSERT INTO fencegate (key, state, value, version) VALUES ($1, $2, NULL, 1)', [`fixture/${i}`, text]), 'applied', text);
  }
});

test('PostgreSQL guard: installing twice changes nothing; remove keeps data and fence rows; bad options are INVALID_ARGUMENT', { skip }, async () => {
  await reset();
  await gate.transaction('orders/1', 6, setStatus('paid'));
  const cat = await catalog();
  assert.equal(cat.triggers.length, 4);
  assert.deepEqual(cat.fence_columns, ['key', 'state', 'value', 'version', 'xact']);
  await installGuard(pool, { table: 'orders', key: "'orders/' || id" });
  assert.deepEqual(await catalog(), cat);
  const data = await rows();
  const fences = await fenceRows();
  await removeGuard(pool, { table: 'orders' });
  assert.equal(await refused("UPDATE orders SET status = 'free' WHERE id = 2"), 'applied');
  assert.equal((await refused(`UPDATE fencegate SET state = '{"v":1,"mark":"1"}', version = version + 1 WHERE key = 'orders/1'`)).code, 'FG002');
  await removeGuard(pool, { table: 'orders', fence: true });
  await removeGuard(pool, { table: 'orders', fence: true });
  const gone = await catalog();
  assert.equal(gone.triggers, null);
  assert.equal(gone.functions, null);
  assert.deepEqual(gone.fence_columns, ['key', 'state', 'value', 'version']);
  assert.deepEqual(await fenceRows(), fences);
  assert.deepEqual(await rows(), [data[0], { ...data[1], status: 'free' }]);
  for (const [opts, re] of [
    [{ table: 'orders; drop', key: 'id' }, /table must be a plain SQL identifier/],
    [{ table: 'orders', key: "'orders/' || id; DROP TABLE orders" }, /";" is not allowed/],
    [{ table: 'orders', key: "id -- x" }, /comments are not allowed/],
    [{ table: 'orders', key: 'orders.id' }, /use bare column names/],
    [{ table: 'orders', key: "'orders/' || nosuch" }, /the database refused the guard for orders: column "nosuch" does not exist/],
    [{ table: 'nosuch', key: 'id' }, /there is no table "nosuch"/],
    [{ table: 'orders', key: 'id', fenceTable: 'nofence' }, /there is no fence table "nofence"/],
    [{ table: 'orders', key: 'id', tabel: 'x' }, /unknown installGuard option "tabel"/],
  ]) {
    const e = await installGuard(pool, opts).catch((x) => x);
    assert.equal(e.code, 'INVALID_ARGUMENT', JSON.stringify(opts));
    assert.match(e.message, re);
  }
  assert.equal((await catalog()).triggers, null);
  assert.equal(guardSql({ engine: 'postgres', table: 'orders', key: "'orders/' || id", columns: ['id', 'status'] }).includes("NEW.\"id\""), true);
});

test('PostgreSQL guard: a multi-process race on a guarded table applies every current-token transaction (no false refusals)', { skip }, async () => {
  await reset();
  const procs = 3;
  const count = 40;
  for (let p = 0; p < procs; p++) {
    await pool.query("INSERT INTO fencegate (key, state, value, version) VALUES ($1, '{\"v\":1,\"mark\":\"0\"}', NULL, 1)", [`orders/${10 + p}`]);
  }
  await gate.transaction('orders/1', 9, () => null);
  await removeGuard(pool, { table: 'orders' });
  for (let p = 0; p < procs; p++) await pool.query("INSERT INTO orders (id, status) VALUES ($1, 'race')", [10 + p]);
  await installGuard(pool, { table: 'orders', key: "'orders/' || id" });
  const run = promisify(execFile);
  const worker = new URL('./race-worker.mjs', import.meta.url).pathname;
  const outs = await Promise.all(Array.from({ length: procs }, (_, p) => run(process.execPath, [worker, PG_URL, String(10 + p), String(count), '9'])));
  const results = outs.map((o) => JSON.parse(o.stdout));
  assert.deepEqual(results, Array.from({ length: procs }, () => ({ ok: 2 * count, refused: [] })));
  const n = Object.fromEntries((await rows()).map((r) => [r.id, r.n]));
  assert.equal(n[1], procs * count);
  for (let p = 0; p < procs; p++) assert.equal(n[10 + p], count);
  assert.equal(await gate.mark('orders/1'), 9);
});

test('PostgreSQL guard: the fast paths (the canonical v1 text, an unchanged state) let no garbage and no lower mark through (exact errors)', { skip }, async () => {
  await reset();
  const fences = await fenceRows();
  const write = (state, key = 'orders/1') => refused('UPDATE fencegate SET state = $1, version = version + 1 WHERE key = $2', [state, key]);
  const fg = (message) => ({ code: FENCE_SQLSTATE, message: `fencegate guard: fence row orders/1: ${message}` });
  const notJson = fg('the new state refused: not JSON');
  const badMark = fg('the new state refused: "mark" is not canonical decimal text in 0..2^64-1');
  const members = fg('the new state refused: its members are not those of its format version');
  for (const [state, expected] of [
    // looks like the canonical text at the start, more after it
    ['{"v":1,"mark":"9"}x', notJson],
    ['{"v":1,"mark":"9"}}', notJson],
    ['{"v":1,"mark":"9"', notJson],
    // the right length, digits where the mark is, the wrong end
    ['{"v":1,"mark":"9"]', notJson],
    ['{"v":1,"mark":"99xy', notJson],
    // marks that a number parser would read as 9, or beyond 2^64-1 (and beyond bigint)
    ['{"v":1,"mark":"1e0"}', badMark], ['{"v":1,"mark":"9e0"}', badMark], ['{"v":1,"mark":"+9"}', badMark], ['{"v":1,"mark":" 9"}', badMark],
    ['{"v":1,"mark":"9\\n"}', badMark], ['{"v":1,"mark":"-9"}', badMark], ['{"v":1,"mark":"-0"}', badMark], ['{"v":1,"mark":"09"}', badMark],
    ['{"v":1,"mark":"00"}', badMark], ['{"v":1,"mark":"9.0"}', badMark], ['{"v":1,"mark":"９"}', badMark], ['{"v":1,"mark":""}', badMark],
    ['{"v":1,"mark":9}', badMark], ['{"v":1,"mark":1e0}', badMark],
    ['{"v":1,"mark":"18446744073709551616"}', badMark], ['{"v":1,"mark":"99999999999999999999"}', badMark], ['{"v":1,"mark":"9223372036854775807000"}', badMark],
    // the right shape in the wrong case, a repeated member, v as text
    ['{"V":1,"MARK":"9"}', fg('the new state refused: "v" is not 1, 2, 3 or 4')],
    ['{"v":"1","mark":"9"}', fg('the new state refused: "v" is not 1, 2, 3 or 4')],
    ['{"v":1e0,"mark":"9"}', fg('the new state refused: "v" is not 1, 2, 3 or 4')],
    ['{"v":10e-1,"mark":"9"}', fg('the new state refused: "v" is not 1, 2, 3 or 4')],
    ['{"v":1,"mark":"9","mark":"9"}', members],
  ]) {
    assert.deepEqual(await write(state), expected, state);
  }
  assert.deepEqual(await fenceRows(), fences);
  const lowered = (from, to) => fg(`lowering the mark from ${from} to ${to} refused: the mark never goes down`);
  const v1 = (m) => `{"v":1,"mark":"${m}"}`;
  assert.equal(await write(v1('20')), 'applied');
  assert.deepEqual(await write(v1('19')), lowered(20, 19));
  assert.equal(await write(v1('100')), 'applied');
  assert.deepEqual(await write(v1('99')), lowered(100, 99));
  assert.equal(await write(v1('18446744073709551615')), 'applied');
  assert.deepEqual(await write(v1('9223372036854775807')), lowered('18446744073709551615', '9223372036854775807'));
  assert.deepEqual(await write(v1('18446744073709551614')), lowered('18446744073709551615', '18446744073709551614'));
  // from a window state (the full check reads its mark) down to the canonical v1 text, and back
  const v4 = '{"v":4,"mark":"18446744073709551615","holder":null,"ops":[],"evicted":null,"quarantine":null}';
  assert.equal(await write(v4), 'applied');
  assert.deepEqual(await write(v1('7')), lowered('18446744073709551615', '7'));
  assert.equal(await write(v1('18446744073709551615')), 'applied');
  // the same state text: the version must still go up and the key stay
  const [{ version }] = (await fenceRows()).filter((r) => r.key === 'orders/1');
  assert.deepEqual(await refused("UPDATE fencegate SET state = state WHERE key = 'orders/1'"), fg(`version ${version} after ${version} refused: the version only goes up`));
  assert.deepEqual(await refused("UPDATE fencegate SET key = 'orders/9', version = version + 1 WHERE key = 'orders/1'"), fg('changing its key to orders/9 refused'));
  assert.deepEqual((await fenceRows()).find((r) => r.key === 'orders/1'), { key: 'orders/1', state: v1('18446744073709551615'), value: null, version });
  // the fast form's edges that are well formed; an INSERT takes the same check
  for (const m of ['0', '9223372036854775808', '18446744073709551615']) {
    assert.equal(await refused('INSERT INTO fencegate (key, state, value, version) VALUES ($1, $2, NULL, 1)', [`z/${m}`, v1(m)]), 'applied');
  }
  assert.deepEqual(await refused("INSERT INTO fencegate (key, state, value, version) VALUES ('z/bad', '{\"v\":1,\"mark\":\"01\"}', NULL, 1)"), {
    code: FENCE_SQLSTATE, message: 'fencegate guard: fence row z/bad: the new state refused: "mark" is not canonical decimal text in 0..2^64-1',
  });
  assert.equal(await gate.mark('z/9223372036854775808'), 9223372036854775808n);
  // with standard_conforming_strings off the trigger reads its texts the same
  const c = await pool.connect();
  try {
    await c.query('SET standard_conforming_strings = off');
    assert.equal((await c.query('UPDATE fencegate SET state = $1, version = version + 1 WHERE key = $2', [v1('2'), 'z/0'])).rowCount, 1);
    assert.equal((await c.query('UPDATE fencegate SET state = $1, version = version + 1 WHERE key = $2', [v1('1'), 'z/0']).catch((e) => e)).message,
      'fencegate guard: fence row z/0: lowering the mark from 2 to 1 refused: the mark never goes down');
  } finally {
    await c.query('RESET standard_conforming_strings');
    c.release();
  }
});

test('PostgreSQL guard: a state written before the guard (no xact) is checked even when rewritten unchanged', { skip }, async () => {
  await reset();
  await removeGuard(pool, { table: 'orders', fence: true });
  await pool.query("UPDATE fencegate SET state = 'garbage' WHERE key = 'orders/2'");
  await installGuard(pool, { table: 'orders', key: "'orders/' || id" });
  assert.deepEqual(await refused("UPDATE fencegate SET version = version + 1 WHERE key = 'orders/2'"), {
    code: FENCE_SQLSTATE, message: 'fencegate guard: fence row orders/2: the new state refused: not JSON',
  });
  // a well-formed one written before the guard: rewritten unchanged it passes, and is stamped
  assert.equal(await refused("UPDATE fencegate SET version = version + 1 WHERE key = 'orders/1'"), 'applied');
  assert.equal((await pool.query("SELECT xact IS NOT NULL AS stamped FROM fencegate WHERE key = 'orders/1'")).rows[0].stamped, true);
  assert.deepEqual((await fenceRows()).map((r) => r.state), ['{"v":1,"mark":"5"}', 'garbage']);
});

test('PostgreSQL guard: installing over the previous version replaces its functions and triggers (the same catalog as a fresh install), and the guard still holds', { skip }, async () => {
  const { readFileSync } = await import('node:fs');
  const previous = JSON.parse(readFileSync(new URL('./fixtures/previous-guard.json', import.meta.url), 'utf8'));
  await reset();
  const fresh = await catalog();
  await removeGuard(pool, { table: 'orders', fence: true });
  await pool.query(previous.postgres);
  const old = await catalog();
  assert.deepEqual(old.triggers, fresh.triggers);
  assert.deepEqual(old.fence_columns, fresh.fence_columns);
  assert.notDeepEqual(old.functions, fresh.functions);
  await installGuard(pool, { table: 'orders', key: "'orders/' || id" });
  assert.deepEqual(await catalog(), fresh);
  await installGuard(pool, { table: 'orders', key: "'orders/' || id" });
  assert.deepEqual(await catalog(), fresh);
  assert.deepEqual(await gate.transaction('orders/1', 6, setStatus('paid')), {
    key: 'orders/1', ok: true, outcome: 'advance', code: null, token: 6, markBefore: 5, markAfter: 6, result: 1,
  });
  assert.deepEqual(await gate.transaction('orders/1', 6, setStatus('shipped')), {
    key: 'orders/1', ok: true, outcome: 'accept', code: null, token: 6, markBefore: 6, markAfter: 6, result: 1,
  });
  assert.equal((await refused("UPDATE orders SET status = 'rogue' WHERE id = 1")).code, GUARD_SQLSTATE);
  assert.deepEqual(await refused(`UPDATE fencegate SET state = '{"v":1,"mark":"5"}', version = version + 1 WHERE key = 'orders/1'`), {
    code: FENCE_SQLSTATE, message: 'fencegate guard: fence row orders/1: lowering the mark from 6 to 5 refused: the mark never goes down',
  });
  assert.deepEqual(await rows(), [{ id: 1, status: 'shipped', n: 0 }, { id: 2, status: 'new', n: 0 }]);
});
