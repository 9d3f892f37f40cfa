// Issuer benchmark: acquisitions per second on each engine, uncontended (one
// process; every acquire is granted: one load + one commit) and with 4
// contending OS processes on one scope (each loops acquire → release; the
// scope changes hands as fast as the store allows; LEASE_HELD answers and
// compare-and-set retries are counted). Engines: the in-memory store, and
// SQLite / Redis / PostgreSQL through the package's adapters when present
// (Redis / PostgreSQL need FENCEGATE_REDIS_URL / FENCEGATE_PG_URL; see
// scripts/services.sh). Writes build/issuer-bench.json.
//   node bench/issuer.mjs [--seconds 2]
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Issuer, MemoryHostStore } from '../pkg/node.mjs';
import { openStore } from '../tests/js/issuer/open-store.mjs';

const args = process.argv.slice(2);
const seconds = Number(args[args.indexOf('--seconds') + 1] || 2) || 2;

/** Counts compare-and-set commits that lost (each one is a retry inside the Issuer). */
function counting(store) {
  const c = { lost: 0 };
  if (typeof store.transaction === 'function') return { store, c };
  return {
    c,
    store: {
      load: (k) => store.load(k),
      async commit(...a) {
        const ok = await store.commit(...a);
        if (ok === false) c.lost += 1;
        return ok;
      },
    },
  };
}

async function child() {
  const spec = JSON.parse(process.env.ISSUER_BENCH_SPEC);
  const { store: inner, close } = await openStore(spec);
  const { store, c } = counting(inner);
  const issuer = new Issuer(store, { maxRetries: 1000 });
  const scope = process.env.ISSUER_BENCH_SCOPE;
  const me = `p${process.pid}`;
  // Start together.
  while (Date.now() < Number(process.env.ISSUER_BENCH_START)) await new Promise((r) => setTimeout(r, 1));
  const stop = Date.now() + seconds * 1000;
  let attempts = 0;
  let grants = 0;
  let held = 0;
  let errors = 0;
  while (Date.now() < stop) {
    attempts += 1;
    try {
      const r = await issuer.acquire({ scope, holder: me, ttlMs: 10_000, now: Date.now() });
      if (r.ok) {
        grants += 1;
        await issuer.release({ scope, leaseId: r.leaseId, holder: me });
      } else held += 1;
    } catch {
      errors += 1;
    }
  }
  await close();
  process.send({ attempts, grants, held, errors, lost: c.lost });
}

async function uncontended(name, open) {
  const { store, close } = await open();
  const issuer = new Issuer(store);
  const scope = `bench-${process.pid}-${Date.now()}`;
  let now = 0;
  const acquire = () => issuer.acquire({ scope, holder: 'A', ttlMs: 1, now: (now += 1) });
  for (let i = 0; i < 200; i++) await acquire(); // warm-up
  let n = 0;
  const t0 = process.hrtime.bigint();
  const stop = Date.now() + seconds * 1000;
  while (Date.now() < stop) {
    for (let i = 0; i < 50; i++) {
      const r = await acquire();
      if (!r.ok) throw new Error(`expected a grant, got ${r.code}`);
    }
    n += 50;
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  await close();
  return { engine: name, mode: 'uncontended, 1 process', acquisitionsPerSecond: Math.round(n / s), usPerAcquire: +((s / n) * 1e6).toFixed(1) };
}

async function contended(name, spec, procs = 4) {
  const scope = `bench-c-${process.pid}-${Date.now()}`;
  const start = Date.now() + 1500;
  const results = await Promise.all(
    Array.from({ length: procs }, () => new Promise((resolve, reject) => {
      const c = fork(new URL(import.meta.url).pathname, ['--child', '--seconds', String(seconds)], {
        env: { ...process.env, ISSUER_BENCH_SPEC: JSON.stringify(spec), ISSUER_BENCH_SCOPE: scope, ISSUER_BENCH_START: String(start) },
      });
      c.on('message', resolve);
      c.on('error', reject);
      c.on('exit', (code) => code !== 0 && reject(new Error(`bench child exited ${code}`)));
    })),
  );
  const sum = (k) => results.reduce((a, r) => a + r[k], 0);
  return {
    engine: name,
    mode: `${procs} processes contending on one scope (acquire → release)`,
    acquisitionsPerSecond: Math.round(sum('grants') / seconds),
    attemptsPerSecond: Math.round(sum('attempts') / seconds),
    leaseHeld: sum('held'),
    casRetries: sum('lost'),
    errors: sum('errors'),
  };
}

if (args.includes('--child')) {
  await child();
} else {
  const rows = [];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fencegate-issuer-bench-'));
  rows.push(await uncontended('in-memory (MemoryHostStore)', async () => ({ store: new MemoryHostStore(), close: async () => {} })));
  const engines = [];
  if (fs.existsSync(new URL('../pkg/adapters/sqlite.mjs', import.meta.url))) {
    engines.push(['sqlite (better-sqlite3, WAL, transaction)', { kind: 'sqlite', file: path.join(tmp, 'bench.db') }]);
    if (process.env.FENCEGATE_REDIS_URL) engines.push(['redis (ioredis, Lua compare-and-set)', { kind: 'redis', url: process.env.FENCEGATE_REDIS_URL, prefix: `fg-ib-${process.pid}:` }]);
    if (process.env.FENCEGATE_PG_URL) engines.push(['postgresql (pg, conditional UPDATE)', { kind: 'pg', url: process.env.FENCEGATE_PG_URL, table: `issuer_bench_${process.pid}` }]);
  }
  for (const [name, spec] of engines) {
    rows.push(await uncontended(name, () => openStore(spec)));
    rows.push(await contended(name, spec));
  }
  fs.rmSync(tmp, { recursive: true, force: true });
  for (const r of rows) {
    const extra = r.attemptsPerSecond === undefined ? `${r.usPerAcquire} µs each` : `${r.attemptsPerSecond} attempts/s, ${r.leaseHeld} LEASE_HELD, ${r.casRetries} CAS retries, ${r.errors} errors`;
    console.log(`${r.engine.padEnd(44)} ${r.mode.padEnd(56)} ${String(r.acquisitionsPerSecond).padStart(7)} acquisitions/s  (${extra})`);
  }
  fs.mkdirSync(new URL('../build/', import.meta.url), { recursive: true });
  fs.writeFileSync(new URL('../build/issuer-bench.json', import.meta.url), JSON.stringify({ node: process.version, cpus: os.cpus().length, seconds, rows }, null, 2));
}
