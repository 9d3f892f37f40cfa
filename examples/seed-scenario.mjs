// The main job: the seed article's fencing.py, every assertion, plus the
// paused-leader timeline, replayed through the installed `fencegate` package
// with the resource in a real SQLite file (fencegate/sqlite over better-sqlite3):
// the mark and the data commit in one transaction and survive a reopen.
// Prints each step's verdict and exits non-zero on any deviation.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Gate } from 'fencegate';
import { SqliteStore } from 'fencegate/sqlite';

const file = join(mkdtempSync(join(tmpdir(), 'fencegate-demo-')), 'resource.db');
const db = new Database(file);
db.pragma('journal_mode = WAL');
console.log(`resource store: SQLite file ${file}\n`);

let failures = 0;
let step = 0;

function show(v) {
  const tok = v.token === null ? 'invalid' : String(v.token);
  const code = v.code ? ` ${v.code}` : '';
  return `${v.outcome.toUpperCase()}${code} (token ${tok}, mark ${v.markBefore} → ${v.markAfter})`;
}

function expect(label, actual, expected) {
  const ok = JSON.stringify(actual, (_, x) => (typeof x === 'bigint' ? `${x}n` : x)) ===
    JSON.stringify(expected, (_, x) => (typeof x === 'bigint' ? `${x}n` : x));
  step += 1;
  console.log(`${String(step).padStart(2)}. ${ok ? 'ok  ' : 'FAIL'} ${label}`);
  if (!ok) {
    failures += 1;
    console.log(`      expected ${JSON.stringify(expected)}\n      actual   ${JSON.stringify(actual)}`);
  }
}

/** Like fencing.py's refused(): the write must be rejected and change nothing. */
async function refused(gate, key, token, label, code) {
  const before = await gate.read(key);
  const v = await gate.write(key, token, 'must-not-land');
  expect(`${label}: ${show(v)}`, { outcome: v.outcome, code: v.code, read: await gate.read(key) }, { outcome: 'reject', code, read: before });
}

/** The seed's test counter. A real issuer binds durable epochs to leases (see the README). */
class Issuer {
  counter = 0;
  acquire() { return ++this.counter; }
}

console.log('== The seed article\'s quick verification (fencing.py) ==');
{
  const issuer = new Issuer();
  const [oldLeader, newLeader] = [issuer.acquire(), issuer.acquire()];
  const resource = new Gate(new SqliteStore(db, { table: 'seed' }));
  const key = 'resource';
  let v = await resource.write(key, oldLeader, 'arrived-before-new-epoch');
  expect(`epoch 1 writes before the resource has seen epoch 2: ${show(v)}`, v.ok, true);
  v = await resource.write(key, newLeader, 'from-new-leader');
  expect(`epoch 2 writes: ${show(v)}`, [v.outcome, v.markAfter], ['advance', 2]);
  await refused(resource, key, oldLeader, 'epoch 1 after epoch 2 was seen', 'STALE_TOKEN');
  v = await resource.write(key, newLeader, 'second-write-in-same-epoch');
  expect(`second write in epoch 2: ${show(v)}`, [v.outcome, (await resource.read(key)).value], ['accept', 'second-write-in-same-epoch']);
  expect('mark is 2', (await resource.read(key)).mark, 2);
  await refused(resource, key, null, 'missing token (null)', 'MISSING_TOKEN');
  await refused(resource, key, '2', 'string token "2"', 'MALFORMED_TOKEN');
  await refused(resource, key, true, 'boolean token true', 'MALFORMED_TOKEN');
  const nextToken = issuer.acquire();
  v = await resource.write(key, nextToken, 'newest');
  expect(`epoch 3 writes: ${show(v)}`, [v.outcome, v.markAfter], ['advance', 3]);
  await refused(resource, key, newLeader, 'epoch 2 after epoch 3', 'STALE_TOKEN');
  expect('final state: mark 3, data "newest"', [(await resource.read(key)).mark, (await resource.read(key)).value], [3, 'newest']);
}

console.log('\n== The paused leader ==');
{
  const gate = new Gate(new SqliteStore(db, { table: 'paused' }));
  const key = 'orders/42';
  let v = await gate.write(key, 33, 'leader-33: first write');
  expect(`leader with epoch 33 writes: ${show(v)}`, [v.outcome, v.markAfter], ['advance', 33]);
  console.log('      leader 33 pauses (GC / VM stall); its lease expires');
  console.log('      a new leader acquires the lease and is issued epoch 34');
  v = await gate.write(key, 34, 'leader-34: first write');
  expect(`leader 34 writes: ${show(v)}`, [v.outcome, v.markAfter, (await gate.read(key)).value], ['advance', 34, 'leader-34: first write']);
  console.log('      leader 33 wakes up and sends its late write');
  v = await gate.write(key, 33, 'leader-33: late write');
  expect(`leader 33's late write is fenced: ${show(v)}`, [v.code, (await gate.read(key)).mark, (await gate.read(key)).value], ['STALE_TOKEN', 34, 'leader-34: first write']);
  v = await gate.write(key, 34, 'leader-34: second write');
  expect(`leader 34 writes again: ${show(v)}`, [v.outcome, (await gate.read(key)).mark, (await gate.read(key)).value], ['accept', 34, 'leader-34: second write']);
}

console.log('\n== The barrier: issuing epoch 35 does not inform the resource; establish does ==');
{
  const gate = new Gate(new SqliteStore(db, { table: 'barrier' }));
  const key = 'orders/42';
  await gate.write(key, 34, 'leader-34');
  console.log('      leader 35 is issued its epoch; leader 34 is paused with a write in flight');
  let v = await gate.write(key, 34, 'leader-34: in-flight write');
  expect(`before 35 reaches the resource, 34's write still lands (plain fencing is not instant revocation): ${show(v)}`, v.outcome, 'accept');
  v = await gate.establish(key, 35);
  expect(`leader 35 establishes its epoch before working (no data change): ${show(v)}`, [v.outcome, (await gate.read(key)).mark, (await gate.read(key)).value], ['advance', 35, 'leader-34: in-flight write']);
  v = await gate.write(key, 34, 'leader-34: later write');
  expect(`after the barrier, 34 is fenced: ${show(v)}`, [v.code, (await gate.read(key)).mark, (await gate.read(key)).value], ['STALE_TOKEN', 35, 'leader-34: in-flight write']);
}

console.log('\n== Durability: close the SQLite file, reopen it ==');
{
  db.close();
  const reopened = new Database(file);
  const gate = new Gate(new SqliteStore(reopened, { table: 'seed' }));
  expect('after reopening, mark 3 and data "newest" are still there', await gate.read('resource'), { mark: 3, value: 'newest', hasValue: true });
  const v = await gate.write('resource', 2, 'must-not-land');
  expect(`epoch 2 is still fenced after the reopen: ${show(v)}`, [v.code, (await gate.read('resource')).value], ['STALE_TOKEN', 'newest']);
  reopened.close();
}

if (failures) {
  console.log(`\nFAIL: ${failures} step(s) deviated`);
  process.exit(1);
}
console.log('\nPASS: observed newer epochs fence older writes; equal epoch remains usable');
