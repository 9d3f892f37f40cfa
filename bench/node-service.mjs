// examples/node-service under load over loopback HTTP: fenced writes (PUT
// /kv/<key> through the gate: one SQLite transaction reads the fence state,
// decides, writes state and value) against the same service with the fence
// check removed (the same HTTP handler and token parsing, the gate swapped for
// a plain SQLite upsert of the value), in one run, interleaved rounds.
// Server in a child process; the load from this one (2 cores here: one each).
//   node bench/node-service.mjs [--seconds 2] [--connections 8] [--rounds 5]
// Reports each variant's median round and the median of the per-round ratios
// (both variants measured back to back in every round, so drift cancels).
// (FENCEGATE_PKG_DIR: measure another build of the package instead of pkg/)
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('../', import.meta.url));
const { values: o } = parseArgs({ options: { seconds: { type: 'string', default: '2' }, connections: { type: 'string', default: '8' }, rounds: { type: 'string', default: '5' } } });

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

/** `connections` loops, each on its own key with rising tokens (every write advances), for `seconds`. */
async function load(base) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number(o.connections) });
  const end = Date.now() + Number(o.seconds) * 1000;
  const lat = [];
  let n = 0;
  const body = JSON.stringify({ status: 'paid', total: 42 });
  const tag = Math.random().toString(36).slice(2);
  await Promise.all(Array.from({ length: Number(o.connections) }, async (_, c) => {
    for (let t = 1; Date.now() < end; t++) {
      const t0 = process.hrtime.bigint();
      const status = await put(agent, base, `k${c}-${tag}`, t, body);
      if (status !== 200) throw new Error(`status ${status}`);
      lat.push(Number(process.hrtime.bigint() - t0) / 1e3);
      n++;
    }
  }));
  agent.destroy();
  lat.sort((a, b) => a - b);
  return { perSecond: Math.round(n / Number(o.seconds)), p50us: Math.round(lat[lat.length >> 1]), p99us: Math.round(lat[Math.floor(lat.length * 0.99)]) };
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
  await load(fenced.base); // warm-up both
  await load(raw.base);
  const rounds = { fenced: [], unfenced: [] };
  const ratios = [];
  for (let r = 0; r < Number(o.rounds); r++) {
    const f = await load(fenced.base);
    const u = await load(raw.base);
    rounds.fenced.push(f);
    rounds.unfenced.push(u);
    ratios.push(f.perSecond / u.perSecond);
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
  const mid = (rs) => rs.find((m) => m.perSecond === median(rs.map((x) => x.perSecond)));
  const f = mid(rounds.fenced);
  const u = mid(rounds.unfenced);
  const ratio = median(ratios);
  console.log(`node-service, ${o.connections} keep-alive connections, ${o.rounds} rounds × ${o.seconds} s each variant, SQLite in WAL mode as the example opens it`);
  console.log(`  fenced   (gate over fencegate/sqlite): median ${f.perSecond} req/s  p50 ${f.p50us} µs  p99 ${f.p99us} µs  rounds ${rounds.fenced.map((m) => m.perSecond).join(' ')}`);
  console.log(`  unfenced (same handler, plain upsert): median ${u.perSecond} req/s  p50 ${u.p50us} µs  p99 ${u.p99us} µs  rounds ${rounds.unfenced.map((m) => m.perSecond).join(' ')}`);
  // closed loop with the server as the bottleneck: its time per request ≈ 1 / throughput
  console.log(`  fenced/unfenced, median of paired rounds: ${ratio.toFixed(3)} (per round: ${ratios.map((x) => x.toFixed(2)).join(' ')}); ` +
    `server time added per request ≈ ${((1 / ratio - 1) * 1e6 / u.perSecond).toFixed(1)} µs`);
} finally {
  for (const c of servers) c.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
