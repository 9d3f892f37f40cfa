// The transaction shape on Cloudflare Durable Object storage, in real workerd
// (Miniflare): a Durable Object runs `fn(state)` inside `storage.transaction`,
// keeps the fence state as a structured-clone object next to the value, and
// answers fenced writes. The package is bundled as wrangler would (workerd
// condition, .wasm imported as a module).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, copyFileSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

const WORKER = `
import { Gate, parseToken, FencegateError } from 'fencegate';

export class Resource {
  constructor(ctx) {
    const storage = ctx.storage;
    this.storage = storage;
    this.gate = new Gate({
      // everything fn returns is written in the same storage transaction, or nothing
      transaction: (key, fn) =>
        storage.transaction(async (txn) => {
          const out = fn((await txn.get(key + ':state')) ?? null);
          if (out === null) return;
          await txn.put(key + ':state', out.nextState);
          if (out.change.kind === 'set') await txn.put(key + ':value', out.change.value);
          if (out.change.kind === 'delete') await txn.delete(key + ':value');
        }),
      load: async (key) => {
        const m = await storage.get([key + ':state', key + ':value']);
        return m.has(key + ':state') ? { state: m.get(key + ':state'), version: null, value: m.get(key + ':value') } : null;
      },
    });
  }

  async fetch(request) {
    const url = new URL(request.url);
    const key = url.pathname.slice(1);
    try {
      if (url.searchParams.has('plant')) {
        await this.storage.put(key + ':state', JSON.parse(url.searchParams.get('plant')));
        await this.storage.put(key + ':value', 'planted');
        return Response.json({ planted: true });
      }
      if (url.searchParams.has('raw')) {
        const m = await this.storage.get([key + ':state', key + ':value']);
        return Response.json({ state: m.get(key + ':state') ?? null, value: m.get(key + ':value') ?? null });
      }
      if (request.method === 'GET') {
        const r = await this.gate.read(key);
        return Response.json({ mark: String(r.mark), value: r.value ?? null, state: (await this.storage.get(key + ':state')) ?? null });
      }
      const token = parseToken(request.headers.get('fencing-token'));
      const v = request.method === 'DELETE' ? await this.gate.delete(key, token) : await this.gate.write(key, token, await request.text());
      return Response.json({ outcome: v.outcome, code: v.code, mark: String(v.markAfter) }, { status: v.ok ? 200 : 409 });
    } catch (e) {
      return Response.json({ code: e instanceof FencegateError ? e.code : 'UNEXPECTED', message: e.message }, { status: 500 });
    }
  }
}

export default {
  fetch(request, env) {
    return env.RESOURCE.get(env.RESOURCE.idFromName('one')).fetch(request);
  },
};
`;

let dir;
let mf;

before(async () => {
  mkdirSync(join(root, 'build'), { recursive: true });
  dir = mkdtempSync(join(root, 'build', 'durable-object-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(join(root, 'pkg'), join(dir, 'node_modules', 'fencegate'), 'dir');
  writeFileSync(join(dir, 'worker-src.mjs'), WORKER);
  const out = join(dir, 'out');
  mkdirSync(join(out, 'dist'), { recursive: true });
  const esbuild = await import(join(root, 'node_modules/esbuild/lib/main.js'));
  await esbuild.build({
    entryPoints: [join(dir, 'worker-src.mjs')], bundle: true, format: 'esm', platform: 'neutral', outfile: join(out, 'worker.mjs'),
    conditions: ['workerd', 'worker', 'browser'], mainFields: ['module', 'main'], external: ['*.wasm'], logLevel: 'warning', absWorkingDir: dir,
  });
  copyFileSync(join(root, 'pkg/dist/fencegate_bg.wasm'), join(out, 'dist/fencegate_bg.wasm'));
  const { Miniflare } = await import(join(root, 'node_modules/miniflare/dist/src/index.js'));
  mf = new Miniflare({
    modulesRoot: out,
    modules: [
      { type: 'ESModule', path: join(out, 'worker.mjs'), contents: readFileSync(join(out, 'worker.mjs'), 'utf8') },
      { type: 'CompiledWasm', path: join(out, 'dist/fencegate_bg.wasm'), contents: readFileSync(join(out, 'dist/fencegate_bg.wasm')) },
    ],
    durableObjects: { RESOURCE: 'Resource' },
    compatibilityDate: '2026-04-01',
  });
});

after(async () => {
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

async function send(method, path, token, body) {
  const headers = token === undefined ? {} : { 'fencing-token': token };
  const r = await mf.dispatchFetch(`http://localhost/${path}`, { method, headers, body });
  return [r.status, await r.json()];
}

test('Durable Object storage transaction: advance, accept, stale, delete, exact u64; state kept as an object', async () => {
  assert.deepEqual(await send('POST', 'k', '5', 'five'), [200, { outcome: 'advance', code: null, mark: '5' }]);
  assert.deepEqual(await send('POST', 'k', '5', 'five again'), [200, { outcome: 'accept', code: null, mark: '5' }]);
  assert.deepEqual(await send('POST', 'k', '4', 'stale'), [409, { outcome: 'reject', code: 'STALE_TOKEN', mark: '5' }]);
  assert.deepEqual(await send('GET', 'k'), [200, { mark: '5', value: 'five again', state: { v: 1, mark: '5' } }]);
  assert.deepEqual(await send('DELETE', 'k', '6'), [200, { outcome: 'advance', code: null, mark: '6' }]);
  assert.deepEqual(await send('POST', 'k', '5', 'zombie'), [409, { outcome: 'reject', code: 'STALE_TOKEN', mark: '6' }]);
  assert.deepEqual(await send('GET', 'k'), [200, { mark: '6', value: null, state: { v: 1, mark: '6' } }]);
  const max = '18446744073709551615';
  assert.deepEqual(await send('POST', 'k', max, 'max'), [200, { outcome: 'advance', code: null, mark: max }]);
  assert.deepEqual(await send('POST', 'k', '18446744073709551614', 'x'), [409, { outcome: 'reject', code: 'STALE_TOKEN', mark: max }]);
  assert.deepEqual(await send('GET', 'k'), [200, { mark: max, value: 'max', state: { v: 1, mark: max } }]);
});

test('Durable Object: concurrent requests with different tokens end at the largest', async () => {
  const tokens = [3, 9, 1, 7, 9, 2, 8, 4, 6, 5];
  const answers = await Promise.all(tokens.map((t) => send('POST', 'race', String(t), `v${t}`)));
  for (const [status, body] of answers) assert.ok(status === 200 || (status === 409 && body.code === 'STALE_TOKEN'));
  const [, final] = await send('GET', 'race');
  assert.equal(final.mark, '9');
  assert.equal(final.value, 'v9');
});

test('Durable Object: corrupt stored state is CORRUPT_STATE and nothing is written', async () => {
  assert.deepEqual(await send('POST', 'bad?plant=' + encodeURIComponent('{"v":1,"mark":5}')), [200, { planted: true }]);
  const [status, body] = await send('POST', 'bad', '9', 'new');
  assert.deepEqual([status, body.code], [500, 'CORRUPT_STATE']);
  const [, read] = await send('GET', 'bad');
  assert.equal(read.code, 'CORRUPT_STATE');
  assert.deepEqual(await send('GET', 'bad?raw'), [200, { state: { v: 1, mark: 5 }, value: 'planted' }]);
  // once repaired, the gate works again
  assert.deepEqual(await send('POST', 'bad?plant=' + encodeURIComponent('{"v":1,"mark":"5"}')), [200, { planted: true }]);
  assert.deepEqual(await send('POST', 'bad', '4', 'old'), [409, { outcome: 'reject', code: 'STALE_TOKEN', mark: '5' }]);
  assert.deepEqual(await send('POST', 'bad', '9', 'new'), [200, { outcome: 'advance', code: null, mark: '9' }]);
  assert.deepEqual(await send('GET', 'bad?raw'), [200, { state: { v: 1, mark: '9' }, value: 'new' }]);
});
