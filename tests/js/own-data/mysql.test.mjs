// The caller's own data on MySQL / MariaDB through mysql2 (a Pool): Gate.transaction and
// fenceIn inside the caller's beginTransaction … commit (cases in sql-cases.mjs).
import { ownDataCases } from './sql-cases.mjs';
import { mysqlEngine } from './sql-engines.mjs';

ownDataCases(mysqlEngine);
