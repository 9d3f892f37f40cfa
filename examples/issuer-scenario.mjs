// The main job's issuer scene: an Issuer and a Gate sharing one embedded host
// store (issuer records `issuer:<scope>`, the resource's record beside them),
// through the installed `fencegate` package. Leader A acquires epoch n and writes; A pauses past its
// lease; B acquires n + 1, establishes it at the resource and writes; A wakes
// and its write is rejected; A cannot renew; A acquires again only after B
// releases, and then gets n + 2. Exits non-zero on any deviation.
import { Issuer, Gate, MemoryHostStore } from 'fencegate';

let failures = 0;
let step = 0;
const j = (x) => JSON.stringify(x, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));

function expect(label, actual, expected) {
  const ok = j(actual) === j(expected);
  step += 1;
  console.log(`${String(step).padStart(2)}. ${ok ? 'ok  ' : 'FAIL'} ${label}`);
  if (!ok) {
    failures += 1;
    console.log(`      expected ${j(expected)}\n      actual   ${j(actual)}`);
  }
}

console.log('== The issuer: leases end, epochs fence ==');
const store = new MemoryHostStore(); // swap in SqliteStore / RedisStore / PostgresStore for durability
const issuer = new Issuer(store);
const gate = new Gate(store);
const scope = 'orders';
const T = 1_700_000_000_000; // host time in ms, passed explicitly: fencegate reads no clock

const a = await issuer.acquire({ scope, holder: 'A', ttlMs: 10_000, now: T, requestId: 'a-1' });
expect(`A acquires: epoch ${a.epoch}, lease ${a.leaseId} until T+10s`, [a.ok, a.epoch, a.expiresAt - T], [true, 1, 10_000]);
const n = a.epoch;
let v = await gate.write(scope, a.epoch, 'A: first write');
expect(`A writes with ${a.epoch}: ${v.outcome}`, v.outcome, 'advance');
const retry = await issuer.acquire({ scope, holder: 'A', ttlMs: 10_000, now: T + 5, requestId: 'a-1' });
expect('A retries its acquire (lost reply) with the same request id: the same lease, no new epoch', [retry.epoch, retry.replayed], [n, true]);
const early = await issuer.acquire({ scope, holder: 'B', ttlMs: 10_000, now: T + 9_999 });
expect(`B asks while A's lease is live: ${early.code}, held by ${early.holder}`, [early.code, early.holder], ['LEASE_HELD', 'A']);

console.log('      A pauses (GC / VM stall) past its lease');
const b = await issuer.acquire({ scope, holder: 'B', ttlMs: 10_000, now: T + 10_000 });
expect(`B acquires at A's expiry: epoch ${b.epoch}`, [b.ok, b.epoch], [true, n + 1]);
v = await gate.establish(scope, b.epoch);
expect(`B establishes ${b.epoch} at the resource before working (issuing informs no resource): ${v.outcome}`, [v.outcome, await gate.mark(scope)], ['advance', n + 1]);
v = await gate.write(scope, b.epoch, 'B: first write');
expect(`B writes: ${v.outcome}`, [v.outcome, (await gate.read(scope)).value], ['accept', 'B: first write']);

console.log('      A wakes up and carries on');
v = await gate.write(scope, a.epoch, 'A: late write');
expect(`A's late write with ${a.epoch} is rejected: ${v.code}`, [v.code, (await gate.read(scope)).value], ['STALE_TOKEN', 'B: first write']);
const renewed = await issuer.renew({ scope, leaseId: a.leaseId, holder: 'A', ttlMs: 10_000, now: T + 10_001 });
expect(`A cannot renew its lapsed lease: ${renewed.code}`, renewed.code, 'LEASE_EXPIRED');
const freed = await issuer.release({ scope, leaseId: a.leaseId, holder: 'A' });
expect("A's release of a lease it no longer holds changes nothing", freed.released, false);
const blocked = await issuer.acquire({ scope, holder: 'A', ttlMs: 10_000, now: T + 10_002 });
expect(`A acquires again while B holds: ${blocked.code}`, blocked.code, 'LEASE_HELD');
const stolen = await issuer.release({ scope, leaseId: b.leaseId, holder: 'A' });
expect(`A cannot release B's lease, even with its id: ${stolen.code}`, stolen.code, 'LEASE_NOT_HELD');
const done = await issuer.release({ scope, leaseId: b.leaseId, holder: 'B' });
expect('B releases', done.released, true);
const a2 = await issuer.acquire({ scope, holder: 'A', ttlMs: 10_000, now: T + 10_003 });
expect(`A acquires after B released: epoch ${a2.epoch} = n + 2`, a2.epoch, n + 2);
v = await gate.write(scope, a2.epoch, 'A: write in its new epoch');
expect(`A writes with ${a2.epoch}: ${v.outcome}`, [v.outcome, await gate.mark(scope)], ['advance', n + 2]);

expect('the store holds both records side by side', store.keys(), ['issuer:orders', 'orders']);

if (failures) {
  console.log(`\nFAIL: ${failures} step(s) deviated`);
  process.exit(1);
}
console.log('\nPASS: each acquisition got a new epoch; the lapsed holder was fenced and could not renew');
