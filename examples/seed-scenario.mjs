// The main job: the seed article's fencing.py, every assertion, plus the
// paused-leader timeline, replayed through the installed `fencegate` package.
// Prints each step's verdict and exits non-zero on any deviation.
import { MemoryGate } from 'fencegate';

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
function refused(gate, key, token, label, code) {
  const before = gate.read(key);
  const v = gate.write(key, token, 'must-not-land');
  expect(`${label}: ${show(v)}`, { outcome: v.outcome, code: v.code, read: gate.read(key) }, { outcome: 'reject', code, read: before });
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
  const resource = new MemoryGate();
  const key = 'resource';
  let v = resource.write(key, oldLeader, 'arrived-before-new-epoch');
  expect(`epoch 1 writes before the resource has seen epoch 2: ${show(v)}`, v.ok, true);
  v = resource.write(key, newLeader, 'from-new-leader');
  expect(`epoch 2 writes: ${show(v)}`, [v.outcome, v.markAfter], ['advance', 2]);
  refused(resource, key, oldLeader, 'epoch 1 after epoch 2 was seen', 'STALE_TOKEN');
  v = resource.write(key, newLeader, 'second-write-in-same-epoch');
  expect(`second write in epoch 2: ${show(v)}`, [v.outcome, resource.value(key)], ['accept', 'second-write-in-same-epoch']);
  expect('mark is 2', resource.mark(key), 2);
  refused(resource, key, null, 'missing token (null)', 'MISSING_TOKEN');
  refused(resource, key, '2', 'string token "2"', 'MALFORMED_TOKEN');
  refused(resource, key, true, 'boolean token true', 'MALFORMED_TOKEN');
  const nextToken = issuer.acquire();
  v = resource.write(key, nextToken, 'newest');
  expect(`epoch 3 writes: ${show(v)}`, [v.outcome, v.markAfter], ['advance', 3]);
  refused(resource, key, newLeader, 'epoch 2 after epoch 3', 'STALE_TOKEN');
  expect('final state: mark 3, data "newest"', [resource.mark(key), resource.value(key)], [3, 'newest']);
}

console.log('\n== The paused leader ==');
{
  const gate = new MemoryGate();
  const key = 'orders/42';
  let v = gate.write(key, 33, 'leader-33: first write');
  expect(`leader with epoch 33 writes: ${show(v)}`, [v.outcome, v.markAfter], ['advance', 33]);
  console.log('      leader 33 pauses (GC / VM stall); its lease expires');
  console.log('      a new leader acquires the lease and is issued epoch 34');
  v = gate.write(key, 34, 'leader-34: first write');
  expect(`leader 34 writes: ${show(v)}`, [v.outcome, v.markAfter, gate.value(key)], ['advance', 34, 'leader-34: first write']);
  console.log('      leader 33 wakes up and sends its late write');
  v = gate.write(key, 33, 'leader-33: late write');
  expect(`leader 33's late write is fenced: ${show(v)}`, [v.code, gate.mark(key), gate.value(key)], ['STALE_TOKEN', 34, 'leader-34: first write']);
  v = gate.write(key, 34, 'leader-34: second write');
  expect(`leader 34 writes again: ${show(v)}`, [v.outcome, gate.mark(key), gate.value(key)], ['accept', 34, 'leader-34: second write']);
}

console.log('\n== The barrier: issuing epoch 35 does not inform the resource; establish does ==');
{
  const gate = new MemoryGate();
  const key = 'orders/42';
  gate.write(key, 34, 'leader-34');
  console.log('      leader 35 is issued its epoch; leader 34 is paused with a write in flight');
  let v = gate.write(key, 34, 'leader-34: in-flight write');
  expect(`before 35 reaches the resource, 34's write still lands (plain fencing is not instant revocation): ${show(v)}`, v.outcome, 'accept');
  v = gate.establish(key, 35);
  expect(`leader 35 establishes its epoch before working (no data change): ${show(v)}`, [v.outcome, gate.mark(key), gate.value(key)], ['advance', 35, 'leader-34: in-flight write']);
  v = gate.write(key, 34, 'leader-34: later write');
  expect(`after the barrier, 34 is fenced: ${show(v)}`, [v.code, gate.mark(key), gate.value(key)], ['STALE_TOKEN', 35, 'leader-34: in-flight write']);
}

if (failures) {
  console.log(`\nFAIL: ${failures} step(s) deviated`);
  process.exit(1);
}
console.log('\nPASS: observed newer epochs fence older writes; equal epoch remains usable');
