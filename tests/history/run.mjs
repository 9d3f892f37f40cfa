#!/usr/bin/env node
// The history workload (issue 16): P client processes loop over a few keys on
// one engine — acquire a lease from the Issuer, establish, write with op ids,
// read, renew, release — while this process injects faults from a seeded
// schedule, then checks the history (check.mjs).
//
//   node tests/history/run.mjs --engine sqlite|redis|postgres|etcd|etcd-cluster --ops N --procs P --seed S
//        [--keys K] [--ttl MS] [--out FILE] [--broken] [--no-faults] [--own-data [--guard [--unguarded]]]
//
// --own-data (sqlite, postgres, redis): writes are gate.transaction(key, epoch, body, { opId, holder })
// whose body writes the caller's own data (SQL: the tables items — the value per key — and
// item_log — one row per applied transaction; Redis: the command list HSET items:<key> value …,
// RPUSH item_log:<key> <op id>, run inside the fence script); reads and the final value come from
// that data, and the checker reads the log (each op id at most once, none refused, every
// acknowledged one there).
// --guard (with --own-data; sqlite, postgres): the database guard (fencegate/guard, docs/guard.md)
// is installed on items and item_log (key expression `key`, fence table res) before the clients
// start, and a rogue writer (rogue.mjs) writes those tables and the fence rows directly, with no
// fencegate, for the whole run; the checker's rule (g): none of its writes lands (each one that
// reaches the database is refused with the guard's SQLSTATE or error and message), and no fenced
// client operation is refused by the guard.
// --unguarded (with --guard): the control: the rogue writer runs and no guard is installed, so
// its writes land and the checker must report them.
//
// Faults (from outside the clients): SIGSTOP longer than the lease then
// SIGCONT; SIGKILL of a client mid-operation and its restart; the TCP proxy
// (proxy.mjs) delaying, dropping or cutting replies; a server restart; on a
// replicated engine (etcd-cluster) the leader member killed and restarted; an
// issuer-store restore drill (backup, later restore, raise, reconcile).
// Every server and client it starts is stopped on every exit path, Ctrl-C
// included. Exit status: 0 with no violation, 1 with violations, 2 on usage
// or harness errors.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Gate, Issuer, reconcile } from '../../pkg/node.mjs';
import { ENGINES } from './engines.mjs';
import { startProxy, startProxies } from './proxy.mjs';
import { openStores, putRecord } from './stores.mjs';
import { rng } from './rng.mjs';
import { checkFile, formatReport } from './check.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: a } = parseArgs({
  options: {
    engine: { type: 'string' },
    ops: { type: 'string', default: '2000' },
    procs: { type: 'string', default: '4' },
    seed: { type: 'string' },
    keys: { type: 'string', default: '3' },
    ttl: { type: 'string', default: '200' },
    out: { type: 'string' },
    broken: { type: 'boolean', default: false },
    'no-faults': { type: 'boolean', default: false },
    'own-data': { type: 'boolean', default: false },
    guard: { type: 'boolean', default: false },
    unguarded: { type: 'boolean', default: false },
  },
});
const usage = (msg) => {
  console.error(`${msg}\nusage: node tests/history/run.mjs --engine ${Object.keys(ENGINES).join('|')} --ops N --procs P --seed S [--keys K] [--ttl MS] [--out FILE] [--broken] [--no-faults] [--own-data [--guard [--unguarded]]]`);
  process.exit(2);
};
const engineName = a.engine;
if (!ENGINES[engineName]) usage(`unknown or missing --engine ${engineName ?? ''}`);
const ops = Number(a.ops);
const procs = Number(a.procs);
const nkeys = Number(a.keys);
const ttlMs = Number(a.ttl);
if (![ops, procs, nkeys, ttlMs].every((x) => Number.isSafeInteger(x) && x > 0)) usage('--ops, --procs, --keys and --ttl are positive integers');
if (procs < 1) usage('--procs must be ≥ 1');
const seed = a.seed ?? String(Math.floor(Math.random() * 2 ** 31));
if (!/^[0-9]+$/.test(seed)) usage('--seed is a non-negative integer');
if (a.unguarded && !a.guard) usage('--unguarded is the control of --guard: give both');
if (a.guard && !a['own-data']) usage('--guard needs --own-data (the guard protects the caller\'s own tables)');
if (a.guard && !ENGINES[engineName].guard) usage(`--guard: the database guard has no ${engineName} engine here (${Object.keys(ENGINES).filter((e) => ENGINES[e].guard).join(', ')})`);
const rand = rng(BigInt(seed));
const keys = Array.from({ length: nkeys }, (_, i) => `k${i}`);
const out = path.resolve(a.out ?? `build/history/${engineName}-${seed}.jsonl`);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, '');
const pidsFile = `${out}.pids`;
fs.writeFileSync(pidsFile, '');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), `fencegate-history-${engineName}-`));
const mono = () => Number(process.hrtime.bigint() / 1000n);
const hfd = fs.openSync(out, 'a');
// FENCEGATE_STATE_CACHE: the clients' Gate `stateCache` (issue 14; unset: the default, on; 0: off)
const stateCache = process.env.FENCEGATE_STATE_CACHE === undefined ? undefined : Number(process.env.FENCEGATE_STATE_CACHE);
const log = (o) => fs.writeSync(hfd, `${JSON.stringify({ ...o, t: Date.now(), m: mono() }, (_, v) => (typeof v === 'bigint' ? String(v) : v))}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const notePid = (pid, what) => pid && fs.appendFileSync(pidsFile, `${JSON.stringify({ pid, what })}\n`);

console.log(`history: engine ${engineName}, ops ${ops}, procs ${procs}, keys ${nkeys}, ttl ${ttlMs} ms, seed ${seed}${a.broken ? ', BROKEN host' : ''}${a['own-data'] ? ', own data (gate.transaction)' : ''}${a.guard ? (a.unguarded ? ', rogue writer with NO guard (control)' : ', guard + rogue writer') : ''}`);
console.log(`history: file ${out}`);
console.log(`history: replay with node tests/history/run.mjs --engine ${engineName} --ops ${ops} --procs ${procs} --seed ${seed} --keys ${nkeys} --ttl ${ttlMs}${a.broken ? ' --broken' : ''}${a['own-data'] ? ' --own-data' : ''}${a.guard ? ' --guard' : ''}${a.unguarded ? ' --unguarded' : ''}`);

// ---- everything started is registered here and stopped on every exit path ----
const clients = new Map(); // p → { child, stopped, done }
let engine = null;
let proxy = null;
let rogue = null; // { child, exited } with --guard
let shuttingDown = false;
function stopAllSync() {
  shuttingDown = true;
  for (const c of clients.values()) {
    try {
      if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    } catch {}
  }
  try {
    if (rogue && rogue.child.exitCode === null && rogue.child.signalCode === null) rogue.child.kill('SIGKILL');
  } catch {}
  if (proxy) proxy.cutAll();
  if (engine) engine.stopSync();
  else ENGINES[engineName].stopDir?.(dir); // a start cut short
}
process.on('exit', stopAllSync);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    console.error(`history: ${sig}: stopping clients and servers`);
    stopAllSync();
    fs.rmSync(dir, { recursive: true, force: true });
    process.exit(130);
  });
}

const faults = { sigstop: 0, sigkill: 0, delay: 0, drop: 0, cut: 0, restart: 0, ...(ENGINES[engineName].faults.includes('leader') ? { leader: 0 } : {}), drill: 0 };
const crashes = [];
try {
  const E = ENGINES[engineName];
  engine = await E.start(dir, { rand });
  for (const pid of engine.pids()) notePid(pid, `${engineName} server`);
  const kinds = a['no-faults'] ? [] : ['sigstop', 'sigkill', ...(E.faults.includes('proxy') ? ['proxy', 'proxy'] : []), ...(E.faults.includes('restart') ? ['restart'] : []), ...(E.faults.includes('leader') ? ['leader'] : [])];
  // one proxy per server port (a cluster lists its members' ports)
  if (engine.port !== null) proxy = Array.isArray(engine.port) ? await startProxies(engine.port) : await startProxy(engine.port);
  const ownData = a['own-data'];
  const clientSpec = { ...(proxy ? engine.spec(proxy.ports ?? proxy.port) : engine.spec()), broken: a.broken, ownData };

  // The runner's own handles: direct to the server, a correct host.
  const own = await openStores({ ...engine.direct, ownData });
  const ownGate = new Gate(own.res, { commitTimeoutMs: 3000, maxRetries: 50, stateCache });
  const ownIssuer = new Issuer(own.iss, { commitTimeoutMs: 3000, loadTimeoutMs: 3000, maxRetries: 50 });
  if (a.guard && !a.unguarded) {
    // the guard on both caller tables, behind the fence table `res` (each row's key column is its fence key)
    const { installGuard } = await import('../../pkg/adapters/guard.mjs');
    for (const table of ['items', 'item_log']) await installGuard(own.raw, { table, key: 'key', fenceTable: 'res' });
    log({ ev: 'guard', tables: ['items', 'item_log'], fenceTable: 'res' });
    console.log('history: guard installed on items and item_log (fence table res)');
  }

  const perProc = Math.ceil(ops / procs);
  const progress = new Map(); // p → completed ops over all incarnations
  const total = () => [...progress.values()].reduce((x, y) => x + y, 0);
  let incarnation = 0;
  let allDone;
  const finished = new Promise((r) => (allDone = r));
  const spawnClient = (p) => {
    const remaining = perProc - (progress.get(p) ?? 0);
    if (remaining <= 0 || shuttingDown) {
      clients.delete(p);
      if (clients.size === 0) allDone();
      return;
    }
    incarnation += 1;
    const cfg = { p, spec: { ...clientSpec, resend: p % 2 === 1 }, keys, ttlMs, ops: remaining, history: out, seed: String(BigInt(seed) * 1000n + BigInt(incarnation)), stateCache };
    const child = spawn(process.execPath, [path.join(here, 'client.mjs'), JSON.stringify(cfg)], { stdio: ['ignore', 'pipe', 'pipe'] });
    notePid(child.pid, `client p${p}`);
    const base = progress.get(p) ?? 0;
    const c = { child, stopped: false, killed: false };
    clients.set(p, c);
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop();
      if (lines.length) progress.set(p, base + Number(lines[lines.length - 1]));
    });
    let err = '';
    child.stderr.on('data', (d) => (err = (err + d).slice(-4000)));
    child.on('exit', (code, signal) => {
      if (shuttingDown) return;
      if (!c.killed && code !== 0) crashes.push({ p, code, signal, stderr: err.trim() });
      if (!c.killed && code === 0) progress.set(p, Math.max(progress.get(p) ?? 0, perProc));
      setTimeout(() => spawnClient(p), c.killed ? 0 : 200);
    });
  };
  const started = Date.now();
  for (let p = 0; p < procs; p++) spawnClient(p);
  if (a.guard) {
    // the rogue writer: direct to the server (no proxy), for the whole run
    const cfg = { spec: engine.direct, keys, history: out, seed: String(BigInt(seed) * 1000n + 999n) };
    const child = spawn(process.execPath, [path.join(here, 'rogue.mjs'), JSON.stringify(cfg)], { stdio: ['ignore', 'ignore', 'pipe'] });
    notePid(child.pid, 'rogue writer');
    let err = '';
    child.stderr.on('data', (d) => (err = (err + d).slice(-4000)));
    rogue = { child, exited: new Promise((r) => child.on('exit', (code, signal) => r({ code, signal, err }))) };
  }

  // ---- the seeded fault schedule ----
  const live = () => [...clients.entries()].filter(([, c]) => !c.stopped && c.child.exitCode === null && c.child.signalCode === null);
  const cycle = Math.min(ops, 25000);
  let backup = null;
  let drillsDone = 0;
  let lastRestart = 0; // when the last server restart (or leader kill) finished
  const restartGap = E.restartGapMs ?? 2000;
  // `final(e)`: an error retrying cannot cure, thrown as it is
  const retrying = async (what, fn, final = () => false) => {
    for (let i = 0; ; i++) {
      try {
        return await fn();
      } catch (e) {
        if (final(e)) throw e;
        if (i >= 30) throw new Error(`${what}: ${e.code ?? ''} ${e.message}`);
        await sleep(200);
      }
    }
  };
  const drill = async () => {
    const c = Math.floor(total() / cycle);
    const within = total() - c * cycle;
    if (backup === null && drillsDone === c && within >= cycle * 0.25) {
      backup = new Map();
      await retrying('drill backup', async () => {
        for (const k of keys) {
          const r = await own.iss.load(`issuer:${k}`);
          if (r !== null) backup.set(k, typeof r.state === 'string' ? JSON.parse(r.state) : r.state);
        }
      });
      log({ ev: 'drill', phase: 'backup', epochs: Object.fromEntries([...backup].map(([k, s]) => [k, stateEpoch(s)])) });
    } else if (backup !== null && within >= cycle * 0.5) {
      faults.drill += 1;
      // The records the restore replaces are what the operator knows of the
      // lost issuer (its last epochs, as from its logs): the raise goes past them.
      const before = new Map();
      log({ ev: 'drill', phase: 'restoring' });
      await retrying('drill restore', async () => {
        for (const [k, state] of backup) {
          const replaced = await putRecord(own.iss, `issuer:${k}`, state);
          before.set(k, replaced === null ? 0 : stateEpoch(replaced));
        }
      });
      log({ ev: 'drill', phase: 'restore', epochs: Object.fromEntries([...backup].map(([k, s]) => [k, stateEpoch(s)])), lastKnown: Object.fromEntries(before) });
      backup = null;
      await sleep(Math.max(2 * ttlMs, 150)); // clients run against the restored issuer
      const id = `drill-${drillsDone}`;
      log({ ev: 'invoke', id, op: 'reconcile', p: -1 });
      const raised = {};
      await retrying('drill raise', async () => {
        for (const [k, atLeast] of before) {
          const r = await ownIssuer.raise({ scope: k, atLeast, now: Date.now(), revoke: true });
          raised[k] = { ok: r.ok, code: r.code ?? null, epoch: r.epoch ?? null };
        }
      });
      const report = await retrying('drill reconcile', () => reconcile({ issuer: ownIssuer, gate: ownGate, scopes: Object.fromEntries(keys.map((k) => [k, [k]])), now: Date.now() }));
      log({ ev: 'ok', id, op: 'reconcile', p: -1, raised, changes: report.changes, conflicts: report.conflicts ?? [], errors: report.errors });
      log({ ev: 'drill', phase: 'reconciled' });
      drillsDone += 1;
    }
  };

  let running = true;
  const pauses = new Set();
  const schedule = (async () => {
    while (running) {
      await sleep(120 + rand() * 400);
      if (!running) break;
      await drill();
      if (kinds.length === 0) continue;
      const kind = kinds[Math.floor(rand() * kinds.length)];
      const targets = live();
      const pickOne = () => targets[Math.floor(rand() * targets.length)];
      if (kind === 'sigstop' && targets.length > 0) {
        const [p, c] = pickOne();
        const ms = ttlMs + 100 + Math.floor(rand() * 300);
        c.stopped = true;
        c.child.kill('SIGSTOP');
        faults.sigstop += 1;
        log({ ev: 'fault', kind: 'sigstop', p, pid: c.child.pid, ms });
        pauses.add(
          sleep(ms).then(() => {
            c.stopped = false;
            if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGCONT');
            log({ ev: 'fault', kind: 'sigcont', p, pid: c.child.pid });
          }),
        );
      } else if (kind === 'sigkill' && targets.length > 0) {
        const [p, c] = pickOne();
        c.killed = true;
        c.child.kill('SIGKILL');
        faults.sigkill += 1;
        log({ ev: 'fault', kind: 'sigkill', p, pid: c.child.pid });
      } else if (kind === 'proxy') {
        const k = ['delay', 'drop', 'cut'][Math.floor(rand() * 3)];
        const ms = 20 + Math.floor(rand() * 300);
        proxy.arm(k, { ms, forMs: 50 + Math.floor(rand() * 200) });
        faults[k] += 1;
        log({ ev: 'fault', kind: k, ms });
      } else if (kind === 'leader' && Date.now() - lastRestart > restartGap) {
        // a replicated engine (the etcd cluster): kill the leader member, restart it
        lastRestart = Date.now();
        faults.leader += 1;
        log({ ev: 'fault', kind: 'leader', phase: 'stop' });
        const member = await engine.killLeader();
        for (const pid of engine.pids()) notePid(pid, `${engineName} server`);
        lastRestart = Date.now();
        log({ ev: 'fault', kind: 'leader', phase: 'started', member });
      } else if (kind === 'restart' && Date.now() - lastRestart > restartGap) {
        lastRestart = Date.now();
        faults.restart += 1;
        log({ ev: 'fault', kind: 'restart', phase: 'stop' });
        await engine.restart();
        for (const pid of engine.pids()) notePid(pid, `${engineName} server`);
        lastRestart = Date.now();
        log({ ev: 'fault', kind: 'restart', phase: 'started' });
      }
    }
  })();

  await finished;
  running = false;
  await schedule;
  await Promise.all(pauses);
  if (rogue) {
    // it ends its current attempt (both its lines written), then exits 0
    rogue.child.kill('SIGTERM');
    const killer = setTimeout(() => rogue.child.kill('SIGKILL'), 10000);
    const { code, signal, err } = await rogue.exited;
    clearTimeout(killer);
    if (code !== 0) crashes.push({ p: 'rogue', code, signal, stderr: err.trim() });
  }
  const wallMs = Date.now() - started;

  // ---- final state, read directly from the server ----
  for (const k of keys) {
    let r;
    try {
      r = await retrying('final read', () => ownGate.read(k), (e) => e.code === 'CORRUPT_STATE');
    } catch (e) {
      // a fence row that does not decode (a state written around fencegate): a violation the checker reports
      if (e.code !== 'CORRUPT_STATE') throw e;
      log({ ev: 'final', key: k, corrupt: e.message });
      continue;
    }
    const cur = await retrying('final issuer read', () => ownIssuer.current(k));
    if (ownData) {
      // own data: the value is the caller's row, and every op id the caller's log holds
      const row = await own.own.read(k);
      log({ ev: 'final', key: k, mark: r.mark, hasValue: row.hasValue, value: row.value, issuerEpoch: cur.epoch, ownLog: await own.own.log(k) });
    } else log({ ev: 'final', key: k, mark: r.mark, hasValue: r.hasValue, value: r.value, issuerEpoch: cur.epoch });
  }
  await own.close();
  if (proxy) {
    for (const k of ['delay', 'drop', 'cut']) faults[`${k}Hits`] = proxy.counts[k];
    await proxy.close();
  }
  await engine.stop();
  fs.closeSync(hfd);

  const result = checkFile(out);
  console.log(formatReport(result));
  // a guard run whose rogue writer never met the guard tested nothing: a harness error
  if (a.guard && !a.unguarded && result.stats.rogue.refused === 0) crashes.push({ p: 'rogue', code: 'no refused attempt', signal: null, stderr: JSON.stringify(result.stats.rogue) });
  const row = { engine: engineName, ops: result.stats.completed, procs, faults, ...result.stats.verdicts, violations: result.violations.length, wallMs, seed, crashes: crashes.length };
  if (a.guard) {
    const { attempts, refused, landed, lost } = result.stats.rogue;
    row.rogue = { attempts, refused, landed, lost };
  }
  console.log(`history: summary ${JSON.stringify(row)}`);
  for (const c of crashes) console.error(`history: ${c.p === 'rogue' ? 'the rogue writer' : `client p${c.p}`} exited with ${c.code ?? c.signal}: ${c.stderr.split('\n').slice(-3).join(' | ')}`);
  fs.rmSync(dir, { recursive: true, force: true });
  process.exitCode = result.violations.length > 0 ? 1 : crashes.length > 0 ? 2 : 0;
} catch (e) {
  console.error(`history: harness error (seed ${seed}): ${e.stack ?? e}`);
  stopAllSync();
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(2); // the fault schedule may still be running
}

function stateEpoch(state) {
  const s = typeof state === 'string' ? JSON.parse(state) : state;
  const e = s.epoch;
  if (typeof e !== 'string' || !/^(0|[1-9][0-9]*)$/.test(e)) throw new Error(`an issuer record without a decimal epoch: ${JSON.stringify(s)}`);
  return Number(e);
}
