// examples/edge-worker in workerd (Miniflare) under load over loopback HTTP:
// fenced writes (the example: Gate over the Durable Object's storage
// transaction) against a copy of the same Worker whose Durable Object writes the
// value in the same storage transaction with no fence check, in one run,
// interleaved rounds. One key (one Durable Object) per connection.
//   node bench/edge-worker.mjs [--requests 2000] [--connections 8] [--rounds 5]
// Reports per variant the median round's requests/s, its median per-round ratio
// to the unfenced Worker, and the workerd process's CPU time per request (/proc).
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('../', import.meta.url));
const { values: o } = parseArgs({ options: { requests: { type: 'string', default: '2000' }, connections: { type: 'string', default: '8' }, rounds: { type: 'string', default: '5' } } });

const stat = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
/** CPU time (user + system) of a process, in µs (clock ticks of 10 ms). */
const cpuUs = (pid) => (Number(stat(pid)[11]) + Number(stat(pid)[12])) * 1e4;
/** This process's child processes (Miniflare starts one workerd per instance). */
function children() {
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
    try { return Number(stat(d)[1]) === process.pid; } catch { return false; }
  }).map(Number);
}

const example = readFileSync(join(root, 'examples/edge-worker/src/worker.mjs'), 'utf8');
const CLASS_LINE = 'export class FencedResource extends FencedObject {}';
/** The example with FencedResource's gate replaced (`gate` is source text using `ctx`). */
const withGate = (gate) =>
  example.replace(CLASS_LINE, `export class FencedResource extends FencedObject {
  constructor(ctx, env) {
    super(ctx, env);
    ${gate}
  }
}`);
// The baseline: the example with its Gate replaced by a gate-shaped object that
// writes the value in one storage transaction and checks nothing.
const unfenced = withGate(`this.gate = {
      write: (key, token, value) => ctx.storage.transaction(async (txn) => {
        await txn.put(key + ':value', value);
        return { ok: true, outcome: 'advance', code: null, token, markBefore: 0, markAfter: token };
      }),
    };`);
// And one that does the fenced path's storage operations (read the entry, put
// state and value, one transaction) without fencegate: what the storage costs.
const sameStorage = withGate(`this.gate = {
      write: (key, token, value) => ctx.storage.transaction(async (txn) => {
        const entry = (await txn.get('fencegate:' + key)) ?? null;
        await txn.put('fencegate:' + key, { state: JSON.stringify({ v: 1, mark: String(token) }), value: JSON.stringify(value) });
        return { ok: true, outcome: 'advance', code: null, token, markBefore: entry ? 1 : 0, markAfter: token };
      }),
    };`);
// Fenced over the synchronous SQLite-backed API instead of storage.transaction.
const syncStore = withGate(`const storage = ctx.storage;
    this.gate = new Gate({
      transaction: (key, fn) => storage.transactionSync(() => {
        const entry = storage.kv.get('fencegate:' + key) ?? null;
        const out = fn(entry === null ? null : entry.state);
        if (out === null) return false;
        const value = out.change.kind === 'set' ? JSON.stringify(out.change.value) : out.change.kind === 'delete' ? null : (entry?.value ?? null);
        storage.kv.put('fencegate:' + key, { state: JSON.stringify(out.nextState), value });
        return true;
      }),
      load: (key) => {
        const entry = storage.kv.get('fencegate:' + key);
        return entry === undefined ? null : { state: entry.state, version: null, value: entry.value === null ? undefined : JSON.parse(entry.value) };
      },
    });`).replace("import { FencedObject, fencedWorker } from 'fencegate/durable-object';", "import { FencedObject, fencedWorker } from 'fencegate/durable-object';\nimport { Gate } from 'fencegate';");
if (unfenced === example || sameStorage === example) throw new Error('the example changed: update the baseline substitution');

async function bundle(dir, name, source) {
  writeFileSync(join(dir, `${name}.mjs`), source);
  const esbuild = await import(join(root, 'node_modules/esbuild/lib/main.js'));
  await esbuild.build({
    entryPoints: [join(dir, `${name}.mjs`)], bundle: true, format: 'esm', platform: 'neutral', outfile: join(dir, 'out', `${name}.js`),
    conditions: ['workerd', 'worker', 'browser'], mainFields: ['module', 'main'], external: ['*.wasm'], logLevel: 'warning', absWorkingDir: dir,
  });
}

function put(agent, base, key, token) {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(`/resources/${key}`, base), { method: 'PUT', agent, headers: { 'Fencing-Token': String(token) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end('{"status":"paid","total":42}');
  });
}

async function load({ base, pid }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number(o.connections) });
  const total = Number(o.requests);
  const tag = Math.random().toString(36).slice(2);
  let sent = 0;
  const cpu0 = cpuUs(pid);
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Number(o.connections) }, async (_, c) => {
    for (let t = 1; sent < total; t++) {
      sent++;
      const status = await put(agent, base, `k${c}-${tag}`, t);
      if (status !== 200) throw new Error(`status ${status}`);
    }
  }));
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  agent.destroy();
  return { perSecond: Math.round(total / wall), cpuUsPerRequest: (cpuUs(pid) - cpu0) / total };
}

mkdirSync(join(root, 'build'), { recursive: true });
const dir = mkdtempSync(join(root, 'build', 'bench-edge-'));
const running = [];
try {
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(join(root, 'pkg'), join(dir, 'node_modules', 'fencegate'), 'dir');
  await bundle(dir, 'fenced', example);
  await bundle(dir, 'unfenced', unfenced);
  await bundle(dir, 'storage', sameStorage);
  await bundle(dir, 'sync', syncStore);
  // the bundles import the .wasm by its path relative to the output
  // (both of the package's: the resource side and the issuer side)
  const rels = [...readFileSync(join(dir, 'out/fenced.js'), 'utf8').matchAll(/from\s+"([^"]+\.wasm)"/g)].map((m) => m[1]);
  const { Miniflare } = await import(join(root, 'node_modules/miniflare/dist/src/index.js'));
  const servers = {};
  for (const name of ['fenced', 'unfenced', 'storage', 'sync']) {
    const before = new Set(children());
    const out = join(dir, 'out');
    const mf = new Miniflare({
      modulesRoot: out,
      modules: [
        { type: 'ESModule', path: join(out, `${name}.js`), contents: readFileSync(join(out, `${name}.js`), 'utf8') },
        ...rels.map((rel) => ({ type: 'CompiledWasm', path: join(dir, 'out', rel), contents: readFileSync(join(root, 'pkg/dist', basename(rel))) })),
      ],
      durableObjects: { RESOURCES: { className: 'FencedResource', useSQLite: true } },
      compatibilityDate: '2026-04-01', cf: false, host: '127.0.0.1', port: 0,
    });
    running.push(mf);
    const base = String(await mf.ready);
    const fresh = children().filter((p) => !before.has(p));
    if (fresh.length !== 1) throw new Error(`expected one new workerd process, got ${fresh}`);
    servers[name] = { base, pid: fresh[0] };
  }
  for (const name of Object.keys(servers)) await load(servers[name]);
  const rounds = Object.fromEntries(Object.keys(servers).map((n) => [n, []]));
  for (let r = 0; r < Number(o.rounds); r++) {
    for (const name of Object.keys(servers)) rounds[name].push(await load(servers[name]));
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
  const ratio = (name) => median(rounds[name].map((x, i) => x.perSecond / rounds.unfenced[i].perSecond));
  const labels = {
    fenced: 'fenced (the example: FencedObject, DurableObjectStore over storage.transaction)',
    unfenced: 'unfenced (same Worker, value put, no check)',
    storage: 'same storage ops as fenced, no fencegate (get state, put state + value)',
    sync: 'fenced over the synchronous SQLite API (transactionSync + storage.kv)',
  };
  console.log(`edge-worker in workerd (Miniflare), ${o.connections} connections, one Durable Object each, ${o.rounds} rounds × ${o.requests} requests per variant`);
  for (const name of Object.keys(servers)) {
    const rs = rounds[name];
    console.log(`  ${labels[name]}: median ${median(rs.map((m) => m.perSecond))} req/s (${ratio(name).toFixed(2)} × unfenced), ` +
      `workerd CPU ${median(rs.map((m) => m.cpuUsPerRequest)).toFixed(0)} µs/request  (rounds ${rs.map((m) => m.perSecond).join(' ')})`);
  }
} finally {
  for (const mf of running) await mf.dispose();
  rmSync(dir, { recursive: true, force: true });
}
