// examples/node-service under load over loopback HTTP: fenced writes (PUT
// /kv/<key> through the gate: one SQLite transaction reads the fence state,
// decides, writes state and value) against the same service with the fence
// check removed (the same HTTP handler and token parsing, the gate swapped for
// a plain SQLite upsert of the value), in one run, interleaved rounds.
// Server in a child process; the load from this one (2 cores here: one each).
//   node bench/node-service.mjs [--requests 6000] [--connections 8] [--rounds 5]
// Reports per variant the median round's requests/s and the server process's CPU
// time per request (from /proc: steadier than throughput on shared, busy cores),
// and the median of the per-round throughput ratios (variants run back to back).
// (FENCEGATE_PKG_DIR: measure another build of the package instead of pkg/)
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('../', import.meta.url));
const { values: o } = parseArgs({ options: { requests: { type: 'string', default: '6000' }, connections: { type: 'string', default: '8' }, rounds: { type: 'string', default: '5' } } });

/** CPU time (user + system) a process has used, in µs, from /proc (clock ticks of 10 ms). */
function cpuUs(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(f[11]) + Number(f[12])) * 1e4;
}

// The baseline: the example's handler with a gate-shaped object that writes without any check.
const UNFENCED = `
import http from 'node:http';
import Database from 'better-sqlite3';
import { createHandler } from './server.mjs';
const db = new Database(process.argv[2], { timeout: 5000 });
db.pragma('journal_mode = WAL');
db.exec('CREATE TABLE IF NOT EXISTS raw (key TEXT PRIMARY KEY NOT NULL, value TEXT) WITHOUT ROWID');
const upsert = db.prepare('INSERT INTO raw (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
const verdict = (key, token) => ({ key, ok: true, outcome: 'advance', code: null, token, markBefore: 0, markAfter: token });
const gate = {
  async write(key, token, value) { upsert.run(key, JSON.stringify(value)); return verdict(key, token); },
};
const server = http.createServer(createHandler(db, { gate, issuer: {} }));
server.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + server.address().port));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

function start(dir, script, db) {
  const child = spawn(process.execPath, [script, db], { cwd: dir, env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const m = out.match(/listening on (http:\S+)/);
      if (m) resolve({ child, base: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
}

function put(agent, base, key, token, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(`/kv/${key}`, base), { method: 'PUT', agent, headers: { 'fencing-token': String(token), 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `connections` loops, each on its own key with rising tokens (every write advances), `requests` in all. */
async function load({ base, child }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number(o.connections) });
  const total = Number(o.requests);
  const lat = [];
  let sent = 0;
  const body = JSON.stringify({ status: 'paid', total: 42 });
  const tag = Math.random().toString(36).slice(2);
  const cpu0 = cpuUs(child.pid);
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Number(o.connections) }, async (_, c) => {
    for (let t = 1; sent < total; t++) {
      sent++;
      const s0 = process.hrtime.bigint();
      const status = await put(agent, base, `k${c}-${tag}`, t, body);
      if (status !== 200) throw new Error(`status ${status}`);
      lat.push(Number(process.hrtime.bigint() - s0) / 1e3);
    }
  }));
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuUs(child.pid) - cpu0;
  agent.destroy();
  lat.sort((a, b) => a - b);
  return { perSecond: Math.round(total / wall), cpuUsPerRequest: cpu / total, p50us: Math.round(lat[lat.length >> 1]) };
}

mkdirSync(join(root, 'build'), { recursive: true });
const dir = mkdtempSync(join(root, 'build', 'bench-node-service-'));
const servers = [];
try {
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(process.env.FENCEGATE_PKG_DIR || join(root, 'pkg'), join(dir, 'node_modules', 'fencegate'), 'dir');
  cpSync(join(root, 'examples/node-service/server.mjs'), join(dir, 'server.mjs'));
  writeFileSync(join(dir, 'unfenced.mjs'), UNFENCED);
  const fenced = await start(dir, 'server.mjs', join(dir, 'fenced.db'));
  servers.push(fenced.child);
  const raw = await start(dir, 'unfenced.mjs', join(dir, 'raw.db'));
  servers.push(raw.child);
  await load(fenced); // warm-up both
  await load(raw);
  const rounds = { fenced: [], unfenced: [] };
  for (let r = 0; r < Number(o.rounds); r++) {
    rounds.fenced.push(await load(fenced));
    rounds.unfenced.push(await load(raw));
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
  const show = (rs) =>
    `median ${median(rs.map((m) => m.perSecond))} req/s, server CPU ${median(rs.map((m) => m.cpuUsPerRequest)).toFixed(1)} µs/request ` +
    `(rounds: ${rs.map((m) => m.perSecond).join(' ')} req/s; ${rs.map((m) => m.cpuUsPerRequest.toFixed(0)).join(' ')} µs)`;
  const ratios = rounds.fenced.map((m, i) => m.perSecond / rounds.unfenced[i].perSecond);
  const cpuF = median(rounds.fenced.map((m) => m.cpuUsPerRequest));
  const cpuU = median(rounds.unfenced.map((m) => m.cpuUsPerRequest));
  console.log(`node-service, ${o.connections} keep-alive connections, ${o.rounds} rounds × ${o.requests} requests per variant, SQLite in WAL mode as the example opens it`);
  console.log(`  fenced   (gate over fencegate/sqlite): ${show(rounds.fenced)}`);
  console.log(`  unfenced (same handler, plain upsert): ${show(rounds.unfenced)}`);
  console.log(`  fenced/unfenced throughput, median of paired rounds: ${median(ratios).toFixed(3)}; server CPU added by the fence: ${(cpuF - cpuU).toFixed(1)} µs/request (${((cpuF / cpuU - 1) * 100).toFixed(0)} %)`);
} finally {
  for (const c of servers) c.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
