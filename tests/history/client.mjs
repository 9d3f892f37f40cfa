// One history client: a separate OS process that loops over a few keys —
// acquire a lease from the Issuer, establish the epoch at the resource (with
// its holder), write values with op ids, read, sometimes renew or release —
// and appends every invocation and completion to the history file (JSON lines,
// one write(2) each on an O_APPEND descriptor, so lines from many processes
// never interleave).
//   node client.mjs '<json>'   { p, spec, keys, ttlMs, ops, history, seed }
// Prints the number of completed operations to stdout after each one (the
// runner's budget counter). Lines: see check.mjs.
import fs from 'node:fs';
import { Gate, Issuer } from '../../pkg/node.mjs';
import { openStores } from './stores.mjs';
import { rng } from './rng.mjs';

const cfg = JSON.parse(process.argv[2]);
const { p, keys, ttlMs, ops } = cfg;
const rand = rng(cfg.seed);
const holder = `p${p}-${process.pid}`; // unique per incarnation
const fd = fs.openSync(cfg.history, 'a');
const mono = () => Number(process.hrtime.bigint() / 1000n); // µs, CLOCK_MONOTONIC: one clock for every process
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const big = (_, v) => (typeof v === 'bigint' ? String(v) : v);
const log = (o) => fs.writeSync(fd, `${JSON.stringify(o, big)}\n`);

const { res, iss, close, own } = await openStores(cfg.spec);
const gate = new Gate(res, { commitTimeoutMs: 3000, maxRetries: 50, stateCache: cfg.stateCache });
const issuer = new Issuer(iss, { commitTimeoutMs: 3000, loadTimeoutMs: 3000, maxRetries: 50 });

let seq = 0;
let done = 0;
/** Runs one operation: an `invoke` line, then `ok` (a result), `unknown` (COMMIT_UNKNOWN) or `fail` (another error). */
async function call(op, fields, fn) {
  const id = `${holder}.${++seq}`;
  log({ ev: 'invoke', id, p, pid: process.pid, op, holder, ...fields, t: Date.now(), m: mono() });
  let line;
  try {
    const r = await fn();
    line = { ev: 'ok', id, p, op, holder, ...fields, ...pick(r), t: Date.now(), m: mono() };
  } catch (e) {
    const code = e && e.code;
    line = { ev: code === 'COMMIT_UNKNOWN' ? 'unknown' : 'fail', id, p, op, holder, ...fields, code: code ?? String(e), why: why(e), t: Date.now(), m: mono() };
  }
  log(line);
  done += 1;
  process.stdout.write(`${done}\n`);
  // A client backs off after a store error: without it, a store that fails
  // fast (a driver's circuit breaker open, no connection) spends the run's
  // operation budget in a few hundred milliseconds of instant failures.
  if (line.ev !== 'ok') await sleep(10 + rand() * 40);
  return line;
}

/** The cause of a thrown error, for people reading the history: its class and message, shortened. */
function why(e) {
  const c = (e && e.cause) || e;
  return `${(c && c.constructor && c.constructor.name) || typeof c}: ${String((c && c.message) || c).slice(0, 160)}`;
}

function pick(r) {
  const out = {};
  for (const f of ['ok', 'outcome', 'original', 'code', 'markBefore', 'markAfter', 'epoch', 'leaseId', 'expiresAt', 'replayed', 'released', 'mark', 'hasValue']) {
    if (r[f] !== undefined) out[f] = r[f];
  }
  if ('value' in r && r.value !== undefined) out.value = r.value;
  return out;
}

let held = null; // { key, epoch, leaseId }
let n = 0;
while (done < ops) {
  n += 1;
  if (held === null) {
    const key = keys[Math.floor(rand() * keys.length)];
    const requestId = `${holder}-a${n}`;
    let got = null;
    for (let attempt = 0; attempt < 3 && got === null; attempt++) {
      const now = Date.now();
      const r = await call('acquire', { key, requestId, now, ttlMs }, () => issuer.acquire({ scope: key, holder, ttlMs, now, requestId }));
      if (r.ev === 'ok') got = r;
    }
    if (got && got.ok) {
      held = { key, epoch: got.epoch, leaseId: got.leaseId };
      const e = await call('establish', { key, token: held.epoch }, () => gate.establish(key, held.epoch, { holder }));
      if (e.ev === 'ok' && !e.ok) held = null; // STALE_TOKEN / EPOCH_CONFLICT / QUARANTINED: not ours
    } else {
      await sleep(2 + rand() * 10);
    }
  } else {
    const x = rand();
    const { key, epoch } = held;
    // A stall (GC, a slow disk) that may outlast the lease: the client does not
    // check its lease before writing, so it writes on as a zombie.
    if (rand() < 0.04) await sleep(rand() * 2 * ttlMs);
    if (x < 0.62) {
      const opId = `${holder}-w${n}`;
      const value = { w: opId, key, token: epoch, holder };
      for (let attempt = 0; attempt < 3; attempt++) {
        const r = await call('write', { key, token: epoch, opId, attempt }, () =>
          own ? gate.transaction(key, epoch, own.body(key, opId, value), { opId, holder }) : gate.write(key, epoch, value, { opId, holder }),
        );
        if (r.ev === 'ok') {
          if (!r.ok) held = null;
          break;
        }
        await sleep(rand() * 20);
      }
    } else if (x < 0.77) {
      // own data: the caller's row (no mark: the checker then checks the value alone)
      await call('read', { key }, async () => ({ ok: true, ...(own ? await own.read(key) : await gate.read(key)) }));
    } else if (x < 0.93) {
      const now = Date.now();
      const r = await call('renew', { key, token: epoch, leaseId: held.leaseId, now, ttlMs }, () => issuer.renew({ scope: key, leaseId: held.leaseId, holder, ttlMs, now }));
      if (r.ev !== 'ok' || !r.ok) held = null;
    } else {
      await call('release', { key, token: epoch, leaseId: held.leaseId }, () => issuer.release({ scope: key, leaseId: held.leaseId, holder }));
      held = null;
    }
  }
  await sleep(rand() * 2);
}
await close();
fs.closeSync(fd);
