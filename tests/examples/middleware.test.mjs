// The README's Hono and Express snippets, exactly as printed, against the
// packed tarball: the Hono app in real workerd (Miniflare, bundled by esbuild
// through the `workerd` condition) and on Node (@hono/node-server), the Express
// 5 app on Node; every request over real HTTP on loopback.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { root, scratchProject, request } from './helpers.mjs';
import { readmeBlocks } from '../doc-blocks.mjs';
import { installedWorker } from '../js/workerd.mjs';

const HEADING = 'HTTP: status codes, problem details, Hono and Express';
let project;
const stops = [];

before(() => {
  project = scratchProject('middleware-');
  const [hono, express, orders] = readmeBlocks(HEADING);
  writeFileSync(join(project, 'hono-app.mjs'), hono);
  writeFileSync(join(project, 'express-app.mjs'), express);
  writeFileSync(join(project, 'orders-app.mjs'), orders);
});

after(async () => {
  for (const stop of stops.reverse()) await stop();
  if (project) rmSync(project, { recursive: true, force: true });
});

const URN = 'urn:fencegate:problem:';
const problem = (status, code, title, detail, token, mark) => ({
  type: URN + code.toLowerCase().replaceAll('_', '-'), title, status, detail, code,
  key: 'k', outcome: 'reject', token, markBefore: mark, mark,
});
const applied = (outcome, token, markBefore, mark, key = 'k') => ({ key, outcome, code: null, token, markBefore, mark });
const MALFORMED = 'the Fencing-Token header must be a canonical decimal epoch 1..18446744073709551615 (no sign, leading zero, space, fraction or exponent) or a signed fg1 token';

/** The must-hold cases, the same for every app. */
async function mustHold(base) {
  const put = async (key, token, body, extra = {}) => {
    const r = await request(base, 'PUT', `/resources/${key}`, { headers: { ...(token === undefined ? {} : { 'Fencing-Token': token }), 'content-type': 'text/plain', ...extra }, body });
    return r;
  };
  const read = async (key) => (await request(base, 'GET', `/resources/${key}`)).body;

  assert.deepEqual(await put('k', '5', 'five'), { status: 200, body: applied('advance', '5', '0', '5') });
  // a missing token
  assert.deepEqual(await put('k', undefined, 'none'), {
    status: 428,
    body: problem(428, 'MISSING_TOKEN', 'Fencing token required', "send the owner's fencing token in the Fencing-Token header; the resource's mark is 5", null, '5'),
  });
  // "007"
  assert.deepEqual(await put('k', '007', 'bond'), { status: 400, body: problem(400, 'MALFORMED_TOKEN', 'Malformed fencing token', MALFORMED, '007', '5') });
  // a stale token
  assert.deepEqual(await put('k', '4', 'four'), {
    status: 409,
    body: problem(409, 'STALE_TOKEN', 'Stale fencing token', "epoch 4 is below the resource's mark 5: a newer owner has written; acquire a new lease", '4', '5'),
  });
  assert.deepEqual(await read('k'), { mark: '5', value: 'five' });
  // the current token
  assert.deepEqual(await put('k', '5', 'five again'), { status: 200, body: applied('accept', '5', '5', '5') });
  // a new epoch
  assert.deepEqual(await put('k', '6', 'six'), { status: 200, body: applied('advance', '6', '5', '6') });
  assert.deepEqual(await read('k'), { mark: '6', value: 'six' });
  // op id and holder headers: a retried op id is a duplicate; bad values are 400 and change nothing
  assert.deepEqual(await put('k', '6', 'op', { 'Fencing-Op-Id': 'r-1', 'Fencing-Holder': 'node-a' }), { status: 200, body: applied('accept', '6', '6', '6') });
  assert.deepEqual(await put('k', '6', 'op again', { 'Fencing-Op-Id': 'r-1', 'Fencing-Holder': 'node-a' }), { status: 200, body: { ...applied('duplicate', '6', '6', '6'), original: 'accept' } });
  const conflict = await put('k', '6', 'other holder', { 'Fencing-Holder': 'node-b' });
  assert.deepEqual([conflict.status, conflict.body.code, conflict.body.mark], [409, 'EPOCH_CONFLICT', '6']);
  for (const [name, value] of [['Fencing-Op-Id', 'a,b'], ['Fencing-Op-Id', 'x'.repeat(129)], ['Fencing-Holder', 'é']]) {
    const r = await put('k', '7', 'bad header', { [name]: value });
    assert.deepEqual(r, {
      status: 400,
      body: {
        type: URN + 'invalid-argument', title: 'Invalid request', status: 400,
        detail: `the ${name} header must be ${name === 'Fencing-Op-Id' ? '1 to 128' : '1 to 256'} visible ASCII characters without commas`,
        code: 'INVALID_ARGUMENT', key: 'k', mark: null,
      },
    }, `${name}: ${value}`);
  }
  assert.deepEqual(await read('k'), { mark: '6', value: 'op' });

  // 20 concurrent requests with tokens 1..20 (random order) end with mark 20 and token 20's value
  const tokens = Array.from({ length: 20 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
  const answers = await Promise.all(tokens.map((t) => put('race', String(t), `value of ${t}`)));
  const why = `order ${tokens.join(',')}\n${JSON.stringify(answers)}`;
  assert.deepEqual(await read('race'), { mark: '20', value: 'value of 20' }, why);
  let prev = 0;
  for (const [i, a] of answers.map((a, i) => [i, a]).filter(([, a]) => a.status === 200).sort(([x], [y]) => tokens[x] - tokens[y])) {
    assert.deepEqual(a.body, applied('advance', String(tokens[i]), String(prev), String(tokens[i]), 'race'), why);
    prev = tokens[i];
  }
  assert.equal(prev, 20, why);
  for (const [i, a] of answers.map((a, i) => [i, a]).filter(([, a]) => a.status !== 200)) {
    assert.deepEqual([a.status, a.body.code, a.body.token, a.body.mark === a.body.markBefore], [409, 'STALE_TOKEN', String(tokens[i]), true], why);
    assert.ok(Number(a.body.mark) > tokens[i], why);
  }
}

test('Hono app from the README on workerd (Miniflare): the must-hold cases and 20 concurrent writes', async () => {
  const mf = await installedWorker(project, join(project, 'hono-app.mjs'), join(project, 'hono-worker'), { host: '127.0.0.1', port: 0 });
  stops.push(() => mf.dispose());
  await mustHold(String(await mf.ready));
});

/** Listens on 127.0.0.1:0; resolves to the base URL. */
function listen(server) {
  return new Promise((resolve) => server.on('listening', () => resolve(`http://127.0.0.1:${server.address().port}`)));
}

test('Hono app from the README on Node (@hono/node-server): the must-hold cases and 20 concurrent writes', async () => {
  const { default: app } = await import(pathToFileURL(join(project, 'hono-app.mjs')).href);
  const { serve } = await import(join(root, 'node_modules/@hono/node-server/dist/index.mjs'));
  const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
  stops.push(() => new Promise((r) => server.close(r)));
  await mustHold(await listen(server));
});

test('Express 5 app from the README on Node: the must-hold cases and 20 concurrent writes', async () => {
  const { default: app } = await import(pathToFileURL(join(project, 'express-app.mjs')).href);
  const server = app.listen(0, '127.0.0.1');
  stops.push(() => new Promise((r) => server.close(r)));
  await mustHold(await listen(server));
});

test('Express app over a real SQLite orders table from the README: the handler\'s own UPDATE runs only under a current token', async () => {
  process.env.SHOP_DB = join(project, 'shop.db');
  const { default: app } = await import(pathToFileURL(join(project, 'orders-app.mjs')).href);
  const server = app.listen(0, '127.0.0.1');
  stops.push(() => new Promise((r) => server.close(r)));
  const base = await listen(server);
  const put = (token, body, extra = {}) => request(base, 'PUT', '/orders/42', { headers: { 'Fencing-Token': token, 'content-type': 'text/plain', ...extra }, body });
  const order = async () => (await request(base, 'GET', '/orders/42')).body;
  assert.deepEqual(await order(), null);
  assert.deepEqual(await put('5', 'paid'), { status: 200, body: applied('advance', '5', '0', '5', 'orders/42') });
  assert.deepEqual(await order(), { id: 42, status: 'paid' });
  assert.deepEqual(await put('6', 'shipped'), { status: 200, body: applied('advance', '6', '5', '6', 'orders/42') });
  const stale = await put('5', 'refunded');
  assert.deepEqual([stale.status, stale.body.code, stale.body.token, stale.body.mark], [409, 'STALE_TOKEN', '5', '6']);
  assert.deepEqual(await order(), { id: 42, status: 'shipped' });
  assert.deepEqual(await put('6', 'delivered', { 'Fencing-Op-Id': 'd-1' }), { status: 200, body: applied('accept', '6', '6', '6', 'orders/42') });
  assert.deepEqual(await put('6', 'delivered twice', { 'Fencing-Op-Id': 'd-1' }), { status: 200, body: { ...applied('duplicate', '6', '6', '6', 'orders/42'), original: 'accept' } });
  assert.deepEqual(await order(), { id: 42, status: 'delivered' });
  const missing = await request(base, 'PUT', '/orders/42', { headers: { 'content-type': 'text/plain' }, body: 'no token' });
  assert.deepEqual([missing.status, missing.body.code, missing.body.mark], [428, 'MISSING_TOKEN', '6']);
  assert.deepEqual(await order(), { id: 42, status: 'delivered' });
});
