// fencegate/guard — the database itself refuses a change to a protected table
// that did not pass the fence (docs/guard.md).
//
// The decision stays in Wasm. The database checks only two things:
//   1. a change (INSERT, UPDATE, DELETE) to a row of the protected table happens
//      in a transaction that wrote the fence row of that row's key (the key is
//      an SQL expression over the row, e.g. `'orders/' || id`): fencegate
//      writes the fence row in the same transaction BEFORE the caller's
//      statements (Gate.transaction, fenceIn), and a trigger on the fence table
//      records which transaction wrote it;
//   2. the fence table keeps well-formed states whose mark never goes down; its
//      rows are never deleted.
// Refusals are SQL errors with a fixed SQLSTATE (GUARD_SQLSTATE: a change to a
// protected row; FENCE_SQLSTATE: a fence row write) and a message naming the key.
//
// Per engine:
//   PostgreSQL (≥ 14): the fence row records pg_current_xact_id() (column `xact`);
//     exact per transaction, also for fenceIn in a transaction of your own.
//   MySQL / MariaDB: no per-transaction id is readable in SQL (information_schema.innodb_trx
//     is a cache refreshed at most every 0.1 s): the fence row records a SHA-256 of CONNECTION_ID() and
//     a per-transaction nonce the store keeps in the session variable @fencegate_xact.
//   SQLite (better-sqlite3): the protected table's triggers call fencegate_pass(…, version), a
//     function SqliteStore registers on its own connection, with the key's fence row version
//     as the transaction sees it; it answers from the store's record of the fence rows (key and
//     version) its fence steps wrote in the transaction open on that connection. The triggers
//     also check the rows a REPLACE or an upsert would change (the table's unique keys).
// The SQL text is also available as text (guardSql) for migration tools.
import { FencegateError } from '../lib/errors.mjs';
import { invalid, checkOptions } from '../lib/options.mjs';

/** SQLSTATE of a refused change to a protected row (no fence passed for its key in this transaction). */
export const GUARD_SQLSTATE = 'FG001';
/** SQLSTATE of a refused fence row write (mark lowered, state not well formed, key changed, row deleted). */
export const FENCE_SQLSTATE = 'FG002';

const ENGINES = ['postgres', 'mysql', 'sqlite'];
// Generated object names are `fencegate_guard_<table>` / `fencegate_fence_<fence table>`:
// table names up to 47 characters keep them within PostgreSQL's 63.
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,46}$/;
const MAX_KEY_SQL = 2000;

function nameOf(value, what) {
  if (typeof value !== 'string' || !NAME.test(value)) {
    throw invalid(`${what} must be a plain SQL identifier of at most 47 characters ([A-Za-z_][A-Za-z0-9_]*), got ${typeof value === 'string' ? JSON.stringify(value) : typeof value}`, { [what]: value });
  }
  return value;
}

/** `options` checked: `{ engine, table, key, fenceTable, columns }` (what `need` lists is required). */
function checked(options, what, need) {
  const o = checkOptions(options, { engine: 'string', table: 'string', key: 'string', fenceTable: 'string', columns: 'array', unique: 'array', fence: 'boolean', dryRun: 'boolean' }, what);
  if (o.engine !== undefined && !ENGINES.includes(o.engine)) throw invalid(`${what}: engine must be one of ${ENGINES.join(', ')}, got ${JSON.stringify(o.engine)}`, { engine: o.engine });
  const out = { engine: o.engine, fenceTable: nameOf(o.fenceTable ?? 'fencegate', 'fenceTable'), fence: o.fence === true, dryRun: o.dryRun === true };
  if (o.table !== undefined || need.includes('table')) out.table = nameOf(o.table, 'table');
  if (out.table !== undefined && out.table === out.fenceTable) throw invalid(`${what}: the protected table cannot be the fence table itself`, { table: out.table });
  if (need.includes('key')) {
    if (typeof o.key !== 'string' || o.key.trim() === '' || o.key.length > MAX_KEY_SQL) {
      throw invalid(`${what}: key must be an SQL expression over the row's columns (e.g. "'orders/' || id"), 1 to ${MAX_KEY_SQL} characters`, { key: o.key });
    }
    out.key = o.key;
  }
  if (o.columns !== undefined) {
    for (const c of o.columns) {
      if (typeof c !== 'string' || !/^[A-Za-z_][A-Za-z0-9_$]{0,63}$/.test(c)) throw invalid(`${what}: columns must be plain column names, got ${JSON.stringify(c)}`, { column: c });
    }
    out.columns = [...o.columns];
  }
  if (o.unique !== undefined) out.unique = uniqueOf(o.unique, what);
  return out;
}

/**
 * SQLite's `unique` option: the table's unique keys (its PRIMARY KEY and UNIQUE constraints and
 * indexes, and `rowid` for a table with a rowid), each a list of `"column"` or
 * `"column COLLATE name"` (the index's collation), or `["rowid"]`. As `{ name, coll }` or `{ rowid: true }`.
 */
function uniqueOf(list, what) {
  const bad = (u) => invalid(`${what}: unique must be a list of unique keys, each a non-empty list of "column", "column COLLATE name" or the one entry "rowid", got ${JSON.stringify(u)}`, { unique: u });
  return list.map((u) => {
    if (!Array.isArray(u) || u.length === 0 || u.length > 64) throw bad(u);
    if (u.length === 1 && u[0] === 'rowid') return [{ rowid: true }];
    return u.map((c) => {
      const m = typeof c === 'string' ? /^([A-Za-z_][A-Za-z0-9_$]{0,63})(?: COLLATE ([A-Za-z_][A-Za-z0-9_]{0,63}))?$/.exec(c) : null;
      if (m === null) throw bad(u);
      return m[2] === undefined ? { name: m[1] } : { name: m[1], coll: m[2] };
    });
  });
}

/**
 * SQLite: the unique keys of `table` as uniqueOf gives them, read from the schema (rowid unless
 * WITHOUT ROWID; every unique index's key columns with their collations; a partial index is
 * checked without its WHERE, which can only ask for more passes). INVALID_ARGUMENT for a unique
 * index on an expression: a REPLACE over it could delete rows the guard cannot find.
 */
async function sqUniqueKeys(s, table) {
  const out = [];
  const [info] = await s.run('SELECT wr FROM pragma_table_list WHERE schema = \'main\' AND name = ?', [table]);
  if (info !== undefined && info.wr === 0) out.push([{ rowid: true }]);
  for (const ix of await s.run('SELECT name FROM pragma_index_list(?) WHERE "unique" = 1 ORDER BY name', [table])) {
    const cols = await s.run('SELECT cid, name, coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno', [ix.name]);
    if (cols.some((c) => c.cid < 0)) {
      throw invalid(`installGuard: the unique index ${JSON.stringify(ix.name)} of ${JSON.stringify(table)} is on an expression: the SQLite guard cannot find the rows a REPLACE over it would delete (make it a unique index on columns, or drop it)`, { table, index: ix.name });
    }
    out.push(cols.map((c) => ({ name: c.name, coll: c.coll })));
  }
  return out;
}

/**
 * The key expression with every reference to a column of the row qualified by
 * `row` (NEW or OLD). `key` is SQL over bare column names: string literals,
 * numbers, operators, function calls and casts; a bare identifier that names a
 * column (PostgreSQL: after folding an unquoted name to lower case; MySQL and
 * SQLite: case-insensitively) and is not a function name or a `::type`
 * becomes `row.column`. Refused (INVALID_ARGUMENT): `;`, comments, `$`,
 * backslashes, `?`, qualified names (`t.id`) and unterminated literals, so the
 * expression cannot end or escape the trigger it is put into.
 */
export function qualifyKey(key, columns, row, engine) {
  const q = engine === 'mysql' ? '`' : '"';
  const bad = (why) => invalid(`key ${JSON.stringify(key)}: ${why}`, { key });
  const cols = new Map();
  for (const c of columns) cols.set(engine === 'postgres' ? c : c.toLowerCase(), c);
  const column = (ident, quoted) => {
    if (quoted) return columns.includes(ident) ? ident : undefined;
    return cols.get(ident.toLowerCase());
  };
  let out = '';
  let i = 0;
  const n = key.length;
  let prev = ''; // the previous significant token: '.', '::', 'ident', or another character
  while (i < n) {
    const ch = key[i];
    if (ch === ';' || ch === '$' || ch === '\\' || ch === '?' || ch === '\0') throw bad(`${JSON.stringify(ch)} is not allowed in a key expression`);
    if ((ch === '-' && key[i + 1] === '-') || (ch === '/' && key[i + 1] === '*') || ch === '#') throw bad('comments are not allowed in a key expression');
    if (ch === "'") {
      let j = i + 1;
      for (;;) {
        if (j >= n) throw bad('unterminated string literal');
        if (key[j] === "'") {
          if (key[j + 1] === "'") {
            j += 2;
            continue;
          }
          break;
        }
        j++;
      }
      out += key.slice(i, j + 1);
      i = j + 1;
      prev = 'literal';
      continue;
    }
    const quoted = ch === '"' || ch === '`';
    if (quoted || /[A-Za-z_]/.test(ch)) {
      let name;
      let j;
      if (quoted) {
        if ((ch === '`') !== (engine === 'mysql')) throw bad(`${ch} quotes an identifier in ${engine === 'mysql' ? 'PostgreSQL and SQLite' : 'MySQL'}, not here`);
        j = key.indexOf(ch, i + 1);
        if (j < 0) throw bad('unterminated quoted identifier');
        name = key.slice(i + 1, j);
        j++;
      } else {
        j = i + 1;
        while (j < n && /[A-Za-z0-9_]/.test(key[j])) j++;
        name = key.slice(i, j);
      }
      let after = j;
      while (after < n && /\s/.test(key[after])) after++;
      if (key[after] === '.' || prev === '.') throw bad('use bare column names (no table or schema qualification)');
      const col = prev === '::' || key[after] === '(' ? undefined : column(name, quoted);
      out += col === undefined ? key.slice(i, j) : `${row}.${q}${col}${q}`;
      i = j;
      prev = 'ident';
      continue;
    }
    if (/[0-9]/.test(ch)) {
      let j = i;
      while (j < n && /[0-9.eE]/.test(key[j])) j++;
      out += key.slice(i, j);
      i = j;
      prev = 'number';
      continue;
    }
    if (ch === ':' && key[i + 1] === ':') {
      out += '::';
      i += 2;
      prev = '::';
      continue;
    }
    if (!/\s/.test(ch)) prev = ch;
    out += ch;
    i++;
  }
  return out;
}

/** SQL string literal. */
function lit(text) {
  return `'${text.replace(/'/g, "''")}'`;
}

// ---------------------------------------------------------------------------
// PostgreSQL

/** PL/pgSQL: raises FENCE_SQLSTATE unless the text in `s` is a well-formed fence state; sets `m` to its mark. */
function pgStateCheck(s, m, what) {
  const fail = (why) => `RAISE EXCEPTION USING ERRCODE = '${FENCE_SQLSTATE}', MESSAGE = format('fencegate guard: fence row %s: ${what} state refused: ${why}', k);`;
  return `
    BEGIN
      j := ${s}::jsonb;
    EXCEPTION WHEN others THEN
      ${fail('not JSON')}
    END;
    IF jsonb_typeof(j) IS DISTINCT FROM 'object' THEN ${fail('not a JSON object')} END IF;
    -- the text of v as written (json keeps it; jsonb reads 1e0 as 1)
    IF jsonb_typeof(j->'v') IS DISTINCT FROM 'number' OR (${s}::json->>'v') NOT IN ('1', '2', '3', '4') THEN ${fail('"v" is not 1, 2, 3 or 4')} END IF;
    SELECT array_agg(f ORDER BY f) INTO names FROM jsonb_object_keys(j) AS f;
    -- jsonb keeps one of two duplicate members: the text's own member count (json) must match too
    IF (SELECT count(*) FROM json_object_keys(${s}::json)) <> cardinality(names) OR names IS DISTINCT FROM (CASE j->>'v' WHEN '1' THEN ARRAY['mark', 'v'] WHEN '2' THEN ARRAY['evicted', 'holder', 'mark', 'ops', 'v']
        ELSE ARRAY['evicted', 'holder', 'mark', 'ops', 'quarantine', 'v'] END) THEN
      ${fail('its members are not those of its format version')}
    END IF;
    IF jsonb_typeof(j->'mark') IS DISTINCT FROM 'string' OR (j->>'mark') !~ '^(0|[1-9][0-9]{0,19})$' OR (j->>'mark')::numeric > 18446744073709551615 THEN
      ${fail('"mark" is not canonical decimal text in 0..2^64-1')}
    END IF;
    ${m} := (j->>'mark')::numeric;
    IF j->>'v' <> '1' THEN
      IF jsonb_typeof(j->'holder') NOT IN ('null', 'string') THEN ${fail('"holder" is not null or a string')} END IF;
      IF jsonb_typeof(j->'evicted') = 'string' THEN
        IF (j->>'evicted') !~ '^(fnv1a:)?[0-9a-f]*$' THEN ${fail('"evicted" is not hex text')} END IF;
      ELSIF jsonb_typeof(j->'evicted') <> 'null' THEN ${fail('"evicted" is not null or hex text')} END IF;
      IF j->>'v' = '4' THEN
        IF jsonb_typeof(j->'ops') <> 'array' OR EXISTS (SELECT 1 FROM jsonb_array_elements(j->'ops') AS e WHERE jsonb_typeof(e) <> 'array'
            OR jsonb_array_length(e) NOT IN (2, 3) OR jsonb_typeof(e->0) <> 'string' OR jsonb_typeof(e->1) <> 'string'
            OR (e->>1) !~ '^(0|[1-9][0-9]{0,19})$' OR (e->>1)::numeric > ${m}
            OR (jsonb_array_length(e) = 3 AND (jsonb_typeof(e->2) <> 'string' OR (e->>2) !~ '^[0-9a-f]{32}$'))) THEN
          ${fail('"ops" is not a list of [id, mark before, fingerprint?]')}
        END IF;
      ELSIF jsonb_typeof(j->'ops') <> 'object' OR EXISTS (SELECT 1 FROM jsonb_each(j->'ops') AS e WHERE jsonb_typeof(e.value) <> 'string'
          OR (e.value #>> '{}') !~ '^(0|[1-9][0-9]{0,19})$' OR (e.value #>> '{}')::numeric > ${m}) THEN
        ${fail('"ops" is not an object of id: mark before')}
      END IF;
      IF j->>'v' <> '2' AND jsonb_typeof(j->'quarantine') <> 'null' AND (jsonb_typeof(j->'quarantine') <> 'string'
          OR (j->>'quarantine') !~ '^(0|[1-9][0-9]{0,19})$' OR (j->>'quarantine')::numeric > ${m}) THEN
        ${fail('"quarantine" is not null or a decimal at most the mark')}
      END IF;
    END IF;`;
}

/**
 * PostgreSQL: the mark of the state text `s` as numeric when `s` is exactly
 * `{"v":1,"mark":"M"}` with M canonical decimal of at most 20 digits, else NULL
 * (the bound 2^64−1 is checked by the caller). The state fencegate writes for a key
 * without holder or window, read without a JSON parse: the whole text is compared
 * with the form rebuilt around M (COLLATE "C", byte for byte), and M by a regular
 * expression match (`~`: no substring extraction, which costs several times more;
 * PostgreSQL's `$` matches only at the end, so no trailing newline passes). No
 * backslashes, so it reads the same under standard_conforming_strings off. Every text
 * it accepts (within the bound) passes pgStateCheck too.
 */
function pgV1Mark(s) {
  // nothing in the WHEN can raise (PostgreSQL does not promise the order of AND): a length never below 0
  const m = `substr(${s}, 16, greatest(length(${s}) - 17, 0))`;
  return `(CASE WHEN length(${s}) <= 37 AND (${s} COLLATE "C") = ('{"v":1,"mark":"' || ${m} || '"}') AND ${m} ~ '^(0|[1-9][0-9]*)$' THEN ${m}::numeric END)`;
}

/** `text` with every line but the first indented by `by` more spaces. */
const indent = (text, by) => text.replace(/\n/g, `\n${' '.repeat(by)}`);

/**
 * PL/pgSQL: raises FENCE_SQLSTATE unless `s` is a well-formed fence state and sets `m`
 * to its mark: the canonical v1 text by text operations (pgV1Mark), anything else
 * by the full check (pgStateCheck, which names what is wrong).
 */
function pgNewState(s, m) {
  return `${m} := ${pgV1Mark(s)};
IF ${m} IS NULL OR ${m} > 18446744073709551615 THEN
  -- not the canonical v1 text: the full check${indent(pgStateCheck(s, m, 'the new').replace(/\n {4}/g, '\n'), 2)}
END IF;`;
}

function pgInstall(o) {
  const F = `"${o.fenceTable}"`;
  const T = `"${o.table}"`;
  const fenceFn = `"fencegate_fence_${o.fenceTable}"`;
  const guardFn = `"fencegate_guard_${o.table}"`;
  const newKey = qualifyKey(o.key, o.columns, 'NEW', 'postgres');
  const oldKey = qualifyKey(o.key, o.columns, 'OLD', 'postgres');
  const bare = qualifyKey(o.key, [], 'NEW', 'postgres');
  const hint = "HINT = 'change protected rows through fencegate (gate.transaction, or gate.fenceIn before the change in the same transaction)'";
  /** Refuses the change unless the fence row of key `k` was written by this transaction. */
  const passed = (k) => `SELECT f.xact INTO x FROM ${F} AS f WHERE f.key = ${k};
IF x IS DISTINCT FROM pg_current_xact_id() THEN
  IF ${k} IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = '${GUARD_SQLSTATE}', MESSAGE = format('fencegate guard: %s on %I refused: the key expression is NULL for this row', TG_OP, TG_TABLE_NAME);
  ELSIF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = '${GUARD_SQLSTATE}', MESSAGE = format('fencegate guard: %s on %I refused: key %s has no fence row: this transaction did not pass the fence for it', TG_OP, TG_TABLE_NAME, ${k}),
      ${hint};
  END IF;
  RAISE EXCEPTION USING ERRCODE = '${GUARD_SQLSTATE}', MESSAGE = format('fencegate guard: %s on %I refused: this transaction did not pass the fence for key %s (its fence row was not written by this transaction)', TG_OP, TG_TABLE_NAME, ${k}),
    ${hint};
END IF;`;
  return `-- fencegate guard (docs/guard.md): ${o.table} behind the fence table ${o.fenceTable}, key ${o.key.replace(/\s+/g, ' ')}
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('fencegate guard'));
-- The key expression, checked against the table (an unknown column or a type error stops here).
SELECT (${bare})::text FROM ${T} LIMIT 0;

-- 1. The fence table: which transaction wrote each fence row; well-formed states,
--    marks that never go down, versions that start at 1 and go up by 1, no deletes, no TRUNCATE.
--    CREATE OR REPLACE: installing over an earlier version of the guard replaces it.
ALTER TABLE ${F} ADD COLUMN IF NOT EXISTS xact xid8;
CREATE OR REPLACE FUNCTION ${fenceFn}() RETURNS trigger LANGUAGE plpgsql AS $fencegate$
DECLARE
  k text;
  j jsonb;
  names text[];
  mark numeric;
  old_mark numeric;
BEGIN
  IF TG_OP = 'UPDATE' THEN
    -- The same state text as a row written under the guard (xact set: that text passed this
    -- check when it was written; the trigger sets xact on every write), the same key, a higher
    -- version: well formed, and the same mark. One expression; anything else is checked below.
    IF (CASE WHEN NEW.version > OLD.version THEN NEW.version - 1 = OLD.version ELSE false END) AND OLD.xact IS NOT NULL AND NEW.key = (OLD.key COLLATE "C") AND NEW.state = (OLD.state COLLATE "C") THEN
      NEW.xact := pg_current_xact_id();
      RETURN NEW;
    END IF;
    IF NEW.key IS DISTINCT FROM OLD.key THEN
      RAISE EXCEPTION USING ERRCODE = '${FENCE_SQLSTATE}', MESSAGE = format('fencegate guard: fence row %s: changing its key to %s refused', OLD.key, NEW.key);
    END IF;
  ELSIF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION USING ERRCODE = '${FENCE_SQLSTATE}', MESSAGE = format('fencegate guard: fence row %s: DELETE refused: fence rows are never removed (that would lower the mark to 0)', OLD.key);
  ELSIF TG_OP <> 'INSERT' THEN
    RAISE EXCEPTION USING ERRCODE = '${FENCE_SQLSTATE}', MESSAGE = format('fencegate guard: TRUNCATE of the fence table %I refused: fence rows are never removed', TG_TABLE_NAME);
  END IF;
  -- INSERT, or an UPDATE off the path above: the checks in order (key, state, version, mark).
  k := NEW.key;
  IF TG_OP = 'INSERT' OR OLD.xact IS NULL OR NEW.state IS DISTINCT FROM (OLD.state COLLATE "C") THEN
    ${indent(pgNewState('NEW.state', 'mark'), 4)}
  END IF;
  IF TG_OP = 'INSERT' AND NEW.version IS DISTINCT FROM 1 THEN
    RAISE EXCEPTION USING ERRCODE = '${FENCE_SQLSTATE}', MESSAGE = format('fencegate guard: fence row %s: version %s refused: a new fence row starts at version 1', k, NEW.version);
  END IF;
  IF TG_OP = 'UPDATE' THEN
    IF NEW.version IS NULL OR NEW.version <= OLD.version THEN
      RAISE EXCEPTION USING ERRCODE = '${FENCE_SQLSTATE}', MESSAGE = format('fencegate guard: fence row %s: version %s after %s refused: the version only goes up', k, NEW.version, OLD.version);
    END IF;
    -- fencegate writes version = version + 1: a jump (up to the bigint maximum) would end the key's fenced writes
    IF NEW.version - 1 <> OLD.version THEN
      RAISE EXCEPTION USING ERRCODE = '${FENCE_SQLSTATE}', MESSAGE = format('fencegate guard: fence row %s: version %s after %s refused: the version goes up by exactly 1', k, NEW.version, OLD.version);
    END IF;
    -- The old mark: a state written under the guard (xact set) is well formed; one written
    -- before it is read when it can be, and not compared when it cannot.
    IF NEW.state IS DISTINCT FROM (OLD.state COLLATE "C") THEN
      old_mark := ${pgV1Mark('OLD.state')};
      IF old_mark IS NULL AND OLD.xact IS NOT NULL THEN
        old_mark := (OLD.state::json->>'mark')::numeric;
      ELSIF old_mark IS NULL THEN
        BEGIN
          old_mark := (OLD.state::json->>'mark')::numeric;
        EXCEPTION WHEN others THEN
          old_mark := NULL;
        END;
      END IF;
      IF old_mark IS NOT NULL AND mark < old_mark THEN
        RAISE EXCEPTION USING ERRCODE = '${FENCE_SQLSTATE}', MESSAGE = format('fencegate guard: fence row %s: lowering the mark from %s to %s refused: the mark never goes down', k, old_mark, mark);
      END IF;
    END IF;
  END IF;
  NEW.xact := pg_current_xact_id();
  RETURN NEW;
END
$fencegate$;
CREATE OR REPLACE TRIGGER fencegate_fence BEFORE INSERT OR UPDATE OR DELETE ON ${F} FOR EACH ROW EXECUTE FUNCTION ${fenceFn}();
CREATE OR REPLACE TRIGGER fencegate_fence_truncate BEFORE TRUNCATE ON ${F} FOR EACH STATEMENT EXECUTE FUNCTION ${fenceFn}();

-- 2. The protected table: a change to a row is allowed only in the transaction that wrote the
--    fence row of the row's key (the old row's key and the new row's key).
CREATE OR REPLACE FUNCTION ${guardFn}() RETURNS trigger LANGUAGE plpgsql AS $fencegate$
DECLARE
  x xid8;
BEGIN
  IF TG_OP = 'UPDATE' THEN
    ${indent(passed(`(${oldKey})::text`), 4)}
    IF (${newKey})::text IS DISTINCT FROM (${oldKey})::text THEN
      ${indent(passed(`(${newKey})::text`), 6)}
    END IF;
    RETURN NEW;
  ELSIF TG_OP = 'INSERT' THEN
    ${indent(passed(`(${newKey})::text`), 4)}
    RETURN NEW;
  ELSIF TG_OP = 'DELETE' THEN
    ${indent(passed(`(${oldKey})::text`), 4)}
    RETURN OLD;
  END IF;
  RAISE EXCEPTION USING ERRCODE = '${GUARD_SQLSTATE}', MESSAGE = format('fencegate guard: TRUNCATE of %I refused: a change to a protected table passes the fence row by row (remove the guard to truncate)', TG_TABLE_NAME);
END
$fencegate$;
CREATE OR REPLACE TRIGGER fencegate_guard BEFORE INSERT OR UPDATE OR DELETE ON ${T} FOR EACH ROW EXECUTE FUNCTION ${guardFn}();
CREATE OR REPLACE TRIGGER fencegate_guard_truncate BEFORE TRUNCATE ON ${T} FOR EACH STATEMENT EXECUTE FUNCTION ${guardFn}();
COMMIT;
`;
}

function pgRemove(o) {
  const lines = ['-- fencegate guard removal (docs/guard.md): data and fence rows are kept', 'BEGIN;', "SELECT pg_advisory_xact_lock(hashtext('fencegate guard'));"];
  if (o.table !== undefined) {
    const T = `"${o.table}"`;
    lines.push(`DROP TRIGGER IF EXISTS fencegate_guard ON ${T};`, `DROP TRIGGER IF EXISTS fencegate_guard_truncate ON ${T};`, `DROP FUNCTION IF EXISTS "fencegate_guard_${o.table}"();`);
  }
  if (o.fence) {
    const F = `"${o.fenceTable}"`;
    lines.push(
      `DROP TRIGGER IF EXISTS fencegate_fence ON ${F};`,
      `DROP TRIGGER IF EXISTS fencegate_fence_truncate ON ${F};`,
      `DROP FUNCTION IF EXISTS "fencegate_fence_${o.fenceTable}"();`,
      `ALTER TABLE ${F} DROP COLUMN IF EXISTS xact;`,
    );
  }
  lines.push('COMMIT;', '');
  return lines.join('\n');
}

// ---------------------------------------------------------------------------
// MySQL / MariaDB: a list of statements (each trigger body is one statement)

// MySQL's and MariaDB's REGEXP `$` also matches before a final newline (PCRE, ICU), and REGEXP
// follows the collation's case rules: texts are checked with a negated class over their bytes
// (`CAST(… AS BINARY) NOT REGEXP '[^…]'`), never with an anchored pattern. No backslashes, so the
// trigger text reads the same under NO_BACKSLASH_ESCAPES.

/** MySQL: true when the text `u` is canonical decimal in 0..2^64−1 (`0`, or 1 to 20 digits without a leading zero, at most 18446744073709551615). */
function myDecText(u) {
  return `(CHAR_LENGTH(${u}) BETWEEN 1 AND 20 AND CAST(${u} AS BINARY) NOT REGEXP '[^0-9]' AND (${u} = '0' OR LEFT(${u}, 1) <> '0') AND (CHAR_LENGTH(${u}) < 20 OR CAST(${u} AS BINARY) <= '18446744073709551615'))`;
}

/** MySQL: 1 when the text `u` is lower-case hex text, optionally after the prefix `fnv1a:` (the shape of "evicted"), else 0. */
function myHexText(u) {
  return `(CAST(IF(CAST(LEFT(${u}, 6) AS BINARY) = 'fnv1a:', SUBSTRING(${u}, 7), ${u}) AS BINARY) NOT REGEXP '[^0-9a-f]')`;
}

/**
 * MySQL: statements that set `m` to the mark of the state text `s` as DECIMAL(20,0)
 * when `s` is exactly `{"v":1,"mark":"M"}` with M canonical decimal in 0..2^64−1, else
 * to NULL (`t`: a VARCHAR(40) for M). The state fencegate writes for a key without holder
 * or window, read without a JSON parse: the text is compared byte for byte (CAST AS
 * BINARY: no PAD SPACE, no case folding) with the form rebuilt around M, and M by
 * myDecText. Every text it accepts passes myStateCheck too.
 */
function myV1Mark(s, m, t) {
  return `SET ${t} = IF(CHAR_LENGTH(${s}) <= 37, SUBSTRING(${s}, 16, CHAR_LENGTH(${s}) - 17), NULL);
SET ${m} = (CASE WHEN CAST(${s} AS BINARY) = CAST(CONCAT('{"v":1,"mark":"', ${t}, '"}') AS BINARY) AND ${myDecText(t)} THEN CAST(${t} AS DECIMAL(20,0)) END);`;
}

/** MySQL: FENCE_SQLSTATE unless `s` is a well-formed fence state (the mark into `m`, as DECIMAL(20,0)). */
function myStateCheck(s, m, what) {
  const fail = (why) => `BEGIN SET msg = CONCAT('fencegate guard: fence row ', CONVERT(NEW.k USING utf8mb4), ': ${what} state refused: ${why}'); SIGNAL SQLSTATE '${FENCE_SQLSTATE}' SET MESSAGE_TEXT = msg; END`;
  const dec = (e) => `(JSON_TYPE(${e}) = 'STRING' AND ${myDecText(`JSON_UNQUOTE(${e})`)})`;
  return `
  IF ${s} IS NULL OR NOT JSON_VALID(${s}) THEN ${fail('not JSON')}; END IF;
  IF JSON_TYPE(${s}) <> 'OBJECT' THEN ${fail('not a JSON object')}; END IF;
  SET v = JSON_EXTRACT(${s}, '$.v');
  IF v IS NULL OR JSON_TYPE(v) NOT IN ('INTEGER', 'UNSIGNED INTEGER') OR CAST(v AS CHAR) NOT IN ('1', '2', '3', '4') THEN ${fail('"v" is not 1, 2, 3 or 4')}; END IF;
  IF JSON_LENGTH(${s}) <> (CASE CAST(v AS CHAR) WHEN '1' THEN 2 WHEN '2' THEN 5 ELSE 6 END)
      OR NOT JSON_CONTAINS_PATH(${s}, 'all', '$.mark', '$.v')
      OR (CAST(v AS CHAR) <> '1' AND NOT JSON_CONTAINS_PATH(${s}, 'all', '$.holder', '$.ops', '$.evicted'))
      OR (CAST(v AS CHAR) IN ('3', '4') AND NOT JSON_CONTAINS_PATH(${s}, 'all', '$.quarantine')) THEN
    ${fail('its members are not those of its format version')};
  END IF;
  IF NOT ${dec(`JSON_EXTRACT(${s}, '$.mark')`)} THEN ${fail('"mark" is not canonical decimal text in 0..2^64-1')}; END IF;
  SET ${m} = CAST(JSON_UNQUOTE(JSON_EXTRACT(${s}, '$.mark')) AS DECIMAL(20,0));
  IF CAST(v AS CHAR) <> '1' THEN
    IF JSON_TYPE(JSON_EXTRACT(${s}, '$.holder')) NOT IN ('NULL', 'STRING') THEN ${fail('"holder" is not null or a string')}; END IF;
    IF JSON_TYPE(JSON_EXTRACT(${s}, '$.evicted')) NOT IN ('NULL', 'STRING')
        OR (JSON_TYPE(JSON_EXTRACT(${s}, '$.evicted')) = 'STRING' AND ${myHexText(`JSON_UNQUOTE(JSON_EXTRACT(${s}, '$.evicted'))`)} = 0) THEN
      ${fail('"evicted" is not null or hex text')};
    END IF;
    IF JSON_TYPE(JSON_EXTRACT(${s}, '$.ops')) <> (CASE CAST(v AS CHAR) WHEN '4' THEN 'ARRAY' ELSE 'OBJECT' END) THEN ${fail('"ops" is not the window of its format version')}; END IF;
    IF CAST(v AS CHAR) IN ('3', '4') AND JSON_TYPE(JSON_EXTRACT(${s}, '$.quarantine')) <> 'NULL'
        AND NOT (${dec(`JSON_EXTRACT(${s}, '$.quarantine')`)} AND CAST(JSON_UNQUOTE(JSON_EXTRACT(${s}, '$.quarantine')) AS DECIMAL(20,0)) <= ${m}) THEN
      ${fail('"quarantine" is not null or a decimal at most the mark')};
    END IF;
  END IF;`;
}

/** The MySQL marker expression: this connection and its fenced transaction's nonce (NULL outside one). */
/**
 * The MySQL stamp of a fenced transaction, as the fence row's `xact` keeps it: a SHA-256 of this
 * connection's id and the transaction's nonce (NULL outside one). The column is readable by
 * whoever reads the fence table; the hash does not give the nonce back, so reading it does not
 * let another session on a connection with the same id set @fencegate_xact to pass.
 */
const MY_MARK = "IF(@fencegate_xact IS NULL, NULL, SHA2(CONCAT(CONNECTION_ID(), ':', @fencegate_xact), 256))";

function myInstall(o) {
  const F = `\`${o.fenceTable}\``;
  const T = `\`${o.table}\``;
  const fn = o.fenceTable;
  const stmts = [];
  const create = (name, when, table, body) => {
    stmts.push(`CREATE OR REPLACE TRIGGER \`${name}\` ${when} ON ${table} FOR EACH ROW\nBEGIN${body}\nEND`);
  };
  const bare = qualifyKey(o.key, [], 'NEW', 'mysql');
  stmts.push(`SELECT CAST(${bare} AS CHAR) FROM ${T} LIMIT 0`);
  stmts.push(`ALTER TABLE ${F} ADD COLUMN IF NOT EXISTS xact VARCHAR(80) NULL`);
  const decl = '\n  DECLARE msg VARCHAR(1000);\n  DECLARE v JSON;\n  DECLARE t VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;\n  DECLARE mark DECIMAL(20,0);\n  DECLARE old_mark DECIMAL(20,0);';
  // the new state: the canonical v1 text by myV1Mark, anything else by the full check
  const newState = `
  ${indent(myV1Mark('NEW.state', 'mark', 't'), 2)}
  IF mark IS NULL THEN${indent(myStateCheck('NEW.state', 'mark', 'the new'), 2)}
  END IF;`;
  create(`fencegate_fence_${fn}_bi`, 'BEFORE INSERT', F, `${decl}${newState}
  IF NOT (NEW.version <=> 1) THEN
    SET msg = CONCAT('fencegate guard: fence row ', CONVERT(NEW.k USING utf8mb4), ': version ', IFNULL(NEW.version, 'NULL'), ' refused: a new fence row starts at version 1');
    SIGNAL SQLSTATE '${FENCE_SQLSTATE}' SET MESSAGE_TEXT = msg;
  END IF;
  SET NEW.xact = ${MY_MARK};`);
  // An UPDATE that keeps the state text of a row stamped by this trigger (xact set: only these
  // triggers write xact, and that text passed the check when it was written), its key, and
  // raises the version keeps a well-formed state and its mark: one test. Anything else is
  // checked in order (key, state, version, mark).
  create(`fencegate_fence_${fn}_bu`, 'BEFORE UPDATE', F, `${decl}
  IF NEW.version > OLD.version AND NEW.version - 1 = OLD.version AND OLD.xact IS NOT NULL AND NEW.k <=> OLD.k AND CAST(NEW.state AS BINARY) = CAST(OLD.state AS BINARY) THEN
    SET NEW.xact = ${MY_MARK};
  ELSE${indent(`
  IF NOT (NEW.k <=> OLD.k) THEN
    SET msg = CONCAT('fencegate guard: fence row ', CONVERT(OLD.k USING utf8mb4), ': changing its key refused');
    SIGNAL SQLSTATE '${FENCE_SQLSTATE}' SET MESSAGE_TEXT = msg;
  END IF;${newState}
  IF NEW.version IS NULL OR NEW.version <= OLD.version THEN
    SET msg = CONCAT('fencegate guard: fence row ', CONVERT(NEW.k USING utf8mb4), ': version ', IFNULL(NEW.version, 'NULL'), ' after ', OLD.version, ' refused: the version only goes up');
    SIGNAL SQLSTATE '${FENCE_SQLSTATE}' SET MESSAGE_TEXT = msg;
  END IF;
  IF NEW.version - 1 <> OLD.version THEN
    SET msg = CONCAT('fencegate guard: fence row ', CONVERT(NEW.k USING utf8mb4), ': version ', NEW.version, ' after ', OLD.version, ' refused: the version goes up by exactly 1');
    SIGNAL SQLSTATE '${FENCE_SQLSTATE}' SET MESSAGE_TEXT = msg;
  END IF;
  ${indent(myV1Mark('OLD.state', 'old_mark', 't'), 2)}
  IF old_mark IS NULL AND JSON_VALID(OLD.state) AND JSON_TYPE(JSON_EXTRACT(OLD.state, '$.mark')) = 'STRING' AND ${myDecText("JSON_UNQUOTE(JSON_EXTRACT(OLD.state, '$.mark'))")} THEN
    SET old_mark = CAST(JSON_UNQUOTE(JSON_EXTRACT(OLD.state, '$.mark')) AS DECIMAL(20,0));
  END IF;
  IF mark < old_mark THEN
    SET msg = CONCAT('fencegate guard: fence row ', CONVERT(NEW.k USING utf8mb4), ': lowering the mark from ', old_mark, ' to ', mark, ' refused: the mark never goes down');
    SIGNAL SQLSTATE '${FENCE_SQLSTATE}' SET MESSAGE_TEXT = msg;
  END IF;
  SET NEW.xact = ${MY_MARK};`, 2)}
  END IF;`);
  create(`fencegate_fence_${fn}_bd`, 'BEFORE DELETE', F, `
  DECLARE msg VARCHAR(1000);
  SET msg = CONCAT('fencegate guard: fence row ', CONVERT(OLD.k USING utf8mb4), ': DELETE refused: fence rows are never removed (that would lower the mark to 0)');
  SIGNAL SQLSTATE '${FENCE_SQLSTATE}' SET MESSAGE_TEXT = msg;`);
  // The pass of one key: the fence row's stamp is this connection's current nonce. One lookup;
  // what is missing is worked out only for the refusal's message.
  const check = (op, keyVar) => {
    const row = `FROM ${F} AS f WHERE f.k = CAST(CONVERT(${keyVar} USING utf8mb4) AS BINARY)`;
    return `
  SET x = (SELECT f.xact ${row});
  IF @fencegate_xact IS NULL OR NOT (x <=> ${MY_MARK}) THEN
    IF ${keyVar} IS NULL THEN
      SET msg = 'fencegate guard: ${op} on ${o.table} refused: the key expression is NULL for this row';
    ELSEIF NOT EXISTS (SELECT 1 ${row}) THEN
      SET msg = CONCAT('fencegate guard: ${op} on ${o.table} refused: key ', ${keyVar}, ' has no fence row: this transaction did not pass the fence for it');
    ELSE
      SET msg = CONCAT('fencegate guard: ${op} on ${o.table} refused: this transaction did not pass the fence for key ', ${keyVar}, ' (its fence row was not written by this connection''s current fenced transaction)');
    END IF;
    SIGNAL SQLSTATE '${GUARD_SQLSTATE}' SET MESSAGE_TEXT = msg;
  END IF;`;
  };
  const gdecl = '\n  DECLARE msg VARCHAR(1000);\n  DECLARE k VARCHAR(512);\n  DECLARE nk VARCHAR(512);\n  DECLARE x VARCHAR(80);';
  const newKey = qualifyKey(o.key, o.columns, 'NEW', 'mysql');
  const oldKey = qualifyKey(o.key, o.columns, 'OLD', 'mysql');
  create(`fencegate_guard_${o.table}_bi`, 'BEFORE INSERT', T, `${gdecl}\n  SET nk = CAST(${newKey} AS CHAR);${check('INSERT', 'nk')}`);
  // the keys compared as bytes (fence keys are VARBINARY: no case folding, no PAD SPACE)
  create(`fencegate_guard_${o.table}_bu`, 'BEFORE UPDATE', T, `${gdecl}\n  SET k = CAST(${oldKey} AS CHAR);\n  SET nk = CAST(${newKey} AS CHAR);${check('UPDATE', 'k')}
  IF NOT (CAST(CONVERT(nk USING utf8mb4) AS BINARY) <=> CAST(CONVERT(k USING utf8mb4) AS BINARY)) THEN${check('UPDATE', 'nk').replace(/\n/g, '\n  ')}
  END IF;`);
  create(`fencegate_guard_${o.table}_bd`, 'BEFORE DELETE', T, `${gdecl}\n  SET k = CAST(${oldKey} AS CHAR);${check('DELETE', 'k')}`);
  return stmts;
}

function myRemove(o) {
  const stmts = [];
  if (o.table !== undefined) for (const s of ['bi', 'bu', 'bd']) stmts.push(`DROP TRIGGER IF EXISTS \`fencegate_guard_${o.table}_${s}\``);
  if (o.fence) {
    for (const s of ['bi', 'bu', 'bd']) stmts.push(`DROP TRIGGER IF EXISTS \`fencegate_fence_${o.fenceTable}_${s}\``);
    stmts.push(`ALTER TABLE \`${o.fenceTable}\` DROP COLUMN IF EXISTS xact`);
  }
  return stmts;
}

// ---------------------------------------------------------------------------
// SQLite: triggers; the pass is answered by fencegate_pass(fence table, key, operation, table),
// which SqliteStore registers on its connection.

/**
 * SQLite: an expression true when `s` is a well-formed fence state (the full check).
 * One pass over the members (json_each) checks the count, that no member repeats, and
 * each member's shape against the members of the state's format version.
 */
function sqStateOk(s) {
  const v = `json_extract(${s}, '$.v')`;
  const dec = (a) => `(${a} = '0' OR (${a} GLOB '[1-9]*' AND ${a} NOT GLOB '*[^0-9]*' AND (length(${a}) < 20 OR (length(${a}) = 20 AND ${a} <= '18446744073709551615'))))`;
  const le = (a, b) => `(length(${a}) < length(${b}) OR (length(${a}) = length(${b}) AND ${a} <= ${b}))`;
  const mark = `json_extract(${s}, '$.mark')`;
  // CASE, not AND: SQLite's json functions throw on text that is not JSON, and AND does not promise an order;
  // a state is text (SQLite would read a BLOB as JSON too), and a NUL ends the text for SQLite's
  // json functions (what follows it is not read): both refused first.
  // n: the member count of the version (1: v, mark; 2: + holder, ops, evicted; 3 and 4: + quarantine)
  return `(CASE WHEN typeof(${s}) = 'text' AND json_valid(${s}) AND instr(CAST(${s} AS BLOB), X'00') = 0 THEN (json_type(${s}) = 'object' AND json_type(${s}, '$.v') = 'integer' AND ${v} BETWEEN 1 AND 4
    AND (SELECT count(*) = n AND count(DISTINCT key) = n AND total((CASE key
        WHEN 'v' THEN 1
        WHEN 'mark' THEN type = 'text' AND ${dec('atom')}
        WHEN 'holder' THEN n >= 5 AND type IN ('null', 'text')
        WHEN 'evicted' THEN n >= 5 AND (type = 'null' OR (type = 'text' AND ltrim(atom, 'fnv1a:') NOT GLOB '*[^0-9a-f]*'))
        WHEN 'ops' THEN n >= 5 AND type = (CASE ${v} WHEN 4 THEN 'array' ELSE 'object' END)
        WHEN 'quarantine' THEN n = 6 AND (type = 'null' OR (type = 'text' AND ${dec('atom')} AND ${le('atom', mark)}))
        ELSE 0 END) IS NOT 1) = 0
      FROM json_each(${s}), (SELECT (CASE ${v} WHEN 1 THEN 2 WHEN 2 THEN 5 ELSE 6 END) AS n))) ELSE 0 END)`;
}

/**
 * SQLite: true only when `s` is exactly the text `{"v":1,"mark":"M"}` with M
 * canonical decimal in 0..2^63−1 — the state fencegate writes for a key without
 * holder or window. No JSON parse: the text is compared byte for byte
 * (COLLATE BINARY, so NULs, trailing bytes and case-folding collations count) with
 * that form printed around the integer its mark text starts with; a sign, leading
 * zeros, spaces, an exponent, more digits than an integer holds or anything after
 * the digits makes the two differ. Every text it accepts passes sqStateOk too (a
 * strict subset; marks from 2^63 and every other state go to the full check).
 */
function sqV1(s) {
  return `((${s} COLLATE BINARY) = ('{"v":1,"mark":"' || max(CAST(substr(${s}, 16) AS INTEGER), 0) || '"}'))`;
}

/** SQLite: for two texts that pass sqV1, whether the mark of `a` is at most the mark of `b` (same prefix and suffix: the longer has the larger mark, equal lengths compare as text). */
function sqV1Le(a, b) {
  return `(length(${a}) < length(${b}) OR (length(${a}) = length(${b}) AND (${a} COLLATE BINARY) <= ${b}))`;
}

function sqInstall(o) {
  const F = `"${o.fenceTable}"`;
  const T = `"${o.table}"`;
  const fn = o.fenceTable;
  const le = (a, b) => `(length(${a}) < length(${b}) OR (length(${a}) = length(${b}) AND ${a} <= ${b}))`;
  const raise = (msg) => `SELECT RAISE(ABORT, ${msg})`;
  const stmts = [];
  const bare = qualifyKey(o.key, [], 'NEW', 'sqlite');
  stmts.push(`SELECT CAST((${bare}) AS TEXT) FROM ${T} LIMIT 0`);
  const stateGuard = `
  ${raise(`'${FENCE_SQLSTATE} fencegate guard: fence row ' || NEW.key || ': the new state refused: not a well-formed fence state'`)} WHERE NOT ${sqStateOk('NEW.state')};`;
  // The fast path (the trigger's WHEN): a write whose new state is the canonical v1 text, and for an
  // UPDATE whose key stays, version goes up and old state is canonical v1 with a mark not above the
  // new one, would pass every statement of the body; the body (the full check) runs for anything else.
  // An INSERT over a key that has a fence row writes nothing (RAISE(IGNORE)): the trigger cannot
  // tell INSERT OR REPLACE / REPLACE (which would delete the old row without a DELETE trigger and
  // so lower its mark) from ON CONFLICT DO NOTHING (fencegate's first-writer insert, whose lost
  // race must stay a lost compare-and-set), and neither writes then. A new fence row starts at
  // version 1 (fencegate's inserts all do; a higher start would run the version to its end).
  stmts.push(`DROP TRIGGER IF EXISTS "fencegate_fence_${fn}_bi"`, `CREATE TRIGGER "fencegate_fence_${fn}_bi" BEFORE INSERT ON ${F} FOR EACH ROW
  WHEN NOT ${sqV1('NEW.state')} OR NEW.version IS NOT 1 OR EXISTS (SELECT 1 FROM ${F} AS o WHERE o.key = NEW.key)
BEGIN
  SELECT RAISE(IGNORE) WHERE EXISTS (SELECT 1 FROM ${F} AS o WHERE o.key = NEW.key);${stateGuard}
  ${raise(`'${FENCE_SQLSTATE} fencegate guard: fence row ' || NEW.key || ': version ' || quote(NEW.version) || ' refused: a new fence row starts at version 1'`)} WHERE NEW.version IS NOT 1;
END`);
  const oldMark = "json_extract(OLD.state, '$.mark')";
  const newMark = "json_extract(NEW.state, '$.mark')";
  stmts.push(`DROP TRIGGER IF EXISTS "fencegate_fence_${fn}_bu"`, `CREATE TRIGGER "fencegate_fence_${fn}_bu" BEFORE UPDATE ON ${F} FOR EACH ROW
  WHEN NOT ((NEW.key COLLATE BINARY) IS OLD.key AND NEW.version = OLD.version + 1 AND ${sqV1('NEW.state')}
    AND ((NEW.state COLLATE BINARY) = OLD.state OR (${sqV1('OLD.state')} AND ${sqV1Le('OLD.state', 'NEW.state')})))
BEGIN
  ${raise(`'${FENCE_SQLSTATE} fencegate guard: fence row ' || OLD.key || ': changing its key refused'`)} WHERE NEW.key IS NOT OLD.key;${stateGuard}
  ${raise(`'${FENCE_SQLSTATE} fencegate guard: fence row ' || NEW.key || ': version ' || quote(NEW.version) || ' after ' || OLD.version || ' refused: the version only goes up'`)} WHERE NEW.version IS NULL OR NEW.version <= OLD.version;
  ${raise(`'${FENCE_SQLSTATE} fencegate guard: fence row ' || NEW.key || ': version ' || quote(NEW.version) || ' after ' || OLD.version || ' refused: the version goes up by exactly 1'`)} WHERE NEW.version IS NOT OLD.version + 1;
  ${raise(`'${FENCE_SQLSTATE} fencegate guard: fence row ' || NEW.key || ': lowering the mark from ' || ${oldMark} || ' to ' || ${newMark} || ' refused: the mark never goes down'`)}
    WHERE json_valid(OLD.state) AND json_type(OLD.state, '$.mark') = 'text' AND NOT ${le(oldMark, newMark)};
END`);
  stmts.push(`DROP TRIGGER IF EXISTS "fencegate_fence_${fn}_bd"`, `CREATE TRIGGER "fencegate_fence_${fn}_bd" BEFORE DELETE ON ${F} FOR EACH ROW BEGIN
  ${raise(`'${FENCE_SQLSTATE} fencegate guard: fence row ' || OLD.key || ': DELETE refused: fence rows are never removed (that would lower the mark to 0)'`)};
END`);
  const newKey = qualifyKey(o.key, o.columns, 'NEW', 'sqlite');
  const oldKey = qualifyKey(o.key, o.columns, 'OLD', 'sqlite');
  const rKey = qualifyKey(o.key, o.columns, 'fencegate_r', 'sqlite');
  const text = (k) => `CAST((${k}) AS TEXT)`;
  // fencegate_pass(fence table, key, operation, table, the version of the key's fence row as it
  // is in this transaction): the pass holds only while the fence row is the one this
  // transaction's fence step wrote (a write rolled back, also to a savepoint, reverts it).
  const call = (op, k) => `fencegate_pass(${lit(o.fenceTable)}, ${text(k)}, '${op}', ${lit(o.table)}, (SELECT f.version FROM ${F} AS f WHERE f.key = ${text(k)}))`;
  const pass = (op, k) => `SELECT ${call(op, k)};`;
  const g = `fencegate_guard_${o.table}`;
  // The rows a conflict resolution would change besides the row itself: INSERT OR REPLACE,
  // REPLACE and UPDATE OR REPLACE delete every other row with the same values in a PRIMARY KEY
  // or UNIQUE index (or the same rowid) without firing DELETE triggers, and an upsert updates
  // one. Per unique key of the table (sqUnique), each such row of another key needs that key's
  // pass too; an UPDATE is checked only for the unique keys whose columns it changes.
  const q = (c) => `"${c.replace(/"/g, '""')}"`;
  const col = (row, c) => (c.rowid === true ? `${row}.rowid` : `${row}.${q(c.name)}`);
  const same = (u) => u.map((c) => `${col('fencegate_r', c)} = ${col('NEW', c)}${c.coll === undefined ? '' : ` COLLATE ${q(c.coll)}`}`).join(' AND ');
  const others = (op, u, extra) => `SELECT ${call(op, rKey)} FROM ${T} AS fencegate_r
    WHERE ${extra}${same(u)} AND ${text(rKey)} IS NOT ${text(newKey)}${op === 'INSERT' ? '' : ` AND ${text(rKey)} IS NOT ${text(oldKey)}`};`;
  const unique = o.unique ?? [];
  const onInsert = unique.map((u) => `\n  ${others('INSERT', u, '')}`).join('');
  const onUpdate = unique.map((u) => `\n  ${others('UPDATE', u, `(${u.map((c) => `${col('NEW', c)} IS NOT ${col('OLD', c)}`).join(' OR ')}) AND `)}`).join('');
  stmts.push(`DROP TRIGGER IF EXISTS "${g}_bi"`, `CREATE TRIGGER "${g}_bi" BEFORE INSERT ON ${T} FOR EACH ROW BEGIN\n  ${pass('INSERT', newKey)}${onInsert}\nEND`);
  stmts.push(`DROP TRIGGER IF EXISTS "${g}_bu"`, `CREATE TRIGGER "${g}_bu" BEFORE UPDATE ON ${T} FOR EACH ROW BEGIN
  ${pass('UPDATE', oldKey)}
  SELECT ${call('UPDATE', newKey)} WHERE ${text(newKey)} IS NOT ${text(oldKey)};${onUpdate}
END`);
  stmts.push(`DROP TRIGGER IF EXISTS "${g}_bd"`, `CREATE TRIGGER "${g}_bd" BEFORE DELETE ON ${T} FOR EACH ROW BEGIN\n  ${pass('DELETE', oldKey)}\nEND`);
  return stmts;
}

function sqRemove(o) {
  const stmts = [];
  if (o.table !== undefined) for (const s of ['bi', 'bu', 'bd']) stmts.push(`DROP TRIGGER IF EXISTS "fencegate_guard_${o.table}_${s}"`);
  if (o.fence) for (const s of ['bi', 'bu', 'bd']) stmts.push(`DROP TRIGGER IF EXISTS "fencegate_fence_${o.fenceTable}_${s}"`);
  return stmts;
}

// ---------------------------------------------------------------------------

function statements(o, remove) {
  if (o.engine === 'postgres') return [remove ? pgRemove(o) : pgInstall(o)];
  if (o.engine === 'mysql') return remove ? myRemove(o) : myInstall(o);
  return remove ? sqRemove(o) : sqInstall(o);
}

/** The statements as one script: PostgreSQL as is (BEGIN … COMMIT), MySQL with DELIMITER lines, SQLite in BEGIN … COMMIT. */
function script(o, stmts, remove) {
  if (o.engine === 'postgres') return stmts[0];
  const head = `-- fencegate guard${remove ? ' removal' : ''} (docs/guard.md)${o.table === undefined ? '' : `: ${o.table}`} behind the fence table ${o.fenceTable}\n`;
  if (o.engine === 'mysql') {
    return `${head}-- MySQL/MariaDB: DDL commits on its own; run as a whole (mysql client)\nDELIMITER $$\n${stmts.map((s) => `${s} $$`).join('\n')}\nDELIMITER ;\n`;
  }
  return `${head}BEGIN IMMEDIATE;\n${stmts.map((s) => `${s};`).join('\n')}\nCOMMIT;\n`;
}

/**
 * The guard's SQL as text, for migration tools (Drizzle Kit, Prisma Migrate,
 * Knex, Flyway) and `fencegate guard --dry-run`. Options: `engine`
 * ('postgres' | 'mysql' | 'sqlite', required), `table`, `key` (an SQL
 * expression over the row's columns), `columns` (the table's column names:
 * the key expression's references to them are qualified by NEW/OLD),
 * `fenceTable` (default 'fencegate'), `remove` (the removal script instead;
 * with `fence: true` it removes the fence table's guard too).
 * INVALID_ARGUMENT for anything malformed.
 */
export function guardSql(options) {
  let remove = false;
  if (options !== null && typeof options === 'object' && 'remove' in options) {
    const { remove: r, ...rest } = options;
    if (typeof r !== 'boolean') throw invalid('guardSql: remove must be true or false', { remove: r });
    remove = r;
    options = rest;
  }
  const o = checked(options, 'guardSql', remove ? [] : ['table', 'key']);
  if (o.engine === undefined) throw invalid('guardSql: engine is required (postgres, mysql or sqlite)', {});
  if (remove && o.table === undefined && !o.fence) throw invalid('guardSql: remove needs a table, or fence: true, or both', {});
  if (!remove && o.columns === undefined) throw invalid('guardSql: columns (the protected table\'s column names) is required: the key expression\'s column references are qualified with them', {});
  if (!remove && o.engine === 'sqlite' && o.unique === undefined) {
    throw invalid('guardSql: unique (the table\'s unique keys: ["rowid"] unless WITHOUT ROWID, and the columns of every PRIMARY KEY and UNIQUE index) is required for sqlite: the guard checks the rows a REPLACE would delete', {});
  }
  return script(o, statements(o, remove), remove);
}

/** The engine of a client: a pg Pool/Client or postgres.js `sql` (postgres), a mysql2 Pool/Connection (mysql), a better-sqlite3 Database (sqlite). */
function engineOf(client, given) {
  if (given !== undefined) return given;
  if (client !== null && typeof client === 'object' && typeof client.prepare === 'function' && typeof client.exec === 'function' && typeof client.function === 'function') return 'sqlite';
  if (typeof client === 'function' && typeof client.unsafe === 'function') return 'postgres';
  if (client !== null && typeof client === 'object' && typeof client.query === 'function') return typeof client.execute === 'function' ? 'mysql' : 'postgres';
  throw invalid('installGuard needs a pg Pool or Client, a postgres.js sql, a mysql2 Pool or Connection, or a better-sqlite3 Database', { client: client === null ? 'null' : typeof client });
}

/** `run(text, params?) → rows` and `close()` on one connection of `client`. */
async function session(client, engine) {
  if (engine === 'sqlite') {
    return {
      run: async (text, params = []) => {
        const st = client.prepare(text);
        return st.reader ? st.all(...params) : (st.run(...params), []);
      },
      exec: async (stmts) => client.transaction(() => { for (const s of stmts) client.exec(s); }).immediate(),
      close: async () => {},
    };
  }
  if (engine === 'mysql') {
    const db = typeof client.promise === 'function' ? client.promise() : client;
    const conn = typeof db.getConnection === 'function' ? await db.getConnection() : db;
    return {
      run: async (text, params = []) => (await conn.query(text, params))[0],
      exec: async (stmts) => {
        // DDL commits on its own in MySQL: a named lock keeps two installs from interleaving
        await conn.query("SELECT GET_LOCK('fencegate guard', 30)");
        try {
          for (const s of stmts) await conn.query(s);
        } finally {
          await conn.query("SELECT RELEASE_LOCK('fencegate guard')");
        }
      },
      close: async () => {
        if (conn !== db && typeof conn.release === 'function') conn.release();
      },
    };
  }
  if (typeof client === 'function') {
    // postgres.js refuses BEGIN in a query on a pool of more than one connection
    // (UNSAFE_TRANSACTION): the script's body runs in sql.begin, one transaction on one connection
    const body = (script) => {
      const m = /^((?:--[^\n]*\n)*)BEGIN;\n([^]*)\nCOMMIT;\n$/.exec(script);
      if (m === null) throw new Error('guard script is not one BEGIN … COMMIT block');
      return m[1] + m[2];
    };
    return {
      run: (text, params = []) => client.unsafe(text, params),
      exec: (stmts) => client.begin((tx) => tx.unsafe(body(stmts[0]))),
      close: async () => {},
    };
  }
  const pooled = typeof client.connect === 'function' && typeof client.totalCount === 'number';
  const conn = pooled ? await client.connect() : client;
  return {
    run: async (text, params = []) => (await conn.query(text, params)).rows,
    exec: async (stmts) => {
      try {
        await conn.query(stmts[0]); // one simple query: BEGIN … COMMIT
      } catch (e) {
        await conn.query('ROLLBACK').catch(() => {});
        throw e;
      }
    },
    close: async () => {
      if (pooled) conn.release();
    },
  };
}

async function columnsOf(s, engine, table) {
  let rows;
  if (engine === 'postgres') {
    rows = await s.run('SELECT attname AS name FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum', [`"${table}"`]);
  } else if (engine === 'mysql') {
    rows = await s.run('SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION', [table]);
  } else {
    rows = await s.run(`SELECT name FROM pragma_table_info(?)`, [table]);
  }
  return rows.map((r) => r.name);
}

function failed(what, o, e) {
  if (e instanceof FencegateError) return e;
  const sqlState = e && typeof e === 'object' ? (e.sqlState ?? e.code) : undefined;
  const message = e instanceof Error ? e.message : String(e);
  // a key expression the database cannot read (syntax error, unknown column or function, type)
  const badKey = typeof sqlState === 'string' && (/^42/.test(sqlState) || sqlState === 'ER_BAD_FIELD_ERROR' || sqlState === 'ER_PARSE_ERROR');
  if (badKey || (o.engine === 'sqlite' && /no such column|syntax error|no such function/.test(message))) {
    return invalid(`${what}: the database refused the guard for ${o.table}: ${message} (check the key expression ${JSON.stringify(o.key)})`, { table: o.table, key: o.key, cause: e });
  }
  return new FencegateError('STORE_ERROR', `${what}: ${message}`, { table: o.table, cause: e });
}

/**
 * Installs the guard on `options.table` behind the fence table
 * `options.fenceTable` (default 'fencegate'; it must exist: the store's
 * `init()` / constructor makes it): idempotent, in one transaction on
 * PostgreSQL and SQLite (MySQL: DDL commits statement by statement, under a
 * named lock). `options.key` is the fence key of a row as an SQL expression
 * over its columns (`"'orders/' || id"`). Resolves to `{ engine, table,
 * fenceTable, sql }` (sql: the script run, as guardSql gives it).
 * INVALID_ARGUMENT: bad options, a missing table, a key expression the
 * database cannot read; STORE_ERROR: anything else the database answered.
 * `dryRun: true` reads the table's columns and answers the SQL without running it.
 */
export async function installGuard(client, options) {
  const o = checked(options, 'installGuard', ['table', 'key']);
  o.engine = engineOf(client, o.engine);
  const s = await session(client, o.engine);
  try {
    const given = o.columns;
    const cols = await columnsOf(s, o.engine, o.table);
    if (cols.length === 0) throw invalid(`installGuard: there is no table ${JSON.stringify(o.table)}`, { table: o.table });
    if ((await columnsOf(s, o.engine, o.fenceTable)).length === 0) {
      throw invalid(`installGuard: there is no fence table ${JSON.stringify(o.fenceTable)} (create it first: the store's init() or constructor)`, { fenceTable: o.fenceTable });
    }
    o.columns = given ?? cols;
    if (o.engine === 'sqlite' && o.unique === undefined) o.unique = await sqUniqueKeys(s, o.table);
    const stmts = statements(o, false);
    try {
      if (!o.dryRun) await s.exec(stmts);
    } catch (e) {
      throw failed('installGuard', o, e);
    }
    return { engine: o.engine, table: o.table, fenceTable: o.fenceTable, sql: script(o, stmts, false) };
  } finally {
    await s.close();
  }
}

/**
 * Removes the guard of `options.table` (its triggers and function); with
 * `fence: true` also the fence table's guard (its triggers and the `xact`
 * column). Data and fence rows are kept. Idempotent. Resolves to `{ engine,
 * table, fenceTable, sql }`.
 */
export async function removeGuard(client, options) {
  const o = checked(options, 'removeGuard', []);
  if (o.table === undefined && !o.fence) throw invalid('removeGuard needs a table, or fence: true, or both', {});
  o.engine = engineOf(client, o.engine);
  const s = await session(client, o.engine);
  try {
    const stmts = statements(o, true);
    try {
      if (!o.dryRun) await s.exec(stmts);
    } catch (e) {
      throw failed('removeGuard', o, e);
    }
    return { engine: o.engine, table: o.table, fenceTable: o.fenceTable, sql: script(o, stmts, true) };
  } finally {
    await s.close();
  }
}

/**
 * Whether `e` is a guard's refusal as the database reported it: SQLSTATE FG001 or
 * FG002 (pg `code`, mysql2 `sqlState`), a SQLite trigger's RAISE with that prefix,
 * or a FencegateError GUARD_REFUSED (SqliteStore's fencegate_pass). The same test
 * as the gate's (lib/errors.mjs), here so this module imports only the error class.
 */
export function isGuardRefusal(e) {
  if (e === null || typeof e !== 'object') return false;
  if (e instanceof FencegateError) return e.code === 'GUARD_REFUSED';
  const state = typeof e.sqlState === 'string' ? e.sqlState : e.code;
  if (state === GUARD_SQLSTATE || state === FENCE_SQLSTATE) return true;
  return typeof e.code === 'string' && e.code.startsWith('SQLITE_CONSTRAINT') && typeof e.message === 'string' && /^FG00[12] /.test(e.message);
}
