// Running fencegate's fence statements on a transaction handle the caller
// already has (Gate.fenceIn): one place that knows the handles of the SQL
// drivers. ORM transactions come first (adapters/orm-handles.mjs), then the
// plain drivers: a pg Client or PoolClient, a postgres.js transaction `sql`
// (inside `sql.begin`) or reserved connection, a mysql2 Connection or
// PoolConnection (promise or callback API).
//
// A runner is `async (text, params) => rows`: `text` in the dialect's own
// placeholders (`'postgres'`: `$1, $2…`; `'mysql'`: `?`), `rows` an array of
// plain row objects (empty for a statement without a result set). It runs
// exactly the statement given, on the handle's own connection, inside
// whatever transaction is open there; it never begins or ends one. A runner
// may carry `inTransaction: true` when the handle is inside a transaction by
// construction (a postgres.js `sql.begin` transaction, an ORM's transaction).
import { ormRunner } from './orm-handles.mjs';

const isObject = (x) => x !== null && (typeof x === 'object' || typeof x === 'function');

/** Reads `o[name]`, a getter's throw read as undefined (a hostile handle is refused, not a crash). */
function member(o, name) {
  try {
    return o[name];
  } catch {
    return undefined;
  }
}

/**
 * What kind of connection pool `handle` is — `'pg Pool'`, `'postgres.js sql'`
 * (the top-level instance, whose statements each take any connection),
 * `'mysql2 Pool'` — or null when it is not a pool. A pool has no transaction
 * of its own, so a fence step on it could not commit with the caller's statements.
 */
export function poolKind(handle) {
  if (!isObject(handle)) return null;
  if (typeof handle === 'function' && typeof member(handle, 'unsafe') === 'function' && typeof member(handle, 'begin') === 'function') {
    return 'postgres.js sql';
  }
  if (typeof member(handle, 'query') === 'function' && typeof member(handle, 'connect') === 'function' && typeof member(handle, 'totalCount') === 'number') {
    return 'pg Pool';
  }
  if (typeof member(handle, 'getConnection') === 'function' && typeof member(handle, 'execute') === 'function') return 'mysql2 Pool';
  return null;
}

/** The pg Client / PoolClient `handle`: it has `query` and is not a pool (nor a mysql2 connection, which has `execute`). */
function pgClient(handle) {
  return typeof handle === 'object' && typeof member(handle, 'query') === 'function' && typeof member(handle, 'execute') !== 'function' && poolKind(handle) === null;
}

/** A postgres.js `sql` bound to one connection: a transaction (`savepoint`) or a reserved connection (`release`). */
function postgresJsBound(handle) {
  return (
    typeof handle === 'function' &&
    typeof member(handle, 'unsafe') === 'function' &&
    (typeof member(handle, 'savepoint') === 'function' || typeof member(handle, 'release') === 'function')
  );
}

/** The promise API of a mysql2 Connection / PoolConnection (`.promise()` for the callback API), or null. */
function mysqlConnection(handle) {
  if (typeof handle !== 'object' || typeof member(handle, 'execute') !== 'function' || typeof member(handle, 'query') !== 'function') return null;
  if (poolKind(handle) !== null) return null;
  const promise = member(handle, 'promise');
  if (typeof promise === 'function' && typeof member(handle, 'beginTransaction') === 'function') {
    // the callback API's connection has promise(); the promise API's does not (its execute returns a Promise)
    try {
      return promise.call(handle);
    } catch {
      return null;
    }
  }
  return handle;
}

/**
 * `async (text, params) => rows` running `dialect` SQL (`'postgres'` or
 * `'mysql'`) on `handle`: an ORM transaction (orm-handles.mjs), else a pg
 * Client/PoolClient or postgres.js transaction / reserved `sql` (postgres), a
 * mysql2 Connection/PoolConnection (mysql). null for anything else, pools
 * included (see `poolKind`).
 */
export function sqlRunner(handle, dialect) {
  if (!isObject(handle)) return null;
  const orm = ormRunner(handle, dialect);
  if (orm !== null && orm !== undefined) return orm;
  if (dialect === 'postgres') {
    if (postgresJsBound(handle)) {
      const run = async (text, params) => [...(await handle.unsafe(text, params, { prepare: true }))];
      // a postgres.js transaction sql (it has savepoint) is inside its BEGIN by construction
      if (typeof member(handle, 'savepoint') === 'function') run.inTransaction = true;
      return run;
    }
    if (pgClient(handle)) return async (text, params) => (await handle.query({ text, values: params })).rows;
    return null;
  }
  if (dialect === 'mysql') {
    const conn = mysqlConnection(handle);
    if (conn === null) return null;
    return async (text, params) => {
      const [rows] = await conn.execute(text, params);
      return Array.isArray(rows) ? rows : [];
    };
  }
  return null;
}

/**
 * Whether the pg client `handle` says it is inside a transaction block:
 * true / false from its protocol status (pg ≥ 8.12 `getTransactionStatus()`:
 * 'T' or 'E' / 'I'), undefined when it cannot tell (another handle, an older pg).
 */
export function pgInTransaction(handle) {
  if (!isObject(handle) || typeof member(handle, 'getTransactionStatus') !== 'function') return undefined;
  let s;
  try {
    s = handle.getTransactionStatus();
  } catch {
    return undefined;
  }
  if (s === 'I') return false;
  if (s === 'T' || s === 'E') return true;
  return undefined;
}
