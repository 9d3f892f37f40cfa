// Issuer A/B benchmark: the CPU time of each in-memory Issuer operation
// (Issuer over MemoryHostStore) of this package against another build of the
// package, in the same process: alternating rounds (the order flips every
// round), each a batch of one operation kind; figures are medians over the
// rounds of process CPU µs per operation, and the median of the per-round
// ratios this/other.
//   node bench/issuer-ab.mjs --against /path/to/other/pkg [--rounds 15] [--n 2000] [--json]
// Without --against only this package is measured.
//
// Operations (every one goes through load → Wasm step → commit when it writes):
//   acquire          a grant over an expired lease (writes: new epoch, new lease id)
//   acquire+release  a grant, then its release (two writes)
//   release          acquire+release − acquire
//   renew            the live lease extended (writes)
//   acquire (held)   LEASE_HELD: a live lease of another holder (writes nothing)
//   raise            the epoch lifted by one, no live lease (writes)
//   current          the decoded record (no write)
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i < 0 ? dflt : args[i + 1];
};
const rounds = Number(opt('--rounds', 15));
const n = Number(opt('--n', 2000));
const against = opt('--against', undefined);
const json = args.includes('--json');

const builds = [{ name: 'this', mod: await import('../pkg/node.mjs') }];
if (against !== undefined) builds.push({ name: 'other', mod: await import(pathToFileURL(path.resolve(against, 'node.mjs')).href) });

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** A fresh issuer and the bench's operations on it; each op(i) awaits one call (two for acquire+release). */
async function setup({ Issuer, MemoryHostStore }) {
  const issuer = new Issuer(new MemoryHostStore());
  let now = 1;
  const ops = {};
  // acquire: ttl 1, time moves by 2, so every acquire grants over an expired lease.
  ops.acquire = async () => {
    const r = await issuer.acquire({ scope: 'a', holder: 'A', ttlMs: 1, now: (now += 2) });
    if (!r.ok) throw new Error(`acquire: ${r.code}`);
  };
  ops['acquire+release'] = async () => {
    const r = await issuer.acquire({ scope: 'ar', holder: 'A', ttlMs: 1000, now: (now += 2) });
    if (!r.ok) throw new Error(`acquire: ${r.code}`);
    const q = await issuer.release({ scope: 'ar', leaseId: r.leaseId, holder: 'A' });
    if (!q.ok || q.released !== true) throw new Error('release did not release');
  };
  const live = await issuer.acquire({ scope: 'r', holder: 'A', ttlMs: 1e12, now: 0 });
  ops.renew = async () => {
    const r = await issuer.renew({ scope: 'r', leaseId: live.leaseId, holder: 'A', ttlMs: 1e12, now: (now += 2) });
    if (!r.ok) throw new Error(`renew: ${r.code}`);
  };
  ops['acquire (held)'] = async () => {
    const r = await issuer.acquire({ scope: 'r', holder: 'B', ttlMs: 1000, now: (now += 2) });
    if (r.code !== 'LEASE_HELD') throw new Error(`held: ${r.code}`);
  };
  let floor = 0;
  ops.raise = async () => {
    const r = await issuer.raise({ scope: 'x', atLeast: (floor += 1), now: (now += 2) });
    if (!r.ok) throw new Error(`raise: ${r.code}`);
  };
  ops.current = async () => {
    const r = await issuer.current('r');
    if (r.lease === null) throw new Error('current: no lease');
  };
  return ops;
}

const OPS = ['acquire', 'acquire+release', 'renew', 'acquire (held)', 'raise', 'current'];
for (const b of builds) b.ops = await setup(b.mod);

async function batch(op, count) {
  const t0 = cpu();
  for (let i = 0; i < count; i++) await op();
  return (cpu() - t0) / count;
}

// warm-up
for (const b of builds) for (const k of OPS) await batch(b.ops[k], Math.max(200, n / 4));

const samples = Object.fromEntries(builds.map((b) => [b.name, Object.fromEntries(OPS.map((k) => [k, []]))]));
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? builds : [...builds].reverse();
  for (const k of OPS) for (const b of order) samples[b.name][k].push(await batch(b.ops[k], n));
}
for (const name of Object.keys(samples)) {
  const s = samples[name];
  s.release = s['acquire+release'].map((v, i) => v - s.acquire[i]);
}
const ALL = [...OPS.slice(0, 2), 'release', ...OPS.slice(2)];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const round2 = (x) => Math.round(x * 100) / 100;

const rows = ALL.map((k) => {
  const row = { op: k, thisUs: round2(median(samples.this[k])) };
  if (samples.other !== undefined) {
    row.otherUs = round2(median(samples.other[k]));
    row.ratio = Number(median(samples.this[k].map((v, i) => v / samples.other[k][i])).toFixed(3));
  }
  return row;
});

console.log(`Issuer over MemoryHostStore, CPU µs per operation (median of ${rounds} rounds × ${n})`);
console.log(`${'operation'.padEnd(18)} ${'this'.padStart(8)}${against === undefined ? '' : ` ${'other'.padStart(8)} ${'this/other'.padStart(10)}`}`);
for (const r of rows) {
  console.log(`${r.op.padEnd(18)} ${r.thisUs.toFixed(2).padStart(8)}${r.otherUs === undefined ? '' : ` ${r.otherUs.toFixed(2).padStart(8)} ${r.ratio.toFixed(3).padStart(10)}`}`);
}
if (json) console.log(JSON.stringify({ bench: 'issuer-ab', node: process.version, rounds, n, against: against ?? null, rows }));
