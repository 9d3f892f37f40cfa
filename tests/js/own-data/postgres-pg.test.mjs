// The caller's own data on PostgreSQL through pg (a Pool): Gate.transaction and
// fenceIn inside the caller's BEGIN … COMMIT (cases in sql-cases.mjs), plus what
// only pg has: a single Client as the store's client, a PoolClient's protocol status.
import { ownDataCases } from './sql-cases.mjs';
import { pgEngine } from './sql-engines.mjs';

ownDataCases(pgEngine);
