// Issue 13: the docs' compare-and-set recipe with the state in a PostgreSQL
// jsonb column, which reorders object members (shorter names first). The
// recipe is taken from docs/stores.md (`// recipe: postgres-jsonb`) and run.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Gate } from '../../../pkg/node.mjs';
import { PG_URL, pgPool, uniqueKey } from './targets.mjs';
import { docBlock } from '../../doc-blocks.mjs';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const skip = PG_URL ? false : 'FENCEGATE_PG_URL is not set (scripts/services.sh start)';
const table = `fenced_jsonb_${process.pid}`;
let pool;
let jsonbStore;
let dir;

before(async () => {
  if (skip) return;
  mkdirSync(join(root, 'build'), { recursive: true });
  dir = mkdtempSync(join(root, 'build', 'jsonb-recipe-'));
  writeFileSync(join(dir, 'recipe.mjs'), docBlock('docs/stores.md', 'recipe: postgres-jsonb'));
  ({ jsonbStore } = await import(pathToFileURL(join(dir, 'recipe.mjs'))));
  pool = await pgPool();
  await pool.query(`CREATE TABLE ${table} (key text PRIMARY KEY, state jsonb NOT NULL, value jsonb, version bigint NOT NULL)`);
});

after(async () => {
  if (skip) return;
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.end();
  rmSync(dir, { recursive: true, force: true });
});

const verdict = (key, outcome, code, token, markBefore, markAfter) => ({ key, ok: outcome !== 'reject', outcome, code, token, markBefore, markAfter });
const stored = async (k) => (await pool.query(`SELECT state::text AS state FROM ${table} WHERE key = $1`, [k])).rows[0].state;

test('issue 13 input: write(k,7), write(k,7), write(k,8,{holder}), write(k,8,{holder}), write(k,7) → advance, accept, advance, accept, STALE_TOKEN', { skip }, async () => {
  const gate = new Gate(jsonbStore(pool, table));
  const k = uniqueKey('jsonb');
  assert.deepEqual(await gate.write(k, 7, 'a'), verdict(k, 'advance', null, 7, 0, 7));
  assert.deepEqual(await gate.write(k, 7, 'b'), verdict(k, 'accept', null, 7, 7, 7));
  assert.deepEqual(await gate.write(k, 8, 'c', { holder: 'node-a' }), verdict(k, 'advance', null, 8, 7, 8));
  // jsonb reordered the members: shorter names first.
  assert.equal(await stored(k), '{"v": 4, "ops": [], "mark": "8", "holder": "node-a", "evicted": null, "quarantine": null}');
  assert.deepEqual(await gate.write(k, 8, 'd', { holder: 'node-a' }), verdict(k, 'accept', null, 8, 8, 8));
  assert.deepEqual(await gate.write(k, 7, 'e'), verdict(k, 'reject', 'STALE_TOKEN', 7, 8, 8));
  assert.deepEqual(await gate.read(k), { mark: 8, value: 'd', hasValue: true });
});

test('the row the issue found stuck (format 2, reordered by jsonb) decodes and moves on', { skip }, async () => {
  const gate = new Gate(jsonbStore(pool, table));
  const k = uniqueKey('jsonb-v2');
  await pool.query(`INSERT INTO ${table} (key, state, value, version) VALUES ($1, $2, $3, 7)`, [
    k,
    '{"v":2,"mark":"8","holder":"node-a","ops":{},"evicted":null}',
    '"c"',
  ]);
  assert.equal(await stored(k), '{"v": 2, "ops": {}, "mark": "8", "holder": "node-a", "evicted": null}');
  assert.deepEqual(await gate.write(k, 8, 'd', { holder: 'node-a' }), verdict(k, 'accept', null, 8, 8, 8));
  assert.deepEqual(await gate.write(k, 8, 'x', { holder: 'node-b' }), verdict(k, 'reject', 'EPOCH_CONFLICT', 8, 8, 8));
  assert.deepEqual(await gate.write(k, 7, 'e'), verdict(k, 'reject', 'STALE_TOKEN', 7, 8, 8));
  assert.deepEqual(await gate.read(k), { mark: 8, value: 'd', hasValue: true });
});

test('window 2, ids z, 1, y, then 1 again through jsonb: duplicate; z: OP_ID_EXPIRED', { skip }, async () => {
  const gate = new Gate(jsonbStore(pool, table), { opWindow: 2 });
  const k = uniqueKey('jsonb-window');
  for (const id of ['z', '1', 'y']) assert.equal((await gate.write(k, 5, id, { opId: id })).ok, true, id);
  assert.deepEqual(await gate.write(k, 5, 'again', { opId: '1' }), { ...verdict(k, 'duplicate', null, 5, 5, 5), original: 'accept' });
  assert.deepEqual(await gate.write(k, 5, 'again', { opId: 'z' }), verdict(k, 'reject', 'OP_ID_EXPIRED', 5, 5, 5));
  assert.deepEqual(await gate.read(k), { mark: 5, value: 'y', hasValue: true });
  assert.match(await stored(k), /"ops": \[\["1", "5"\], \["y", "5"\]\]/);
});
