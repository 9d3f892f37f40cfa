// examples/edge-worker in workerd (Miniflare) under load over loopback HTTP:
// fenced writes (the example: Gate over the Durable Object's storage
// transaction) against a copy of the same Worker whose Durable Object writes the
// value in the same storage transaction with no fence check, in one run,
// interleaved rounds. One key (one Durable Object) per connection.
//   node bench/edge-worker.mjs [--seconds 2] [--connections 8] [--rounds 5]
// Reports each variant's median round and the median per-round ratio to the unfenced one.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('../', import.meta.url));
const { values: o } = parseArgs({ options: { seconds: { type: 'string', default: '2' }, connections: { type: 'string', default: '8' }, rounds: { type: 'string', default: '5' } } });

const example = readFileSync(join(root, 'examples/edge-worker/src/worker.mjs'), 'utf8');
// The baseline: the example with its Gate replaced by a gate-shaped object that
// writes the value in one storage transaction and checks nothing.
const unfenced = example.replace(
  'this.gate = new Gate(durableObjectStore(ctx.storage));',
  `this.gate = {
      write: (key, token, value) => ctx.storage.transaction(async (txn) => {
        await txn.put(key + ':value', value);
        return { ok: true, outcome: 'advance', code: null, token, markBefore: 0, markAfter: token };
      }),
    };`,
);
// And one that does the fenced path's storage operations (read the state, put
// state and value, one transaction) without fencegate: what the storage costs.
const sameStorage = example.replace(
  'this.gate = new Gate(durableObjectStore(ctx.storage));',
  `this.gate = {
      write: (key, token, value) => ctx.storage.transaction(async (txn) => {
        const state = (await txn.get(key + ':state')) ?? null;
        await txn.put(key + ':state', { v: 1, mark: String(token) });
        await txn.put(key + ':value', value);
        return { ok: true, outcome: 'advance', code: null, token, markBefore: state ? state.mark : 0, markAfter: token };
      }),
    };`,
);
const syncStore = example.replace(
  'this.gate = new Gate(durableObjectStore(ctx.storage));',
  `const storage = ctx.storage;
    this.gate = new Gate({
      transaction: (key, fn) => storage.transactionSync(() => {
        const out = fn(storage.kv.get(key + ':state') ?? null);
        if (out === null) return;
        storage.kv.put(key + ':state', out.nextState);
        if (out.change.kind === 'set') storage.kv.put(key + ':value', out.change.value);
        if (out.change.kind === 'delete') storage.kv.delete(key + ':value');
      }),
      load: (key) => {
        const state = storage.kv.get(key + ':state');
        return state === undefined ? null : { state, version: null, value: storage.kv.get(key + ':value') };
      },
    });`,
);
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

async function load(base) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number(o.connections) });
  const end = Date.now() + Number(o.seconds) * 1000;
  const tag = Math.random().toString(36).slice(2);
  let n = 0;
  await Promise.all(Array.from({ length: Number(o.connections) }, async (_, c) => {
    for (let t = 1; Date.now() < end; t++) {
      const status = await put(agent, base, `k${c}-${tag}`, t);
      if (status !== 200) throw new Error(`status ${status}`);
      n++;
    }
  }));
  agent.destroy();
  return Math.round(n / Number(o.seconds));
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
  const rel = readFileSync(join(dir, 'out/fenced.js'), 'utf8').match(/from\s+"([^"]+\.wasm)"/)[1];
  const { Miniflare } = await import(join(root, 'node_modules/miniflare/dist/src/index.js'));
  const wasmPath = join(dir, 'out', rel);
  const servers = {};
  for (const name of ['fenced', 'unfenced', 'storage', 'sync']) {
    const out = join(dir, 'out');
    const mf = new Miniflare({
      modulesRoot: out,
      modules: [
        { type: 'ESModule', path: join(out, `${name}.js`), contents: readFileSync(join(out, `${name}.js`), 'utf8') },
        { type: 'CompiledWasm', path: wasmPath, contents: readFileSync(join(root, 'pkg/dist/fencegate_bg.wasm')) },
      ],
      durableObjects: { RESOURCES: { className: 'FencedResource', useSQLite: true } },
      compatibilityDate: '2026-04-01', cf: false, host: '127.0.0.1', port: 0,
    });
    running.push(mf);
    servers[name] = String(await mf.ready);
  }
  for (const name of Object.keys(servers)) await load(servers[name]);
  const rounds = Object.fromEntries(Object.keys(servers).map((n) => [n, []]));
  for (let r = 0; r < Number(o.rounds); r++) {
    for (const name of Object.keys(servers)) rounds[name].push(await load(servers[name]));
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
  const ratio = (name) => median(rounds[name].map((x, i) => x / rounds.unfenced[i]));
  const labels = {
    fenced: 'fenced (the example: Gate over storage.transaction)',
    unfenced: 'unfenced (same Worker, value put, no check)',
    storage: 'same storage ops as fenced, no fencegate (get state, put state + value)',
    sync: 'fenced over the synchronous SQLite API (transactionSync + storage.kv)',
  };
  console.log(`edge-worker in workerd (Miniflare), ${o.connections} connections, one Durable Object each, ${o.rounds} rounds × ${o.seconds} s`);
  for (const name of Object.keys(servers)) {
    console.log(`  ${labels[name]}: median ${median(rounds[name])} req/s, ${ratio(name).toFixed(3)} × unfenced  (rounds ${rounds[name].join(' ')})`);
  }
} finally {
  for (const mf of running) await mf.dispose();
  rmSync(dir, { recursive: true, force: true });
}
