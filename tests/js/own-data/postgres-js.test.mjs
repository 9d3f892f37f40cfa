// The caller's own data on PostgreSQL through postgres.js (`sql`, `sql.begin`):
// Gate.transaction and fenceIn inside the caller's sql.begin (cases in sql-cases.mjs).
import { ownDataCases } from './sql-cases.mjs';
import { postgresJsEngine } from './sql-engines.mjs';

ownDataCases(postgresJsEngine);
