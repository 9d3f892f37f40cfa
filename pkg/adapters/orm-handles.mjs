// The transaction handles of the ORMs (Prisma, Knex, Kysely, Drizzle), as a
// statement runner for the SQL stores' `fenceIn` (docs/stores.md "ORMs").
//
// Each ORM is recognised by its shape, never by importing it: fencegate has no
// runtime dependencies, and the ORM's own copy (whatever its version) is the
// one the caller's transaction lives in. The fence statements then run on the
// very connection and transaction the ORM's callback holds, so they commit or
// roll back with the caller's statements.
import { invalid } from '../lib/options.mjs';

const DIALECTS = ['postgres', 'mysql', 'sqlite'];

// Drizzle tags its classes with this registered symbol (`is(value, Class)` reads it).
const DRIZZLE_KIND = Symbol.for('drizzle:entityKind');

/** `object[name]`, or undefined when reading it throws (a Proxy, a revoked handle): the shape tests never throw. */
function read(object, name) {
  try {
    return object[name];
  } catch {
    return undefined;
  }
}

/** The dialect an ORM names (Knex's client dialect, Drizzle's dialect class) as ours, or null when unknown. */
function dialectOf(name) {
  if (typeof name !== 'string') return null;
  if (/^(postgres|pg|cockroach|redshift)/i.test(name)) return 'postgres';
  if (/^(mysql|mariadb|singlestore)/i.test(name)) return 'mysql';
  if (/sqlite/i.test(name)) return 'sqlite';
  return null;
}

function sameDialect(orm, named, dialect) {
  const theirs = dialectOf(named);
  if (theirs !== null && theirs !== dialect) {
    throw invalid(`fenceIn: this ${orm} transaction is on ${theirs}, but the store is a ${dialect} store`);
  }
}

/**
 * Knex's bindings from our statement text: Knex takes `?` for every client and
 * turns it into the driver's own placeholder. PostgreSQL text has `$n`: each
 * becomes `?` with its parameter, in order of appearance (a repeated `$n`
 * binds again), and a literal `?` is escaped (`\?`). Quoted strings and
 * identifiers are copied as they are. MySQL and SQLite text already uses `?`.
 */
function knexRaw(text, params, dialect) {
  if (dialect !== 'postgres') return [text, params];
  let out = '';
  const bindings = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      const stop = end < 0 ? text.length : end + 1;
      out += text.slice(i, stop).replaceAll('?', '\\?');
      i = stop - 1;
    } else if (c === '$' && /[0-9]/.test(text[i + 1] ?? '')) {
      let j = i + 1;
      while (j < text.length && /[0-9]/.test(text[j])) j++;
      const n = Number(text.slice(i + 1, j));
      if (n < 1 || n > params.length) throw invalid(`fenceIn: statement placeholder $${n} has no parameter`);
      bindings.push(params[n - 1]);
      out += '?';
      i = j - 1;
    } else if (c === '?') {
      out += '\\?';
    } else {
      out += c;
    }
  }
  return [out, bindings];
}

/** Rows of a Knex `raw` result: pg's Result `{ rows }`, mysql's `[rows, fields]`, SQLite's rows (or a run result). */
function knexRows(result, dialect) {
  if (dialect === 'postgres') return result !== null && typeof result === 'object' && Array.isArray(result.rows) ? result.rows : [];
  if (dialect === 'mysql') return Array.isArray(result) && Array.isArray(result[0]) ? result[0] : [];
  return Array.isArray(result) ? result : [];
}

/** A raw CompiledQuery for Kysely's `executeQuery`, built as `CompiledQuery.raw(sql, parameters)` builds it. */
function kyselyQuery(text, params) {
  return Object.freeze({
    sql: text,
    query: Object.freeze({ kind: 'RawNode', sqlFragments: Object.freeze([text]), parameters: Object.freeze([]) }),
    parameters: Object.freeze([...params]),
    queryId: Object.freeze({ queryId: `fencegate${Math.random().toString(36).slice(2, 10)}` }),
  });
}

/** The runner over the driver client that a Drizzle session holds (its transaction's own connection). */
function drizzleClient(client, dialect) {
  if (client === null || (typeof client !== 'object' && typeof client !== 'function')) return null;
  if (dialect === 'postgres') {
    if (typeof read(client, 'unsafe') === 'function') {
      // postgres.js: the `sql` of `sql.begin(…)`
      return async (text, params) => Array.from(await client.unsafe(text, params));
    }
    if (typeof read(client, 'query') === 'function') {
      // node-postgres: the PoolClient (or Client) the transaction runs on
      return async (text, params) => {
        const result = await client.query(text, params);
        return result !== null && typeof result === 'object' && Array.isArray(result.rows) ? result.rows : [];
      };
    }
    return null;
  }
  if (dialect === 'mysql') {
    if (typeof read(client, 'query') !== 'function') return null;
    // mysql2/promise (Drizzle takes the promise API): `[rows, fields]`, or `[ResultSetHeader, …]` for a write
    return async (text, params) => {
      const result = await client.query(text, params);
      return Array.isArray(result) && Array.isArray(result[0]) ? result[0] : [];
    };
  }
  if (typeof read(client, 'prepare') !== 'function') return null;
  // better-sqlite3 / bun:sqlite: synchronous statements; a statement without a result set is run
  return async (text, params) => {
    const statement = client.prepare(text);
    if (statement.reader === false) {
      statement.run(...params);
      return [];
    }
    return statement.all(...params);
  };
}

/**
 * `(text, params) => Promise<rows>` that runs one statement on the transaction
 * an ORM handed to its callback, or null when `handle` is no ORM's handle.
 *
 * - `dialect`: `'postgres' | 'mysql' | 'sqlite'`, the store's engine; `text` uses
 *   that engine's placeholders (`$1…` on PostgreSQL, `?` on MySQL and SQLite) and
 *   `params` is the array of values in placeholder order.
 * - The answer is an array of row objects keyed by column name (empty for a
 *   statement without a result set). Integers come as the ORM gives them
 *   (number, string or bigint: e.g. Prisma answers a `bigint` column as a bigint).
 *
 * Recognised (by shape, the ORM is not imported):
 * - Prisma: the interactive transaction's client `tx` of `prisma.$transaction(async (tx) => …)`
 *   (has `$queryRawUnsafe`, and no `$connect`);
 * - Knex: the `trx` of `knex.transaction(async (trx) => …)` (a function with `raw` and `isTransaction`);
 * - Kysely: the `trx` of `db.transaction().execute(async (trx) => …)` or a
 *   `db.startTransaction().execute()` (has `executeQuery`, `isTransaction` true);
 * - Drizzle: the `tx` of `db.transaction(async (tx) => …)` (a Drizzle `…Transaction`
 *   whose session holds a pg, postgres.js, mysql2 or better-sqlite3 client).
 *
 * Throws FencegateError INVALID_ARGUMENT for an ORM handle that is not inside a
 * transaction (the PrismaClient, the knex instance, the Kysely or Drizzle
 * database itself; a finished Knex or Kysely transaction): the fence and the
 * caller's statements would not commit together. Also for a handle whose ORM
 * names another dialect than `dialect`, and for an unknown `dialect`.
 */
export function ormRunner(handle, dialect) {
  if (!DIALECTS.includes(dialect)) throw invalid(`ormRunner: dialect must be one of ${DIALECTS.join(', ')}`);
  if (handle === null || (typeof handle !== 'object' && typeof handle !== 'function')) return null;

  // Prisma: a client or an interactive transaction's client (a Proxy; unknown members read as undefined)
  if (typeof read(handle, '$queryRawUnsafe') === 'function') {
    if (typeof read(handle, '$connect') === 'function') {
      throw invalid('fenceIn: this is a PrismaClient, not an interactive transaction: call it inside prisma.$transaction(async (tx) => …) with tx');
    }
    return async (text, params) => {
      const rows = await handle.$queryRawUnsafe(text, ...params);
      return Array.isArray(rows) ? rows : [];
    };
  }

  // Knex: the knex instance and its transactions are functions (query builders) with `raw`
  if (typeof handle === 'function' && typeof read(handle, 'raw') === 'function' && typeof read(handle, 'transaction') === 'function') {
    if (read(handle, 'isTransaction') !== true) {
      throw invalid('fenceIn: this is a knex instance, not a transaction: call it inside knex.transaction(async (trx) => …) with trx');
    }
    const isCompleted = read(handle, 'isCompleted');
    if (typeof isCompleted === 'function' && isCompleted.call(handle) === true) {
      throw invalid('fenceIn: this Knex transaction has already committed or rolled back');
    }
    sameDialect('Knex', read(read(handle, 'client') ?? {}, 'dialect'), dialect);
    return async (text, params) => {
      const [sql, bindings] = knexRaw(text, params, dialect);
      return knexRows(await handle.raw(sql, bindings), dialect);
    };
  }

  // Kysely: Kysely, Transaction and ControlledTransaction all execute compiled queries
  if (typeof read(handle, 'executeQuery') === 'function' && typeof read(handle, 'selectFrom') === 'function') {
    if (read(handle, 'isTransaction') !== true) {
      throw invalid('fenceIn: this is a Kysely instance, not a transaction: call it inside db.transaction().execute(async (trx) => …) with trx');
    }
    if (read(handle, 'isCommitted') === true || read(handle, 'isRolledBack') === true) {
      throw invalid('fenceIn: this Kysely transaction has already committed or rolled back');
    }
    return async (text, params) => {
      const result = await handle.executeQuery(kyselyQuery(text, params));
      return result !== null && typeof result === 'object' && Array.isArray(result.rows) ? result.rows : [];
    };
  }

  // Drizzle: a database or transaction (tagged classes) over a session that holds the driver's client
  const kind = read(read(handle, 'constructor') ?? {}, DRIZZLE_KIND);
  const session = read(handle, 'session');
  if (typeof kind === 'string' && session !== null && typeof session === 'object') {
    if (!kind.endsWith('Transaction')) {
      throw invalid('fenceIn: this is a Drizzle database, not a transaction: call it inside db.transaction(async (tx) => …) with tx');
    }
    const dialectObject = read(handle, 'dialect');
    sameDialect('Drizzle', read(read(dialectObject ?? {}, 'constructor') ?? {}, DRIZZLE_KIND), dialect);
    const run = drizzleClient(read(session, 'client'), dialect);
    if (run === null) throw invalid(`fenceIn: this Drizzle transaction's driver client is not one fencegate runs ${dialect} statements on (pg, postgres.js, mysql2, better-sqlite3)`);
    return run;
  }
  return null;
}
