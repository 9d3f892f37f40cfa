// The ORM transaction handles fencegate can run its fence statements on
// (Drizzle, Kysely, Knex, Prisma interactive transactions). The orms branch
// fills this module; until then no ORM handle is recognised and
// adapters/handles.mjs goes on with the plain drivers (pg, postgres.js, mysql2).

/**
 * `async (text, params) => rows` that runs one statement of `dialect`
 * (`'postgres'`: `$1` placeholders; `'mysql'`: `?`) on the ORM transaction
 * `handle`, or null when `handle` is not an ORM transaction this module knows.
 */
export function ormRunner() {
  return null;
}
