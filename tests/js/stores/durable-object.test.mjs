// fencegate/durable-object in real workerd (Miniflare): the store conformance
// suite runs inside a Durable Object (tests/workerd/conformance-worker.mjs)
// against DurableObjectStore on that object's storage; a variant that reads
// outside the storage transaction is caught; wrong arguments are
// INVALID_ARGUMENT; and FencedObject keeps its marks across a restart of the
// runtime on persisted storage, with the state stored as format text.
// (The HTTP protocol of FencedObject, through the packed tarball and wrangler's
// bundle, is tests/examples/edge-worker.test.mjs.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorker, miniflare, root } from '../workerd.mjs';
import { caseNames } from './run-cases.mjs';

let runner;
let mf;

before(async () => {
  runner = await bundleWorker(join(root, 'tests/workerd/conformance-worker.mjs'), 'do-conformance');
  mf = await miniflare(runner, { durableObjects: { RUNNER: 'Runner' }, compatibilityFlags: ['nodejs_compat'] });
});

after(async () => {
  await mf?.dispose();
  if (runner) rmSync(runner.dir, { recursive: true, force: true });
});

const run = async (object, body) => (await mf.dispatchFetch(`http://localhost/${object}`, { method: 'POST', body: JSON.stringify(body) })).json();

test('Durable Object storage: the whole conformance suite passes inside workerd', async () => {
  const results = await run('real', { variant: 'real' });
  assert.deepEqual(results.filter((r) => !r.ok), []);
  assert.deepEqual(results.map((r) => r.name), caseNames('transaction'));
});

test('Durable Object storage: a variant that reads outside storage.transaction fails the race case', async () => {
  const name = 'concurrent writers: the advances form one chain, the rest are STALE_TOKEN, the largest wins';
  const results = await run('lying', { variant: 'lying', only: [name] });
  assert.deepEqual(results.map((r) => [r.name, r.ok, r.assertion]), [[name, false, true]]);
});

test('Durable Object: wrong arguments are INVALID_ARGUMENT', async () => {
  assert.deepEqual(await run('arguments', { variant: 'arguments' }), [
    ['no storage', 'INVALID_ARGUMENT', 'DurableObjectStore needs a Durable Object storage (ctx.storage)'],
    ['a map', 'INVALID_ARGUMENT', 'DurableObjectStore needs a Durable Object storage (ctx.storage)'],
    ['prefix 1', 'INVALID_ARGUMENT', 'prefix must be a string'],
    ['decode only', 'INVALID_ARGUMENT', 'encode and decode come as a pair of functions (a codec): pass both, or neither for the default codec'],
    ['fencedFetch without a gate', 'INVALID_ARGUMENT', 'fencedFetch needs a Gate'],
    ['fencedFetch without a key', 'INVALID_ARGUMENT', 'fencedFetch: key must be a string'],
    ['fencedWorker(3)', 'INVALID_ARGUMENT', 'fencedWorker: binding must be the name of a Durable Object binding'],
    ['a function value', 'INVALID_ARGUMENT', '0'],
  ]);
});

test('FencedObject: answers through fencegate/http (428, 409 problem bodies); a restart of workerd on persisted storage keeps mark and value; the entry is format text', async () => {
  const worker = await bundleWorker({
    source: `import { FencedObject, fencedWorker } from 'fencegate/durable-object';
export class Fenced extends FencedObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.storage = ctx.storage;
  }
  async fetch(request) {
    if (new URL(request.url).searchParams.has('raw')) return Response.json(await this.storage.get(this.store.storageKey('k')));
    return super.fetch(request);
  }
}
export default fencedWorker('FENCED');
`,
  }, 'do-restart');
  const persist = mkdtempSync(join(tmpdir(), 'fencegate-do-'));
  const start = () => miniflare(worker, { durableObjects: { FENCED: 'Fenced' }, durableObjectsPersist: persist });
  const send = async (m, method, path, token, body) => {
    const r = await m.dispatchFetch(`http://localhost${path}`, { method, headers: token === undefined ? {} : { 'Fencing-Token': token }, body });
    return [r.status, await r.json(), r.headers.get('content-type')];
  };
  // the answers are fencegate/http's (docs/http.md): refusals are problem+json bodies
  const stale = {
    type: 'urn:fencegate:problem:stale-token', title: 'Stale fencing token', status: 409,
    detail: "epoch 6 is below the resource's mark 7: a newer owner has written; acquire a new lease",
    code: 'STALE_TOKEN', key: 'k', outcome: 'reject', token: '6', markBefore: '7', mark: '7',
  };
  const JSON_TYPE = 'application/json';
  const PROBLEM = 'application/problem+json';
  let m = await start();
  try {
    assert.deepEqual(await send(m, 'PUT', '/resources/k', '7', 'seven'), [200, { key: 'k', outcome: 'advance', code: null, token: '7', markBefore: '0', mark: '7' }, JSON_TYPE]);
    assert.deepEqual(await send(m, 'PUT', '/resources/k', '6', 'zombie'), [409, stale, PROBLEM]);
    assert.deepEqual(await send(m, 'PUT', '/resources/k', undefined, 'none'), [428, {
      type: 'urn:fencegate:problem:missing-token', title: 'Fencing token required', status: 428,
      detail: "send the owner's fencing token in the Fencing-Token header; the resource's mark is 7",
      code: 'MISSING_TOKEN', key: 'k', outcome: 'reject', token: null, markBefore: '7', mark: '7',
    }, PROBLEM]);
  } finally {
    await m.dispose();
  }
  m = await start();
  try {
    assert.deepEqual(await send(m, 'GET', '/resources/k'), [200, { key: 'k', mark: '7', value: 'seven' }, JSON_TYPE]);
    assert.deepEqual(await send(m, 'PUT', '/resources/k', '6', 'zombie'), [409, stale, PROBLEM]);
    assert.deepEqual(await send(m, 'PUT', '/resources/k', '8', 'eight'), [200, { key: 'k', outcome: 'advance', code: null, token: '8', markBefore: '7', mark: '8' }, JSON_TYPE]);
    assert.deepEqual(await send(m, 'GET', '/resources/k'), [200, { key: 'k', mark: '8', value: 'eight' }, JSON_TYPE]);
    assert.deepEqual(await send(m, 'GET', '/resources/k?raw'), [200, { state: '{"v":1,"mark":"8"}', value: '"eight"' }, JSON_TYPE]);
  } finally {
    await m.dispose();
    rmSync(persist, { recursive: true, force: true });
    rmSync(worker.dir, { recursive: true, force: true });
  }
});
