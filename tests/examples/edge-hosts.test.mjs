// Other edge hosts, each with the packed npm tarball:
// - Vercel edge: the `edge-light` condition (esbuild, as Vercel's bundler resolves it)
//   picks the entry that imports the .wasm as a module; the bundled
//   examples/vercel-edge function runs in Vercel's Edge Runtime emulator (npm
//   `edge-runtime`) with Wasm code generation from bytes disallowed.
// - Deno (npm `deno`, a registry package that ships the binary): the package loads
//   through its `node` condition from node_modules; examples/deno/server.mjs
//   serves fenced writes from Deno KV over real HTTP, and keeps its marks across a restart.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { root, scratchProject, request as rawRequest, stopGroup, waitFor, fencedBody as fenced, withoutDetail, twentyRacingWrites } from './helpers.mjs';

// every answer with a problem body's prose `detail` taken out (checked to be there)
const request = async (...args) => withoutDetail(await rawRequest(...args));

const require = createRequire(import.meta.url);
const deno = join(root, 'node_modules/.bin/deno');

function why(fn) {
  try {
    fn();
    return false;
  } catch (e) {
    return String(e.message).split('\n')[0];
  }
}
// Skip only when the runtime itself cannot be installed or run here.
const noEdgeRuntime = why(() => require.resolve('edge-runtime', { paths: [root] }));
const noDeno = why(() => execFileSync(deno, ['--version'], { stdio: 'pipe' }));

let project;
let kvDir;
let server;

before(() => {
  project = scratchProject('edge-hosts-');
  cpSync(join(root, 'examples/vercel-edge'), join(project, 'vercel-edge'), { recursive: true });
  cpSync(join(root, 'examples/deno/server.mjs'), join(project, 'deno-server.mjs'));
  kvDir = mkdtempSync(join(tmpdir(), 'fencegate-deno-kv-'));
});

after(async () => {
  await stopGroup(server);
  if (kvDir) rmSync(kvDir, { recursive: true, force: true });
  if (project) rmSync(project, { recursive: true, force: true });
});

test('Vercel edge: edge-light resolves to the module-import entry; the example function runs in the Edge Runtime emulator', { skip: noEdgeRuntime }, async () => {
  const esbuild = await import(join(root, 'node_modules/esbuild/lib/main.js'));
  // how the host hands the compiled module to the code (Vercel: `import … from '….wasm?module'`)
  const wasmAsHostModule = {
    name: 'wasm-as-host-module',
    setup(b) {
      b.onResolve({ filter: /\.wasm$/ }, (a) => ({ path: join(a.resolveDir, a.path), namespace: 'wasm' }));
      b.onLoad({ filter: /.*/, namespace: 'wasm' }, (a) => ({ contents: `export default globalThis.__hostWasmModules[${JSON.stringify(basename(a.path))}];`, loader: 'js' }));
    },
  };
  const built = await esbuild.build({
    entryPoints: [join(project, 'vercel-edge/api/fence.mjs')], bundle: true, write: false, metafile: true,
    format: 'iife', globalName: '__fn', platform: 'neutral', mainFields: ['module', 'main'],
    conditions: ['edge-light', 'worker', 'browser'], plugins: [wasmAsHostModule], logLevel: 'warning', absWorkingDir: project,
  });
  const inputs = Object.keys(built.metafile.inputs);
  assert.ok(inputs.includes('node_modules/fencegate/workerd.mjs'), inputs.join('\n'));
  assert.ok(!inputs.some((i) => /node\.mjs|browser\.mjs/.test(i)), inputs.join('\n'));

  const { EdgeRuntime } = require(require.resolve('edge-runtime', { paths: [root] }));
  const bytes = readFileSync(join(project, 'node_modules/fencegate/dist/fencegate_bg.wasm'));
  const runtime = new EdgeRuntime({
    codeGeneration: { strings: false, wasm: false }, // as on Vercel: no eval, no Wasm compiled from bytes
    extend(ctx) {
      ctx.__bytes = new Uint8Array(bytes);
      return ctx;
    },
  });
  // Modules belonging to the function's realm, as the host's `?module` import gives
  // (both of the package's: the resource side and the issuer side).
  runtime.context.__hostWasmModules = {};
  for (const f of ['fencegate_bg.wasm', 'fencegate_issuer_bg.wasm']) {
    const compiled = new WebAssembly.Module(readFileSync(join(project, 'node_modules/fencegate/dist', f)));
    Object.setPrototypeOf(compiled, runtime.evaluate('WebAssembly.Module.prototype'));
    runtime.context.__hostWasmModules[f] = compiled;
  }
  assert.equal(runtime.evaluate('typeof EdgeRuntime'), 'string');
  assert.throws(() => runtime.evaluate('new WebAssembly.Module(__bytes)'), /Wasm code generation disallowed/);
  runtime.evaluate(built.outputFiles[0].text);
  runtime.evaluate("addEventListener('fetch', (event) => event.respondWith(__fn.default(event.request)))");

  const send = async (token, body) => {
    const r = await runtime.dispatchFetch('https://edge.example/api/fence?key=k', { method: 'POST', headers: token === undefined ? {} : { 'Fencing-Token': token }, body });
    await r.waitUntil();
    const { status, body: answer } = withoutDetail({ status: r.status, body: await r.json() });
    return [status, answer, r.headers.get('content-type')];
  };
  const JSON_TYPE = 'application/json';
  const PROBLEM = 'application/problem+json';
  assert.deepEqual(await send('3', 'three'), [200, fenced('k', 'advance', null, '3', '0', '3'), JSON_TYPE]);
  assert.deepEqual(await send('3', 'again'), [200, fenced('k', 'accept', null, '3', '3', '3'), JSON_TYPE]);
  assert.deepEqual(await send('2', 'two'), [409, fenced('k', 'reject', 'STALE_TOKEN', '2', '3', '3'), PROBLEM]);
  assert.deepEqual(await send('03', 'x'), [400, fenced('k', 'reject', 'MALFORMED_TOKEN', '03', '3', '3'), PROBLEM]);
  assert.deepEqual(await send('3.0', 'x'), [400, fenced('k', 'reject', 'MALFORMED_TOKEN', '3.0', '3', '3'), PROBLEM]);
  assert.deepEqual(await send(undefined, 'x'), [428, fenced('k', 'reject', 'MISSING_TOKEN', null, '3', '3'), PROBLEM]);
  const max = '18446744073709551615';
  assert.deepEqual(await send(max, 'max'), [200, fenced('k', 'advance', null, max, '3', max), JSON_TYPE]);
});

test('Deno: the packed package loads through its node condition and checks tokens', { skip: noDeno }, () => {
  writeFileSync(join(project, 'deno-smoke.mjs'), `
import { MemoryGate, Gate, parseToken, toToken, FencegateError } from 'fencegate';
const out = [import.meta.resolve('fencegate').replace(/^.*node_modules\\//, ''), typeof Deno];
const g = new MemoryGate();
out.push(g.write('k', parseToken('3'), 'a').outcome, g.write('k', 2, 'b').code, String(toToken(2n ** 64n - 1n)));
try { parseToken('03'); } catch (e) { out.push(e instanceof FencegateError ? e.code : 'wrong class'); }
const rows = new Map();
const gate = new Gate({ transaction: (key, fn) => { const o = fn(rows.get(key) ?? null); if (o) rows.set(key, o.nextState); } });
out.push((await gate.write('k', 5n, 'v')).outcome, (await gate.write('k', 4, 'w')).code, JSON.stringify(rows.get('k')));
console.log(JSON.stringify(out));
`);
  const out = execFileSync(deno, ['run', '--allow-read', 'deno-smoke.mjs'], { cwd: project, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  assert.deepEqual(JSON.parse(out), [
    'fencegate/dist/node.mjs', 'object', 'advance', 'STALE_TOKEN', '18446744073709551615', 'MALFORMED_TOKEN', 'advance', 'STALE_TOKEN', '{"v":1,"mark":"5"}',
  ]);
});

async function startDenoServer() {
  server = spawn(deno, ['run', '--unstable-kv', '--allow-net=127.0.0.1', '--allow-env=PORT,KV_PATH', '--allow-read', `--allow-write=${kvDir}`, 'deno-server.mjs'], {
    cwd: project, env: { ...process.env, PORT: '0', KV_PATH: join(kvDir, 'fenced.kv'), NO_COLOR: '1' }, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  server.stdout.on('data', (c) => (out += c));
  server.stderr.on('data', (c) => (out += c));
  return waitFor(() => out.match(/listening on (http:\S+)/)?.[1], 20_000, `the Deno server\n${out}`);
}


test('Deno: examples/deno/server.mjs fences writes in Deno KV over HTTP (the issue\'s cases, 20 concurrent writes, a restart)', { skip: noDeno, timeout: 120_000 }, async () => {
  let base = await startDenoServer();
  const put = (key, token, body) => request(base, 'PUT', `/resources/${key}`, { headers: token === undefined ? {} : { 'Fencing-Token': token }, body });
  const read = (key) => request(base, 'GET', `/resources/${key}`);
  assert.deepEqual(await put('k', '3', 'v3'), { status: 200, body: fenced('k', 'advance', null, '3', '0', '3') });
  assert.deepEqual(await put('k', '3', 'three'), { status: 200, body: fenced('k', 'accept', null, '3', '3', '3') });
  const kept = { status: 200, body: { key: 'k', mark: '3', value: 'three' } };
  assert.deepEqual(await put('k', '2', 'two'), { status: 409, body: fenced('k', 'reject', 'STALE_TOKEN', '2', '3', '3') });
  assert.deepEqual(await read('k'), kept);
  for (const bad of ['03', '3.0', '']) {
    assert.deepEqual(await put('k', bad, 'bad'), { status: 400, body: fenced('k', 'reject', 'MALFORMED_TOKEN', bad, '3', '3') });
    assert.deepEqual(await read('k'), kept);
  }
  assert.deepEqual(await put('k', undefined, 'none'), { status: 428, body: fenced('k', 'reject', 'MISSING_TOKEN', null, '3', '3') });
  assert.deepEqual(await read('k'), kept);

  await twentyRacingWrites(put, read);

  await stopGroup(server);
  base = await startDenoServer();
  assert.deepEqual(await read('k'), kept);
  assert.deepEqual(await put('race', '19', 'late'), { status: 409, body: fenced('race', 'reject', 'STALE_TOKEN', '19', '20', '20') });
});
