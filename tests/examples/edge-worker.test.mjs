// examples/edge-worker in real workerd: the example's own files, bundled by
// wrangler (`wrangler deploy --dry-run`, the same bundle it would upload) against
// the packed npm tarball, run in Miniflare with the Durable Object binding and
// migration read from the example's wrangler.jsonc; requests go over real HTTP
// sockets. Then `wrangler dev` itself serves the example from its config.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root, scratchProject, request as rawRequest, freePort, waitFor, stopGroup, parseJsonc, fencedBody as fenced, withoutDetail } from './helpers.mjs';

// every answer with a problem body's prose `detail` taken out (checked to be there)
const request = async (...args) => withoutDetail(await rawRequest(...args));

const example = join(root, 'examples/edge-worker');
const wrangler = join(root, 'node_modules/.bin/wrangler');
// no telemetry, no fetch of the Request.cf object from the network
const quietEnv = { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', CI: 'true' };

let project;
let persist;
let config;
let mf;
let base;
let dev;
let signedMf;

function miniflareOptions(persistTo, bindings = {}) {
  const sqlite = new Set(config.migrations.flatMap((m) => m.new_sqlite_classes ?? []));
  return {
    modules: true,
    scriptPath: join(project, 'out/worker.js'),
    modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
    compatibilityDate: config.compatibility_date,
    durableObjects: Object.fromEntries(
      config.durable_objects.bindings.map((b) => [b.name, { className: b.class_name, useSQLite: sqlite.has(b.class_name) }]),
    ),
    durableObjectsPersist: persistTo,
    bindings,
    cf: false,
    host: '127.0.0.1',
    port: 0,
  };
}

async function startMiniflare() {
  const { Miniflare } = await import(join(root, 'node_modules/miniflare/dist/src/index.js'));
  mf = new Miniflare(miniflareOptions(persist));
  base = String(await mf.ready);
}

before(async () => {
  project = scratchProject('edge-worker-');
  cpSync(join(example, 'src'), join(project, 'src'), { recursive: true });
  cpSync(join(example, 'wrangler.jsonc'), join(project, 'wrangler.jsonc'));
  config = parseJsonc(readFileSync(join(project, 'wrangler.jsonc'), 'utf8'));
  execFileSync(wrangler, ['deploy', '--dry-run', '--outdir', 'out'], { cwd: project, env: quietEnv, stdio: 'pipe' });
  persist = mkdtempSync(join(tmpdir(), 'fencegate-do-'));
  await startMiniflare();
});

after(async () => {
  await mf?.dispose();
  await signedMf?.dispose();
  await stopGroup(dev);
  if (persist) rmSync(persist, { recursive: true, force: true });
  if (project) rmSync(project, { recursive: true, force: true });
});

const put = (key, token, body) =>
  request(base, 'PUT', `/resources/${key}`, { headers: token === undefined ? {} : { 'Fencing-Token': token }, body });
const read = (key) => request(base, 'GET', `/resources/${key}`);

test('wrangler.jsonc: one Durable Object class bound and migrated (SQLite-backed), main is the example', () => {
  assert.equal(config.main, 'src/worker.mjs');
  assert.deepEqual(config.durable_objects.bindings, [{ name: 'RESOURCES', class_name: 'FencedResource' }]);
  assert.deepEqual(config.migrations, [{ tag: 'v1', new_sqlite_classes: ['FencedResource'] }]);
});

test('issue 8 cases: key k at mark 3; "3" accepts; "2" is 409 STALE_TOKEN; "03", "3.0", "" are 400, no header 428; nothing changes on refusal', async () => {
  assert.deepEqual(await put('k', '3', 'v3'), { status: 200, body: fenced('k', 'advance', null, '3', '0', '3') });
  assert.deepEqual(await put('k', '3', 'three'), { status: 200, body: fenced('k', 'accept', null, '3', '3', '3') });
  const kept = { status: 200, body: { key: 'k', mark: '3', value: 'three' } };
  assert.deepEqual(await read('k'), kept);

  assert.deepEqual(await put('k', '2', 'two'), { status: 409, body: fenced('k', 'reject', 'STALE_TOKEN', '2', '3', '3') });
  assert.deepEqual(await read('k'), kept);
  // (a header's leading and trailing spaces are not part of its value in HTTP, so ' 3' arrives as '3')
  for (const bad of ['03', '3.0', '', '3 4', '+3', '3e0', '0x3', '0', '18446744073709551616']) {
    assert.deepEqual(await put('k', bad, 'bad'), { status: 400, body: fenced('k', 'reject', 'MALFORMED_TOKEN', bad, '3', '3') }, JSON.stringify(bad));
    assert.deepEqual(await read('k'), kept);
  }
  assert.deepEqual(await put('k', undefined, 'none'), { status: 428, body: fenced('k', 'reject', 'MISSING_TOKEN', null, '3', '3') });
  assert.deepEqual(await read('k'), kept);
  // fenced delete and establish go through the same check
  assert.deepEqual(
    await request(base, 'DELETE', '/resources/k', { headers: { 'Fencing-Token': '2' } }),
    { status: 409, body: fenced('k', 'reject', 'STALE_TOKEN', '2', '3', '3') },
  );
  assert.deepEqual(
    await request(base, 'POST', '/resources/k/establish', { headers: { 'Fencing-Token': '1' } }),
    { status: 409, body: fenced('k', 'reject', 'STALE_TOKEN', '1', '3', '3') },
  );
  assert.deepEqual(await read('k'), kept);
});

test('an empty Fencing-Token header, written byte for byte on a raw socket, is MALFORMED_TOKEN, not MISSING_TOKEN', async () => {
  const { hostname, port } = new URL(base);
  const wire = 'PUT /resources/k HTTP/1.1\r\nHost: localhost\r\nFencing-Token: \r\nContent-Length: 1\r\nConnection: close\r\n\r\nx';
  const answer = await new Promise((resolve, reject) => {
    let t = '';
    const s = net.connect(port, hostname, () => s.end(wire));
    s.setEncoding('latin1');
    s.on('data', (c) => (t += c));
    s.on('end', () => resolve(t));
    s.on('error', reject);
  });
  const [head, ...rest] = answer.split('\r\n\r\n');
  let body = rest.join('\r\n\r\n');
  if (/^transfer-encoding: chunked$/im.test(head)) {
    let out = '';
    for (let i = 0; ;) {
      const nl = body.indexOf('\r\n', i);
      const n = parseInt(body.slice(i, nl), 16);
      if (!n) break;
      out += body.slice(nl + 2, nl + 2 + n);
      i = nl + 2 + n + 2;
    }
    body = out;
  }
  assert.match(head, /^HTTP\/1\.1 400 /);
  assert.deepEqual(withoutDetail({ body: JSON.parse(body) }).body, fenced('k', 'reject', 'MALFORMED_TOKEN', '', '3', '3'));
  assert.deepEqual(await read('k'), { status: 200, body: { key: 'k', mark: '3', value: 'three' } });
});

test('exact u64 epochs through the header', async () => {
  const max = '18446744073709551615';
  assert.deepEqual(await put('u64', '9007199254740993', 'a'), { status: 200, body: fenced('u64', 'advance', null, '9007199254740993', '0', '9007199254740993') });
  assert.deepEqual(await put('u64', '9007199254740992', 'b'), { status: 409, body: fenced('u64', 'reject', 'STALE_TOKEN', '9007199254740992', '9007199254740993', '9007199254740993') });
  assert.deepEqual(await put('u64', max, 'c'), { status: 200, body: fenced('u64', 'advance', null, max, '9007199254740993', max) });
  assert.deepEqual(await read('u64'), { status: 200, body: { key: 'u64', mark: max, value: 'c' } });
});

test('20 concurrent requests with tokens 1..20 in random order: mark 20, token 20\'s value, and the history is a serial one', async () => {
  const tokens = Array.from({ length: 20 }, (_, i) => i + 1);
  for (let i = tokens.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [tokens[i], tokens[j]] = [tokens[j], tokens[i]];
  }
  const answers = await Promise.all(tokens.map((t) => put('race', String(t), `value of ${t}`)));
  const history = answers.map((a, i) => ({ sent: tokens[i], status: a.status, ...a.body }));
  const why = `order ${tokens.join(',')}\n${JSON.stringify(history, null, 1)}`;
  assert.deepEqual(await read('race'), { status: 200, body: { key: 'race', mark: '20', value: 'value of 20' } }, why);

  // The applied writes, in token order, must form one chain of marks 0 → a1 → a2 → … → 20:
  // each applied write saw the previous applied token as its mark (so they ran in
  // token order, one at a time), and every refused write had a token below a mark
  // that an applied write had already established, and was told that mark.
  const applied = history.filter((h) => h.status === 200).sort((a, b) => a.sent - b.sent);
  assert.ok(applied.length >= 1, why);
  let prev = 0;
  for (const h of applied) {
    assert.deepEqual([h.outcome, h.code, h.token, h.markBefore, h.mark], ['advance', null, String(h.sent), String(prev), String(h.sent)], why);
    prev = h.sent;
  }
  assert.equal(prev, 20, why);
  const established = new Set(applied.map((h) => h.sent));
  for (const h of history.filter((x) => x.status !== 200)) {
    assert.equal(h.status, 409, why);
    assert.equal(h.code, 'STALE_TOKEN', why);
    assert.ok(established.has(Number(h.markBefore)) && Number(h.markBefore) > h.sent, why);
    assert.equal(h.mark, h.markBefore, why);
  }
  assert.equal(applied.length + history.filter((x) => x.status === 409).length, 20);
});

/** Starts a PUT whose body is held back until `finish()`: the request is in flight, not yet at the gate. */
function heldPut(key, token, body) {
  const { hostname, port } = new URL(base);
  let release;
  const response = new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, method: 'PUT', path: `/resources/${key}`, headers: { 'Fencing-Token': token } }, (res) => {
      let t = '';
      res.on('data', (c) => (t += c));
      res.on('end', () => resolve(withoutDetail({ status: res.statusCode, body: JSON.parse(t) })));
    });
    req.on('error', reject);
    req.flushHeaders();
    req.write(body.slice(0, 1)); // chunked: the first byte goes out now
    release = () => req.end(body.slice(1));
  });
  return { response, finish: () => release() };
}

test('a stale write delayed in flight until after a newer epoch is refused at the resource', async () => {
  assert.equal((await put('delayed', '4', 'A: first')).status, 200);
  const late = heldPut('delayed', '4', 'A: late write');
  await new Promise((r) => setTimeout(r, 200)); // A's request has reached the worker; its body has not
  // B acquires epoch 5: the barrier first, then its write
  assert.deepEqual(
    await request(base, 'POST', '/resources/delayed/establish', { headers: { 'Fencing-Token': '5' } }),
    { status: 200, body: fenced('delayed', 'advance', null, '5', '4', '5') },
  );
  assert.equal((await put('delayed', '5', 'B: value')).status, 200);
  late.finish();
  assert.deepEqual(await late.response, { status: 409, body: fenced('delayed', 'reject', 'STALE_TOKEN', '4', '5', '5') });
  assert.deepEqual(await read('delayed'), { status: 200, body: { key: 'delayed', mark: '5', value: 'B: value' } });
});

test('not instant revocation: a late write lands when the resource has not seen the newer epoch yet (R7)', async () => {
  assert.equal((await put('no-barrier', '4', 'A: first')).status, 200);
  const late = heldPut('no-barrier', '4', 'A: late write');
  await new Promise((r) => setTimeout(r, 200));
  // B was issued epoch 5 but has not called establish nor written yet
  late.finish();
  assert.deepEqual(await late.response, { status: 200, body: fenced('no-barrier', 'accept', null, '4', '4', '4') });
  assert.equal((await put('no-barrier', '5', 'B: value')).status, 200);
  assert.deepEqual(await put('no-barrier', '4', 'A: again'), { status: 409, body: fenced('no-barrier', 'reject', 'STALE_TOKEN', '4', '5', '5') });
});

test('restart: a new Miniflare instance on the persisted Durable Object storage keeps the marks and values', async () => {
  await mf.dispose();
  mf = undefined;
  await startMiniflare();
  assert.deepEqual(await read('k'), { status: 200, body: { key: 'k', mark: '3', value: 'three' } });
  assert.deepEqual(await read('race'), { status: 200, body: { key: 'race', mark: '20', value: 'value of 20' } });
  assert.deepEqual(await put('k', '2', 'two'), { status: 409, body: fenced('k', 'reject', 'STALE_TOKEN', '2', '3', '3') });
  assert.deepEqual(await put('race', '19', 'x'), { status: 409, body: fenced('race', 'reject', 'STALE_TOKEN', '19', '20', '20') });
  assert.deepEqual(await put('k', '3', 'after restart'), { status: 200, body: fenced('k', 'accept', null, '3', '3', '3') });
  assert.deepEqual(await read('k'), { status: 200, body: { key: 'k', mark: '3', value: 'after restart' } });
});

test('signed tokens (FENCE_KEYS set): only fg1 tokens minted for this key move the mark; forged numbers, other keys\' tokens and bad signatures are 403', async () => {
  const { Miniflare } = await import(join(root, 'node_modules/miniflare/dist/src/index.js'));
  const { mintToken } = await import(join(project, 'node_modules/fencegate/node.mjs'));
  const secret = new Uint8Array(32).map((_, i) => i * 7 + 1);
  const FENCE_KEYS = JSON.stringify({ 'k-1': Buffer.from(secret).toString('base64url') });
  signedMf = new Miniflare(miniflareOptions(join(persist, 'signed'), { FENCE_KEYS }));
  const sbase = String(await signedMf.ready);
  const mint = (scope, epoch, hmac = secret) => mintToken({ scope, epoch, leaseId: `${scope}#${epoch}`, generation: 1 }, { kid: 'k-1', hmac });
  const send = (token, body) => request(sbase, 'PUT', '/resources/doc', { headers: token === undefined ? {} : { 'Fencing-Token': token }, body });
  const t3 = mint('doc', 3);
  assert.deepEqual(await send(t3, 'three'), { status: 200, body: fenced('doc', 'advance', null, '3', '0', '3') });
  assert.deepEqual(await send(mint('doc', 2), 'two'), { status: 409, body: fenced('doc', 'reject', 'STALE_TOKEN', '2', '3', '3') });
  const refused = [
    ['18446744073709551615', 'UNSIGNED_TOKEN'], // a made-up huge number
    [mint('other', 9), 'WRONG_SCOPE'],
    [mint('doc', 9, new Uint8Array(32).fill(1)), 'BAD_SIGNATURE'],
    [t3.slice(0, -2) + (t3.endsWith('AA') ? 'AQ' : 'AA'), 'BAD_SIGNATURE'],
    ['fg1.garbage', 'MALFORMED_TOKEN'],
    [undefined, 'MISSING_TOKEN'],
  ];
  const status = { MALFORMED_TOKEN: 400, MISSING_TOKEN: 428 };
  for (const [token, code] of refused) {
    const r = await send(token, 'x');
    assert.deepEqual([r.status, r.body.status, r.body.code, r.body.mark], [status[code] ?? 403, status[code] ?? 403, code, '3'], `${token}: ${JSON.stringify(r.body)}`);
  }
  assert.deepEqual(await request(sbase, 'GET', '/resources/doc'), { status: 200, body: { key: 'doc', mark: '3', value: 'three' } });
  assert.deepEqual(await send(mint('doc', 4), 'four'), { status: 200, body: fenced('doc', 'advance', null, '4', '3', '4') });
});

test('`wrangler dev` accepts the example\'s wrangler.jsonc and serves it (local workerd)', { timeout: 120_000 }, async () => {
  const port = await freePort();
  const state = join(persist, 'wrangler-dev');
  dev = spawn(wrangler, ['dev', '--ip', '127.0.0.1', '--port', String(port), '--persist-to', state], {
    cwd: project, env: quietEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  dev.stdout.on('data', (c) => (log += c));
  dev.stderr.on('data', (c) => (log += c));
  const devBase = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await request(devBase, 'GET', '/resources/w')).status === 200, 60_000, `wrangler dev\n${log}`);
  const send = (token, body) => request(devBase, 'PUT', '/resources/w', { headers: { 'Fencing-Token': token }, body });
  assert.deepEqual(await send('3', 'three'), { status: 200, body: fenced('w', 'advance', null, '3', '0', '3') });
  assert.deepEqual(await send('2', 'two'), { status: 409, body: fenced('w', 'reject', 'STALE_TOKEN', '2', '3', '3') });
  assert.deepEqual(await send('03', 'x'), { status: 400, body: fenced('w', 'reject', 'MALFORMED_TOKEN', '03', '3', '3') });
  assert.deepEqual(await request(devBase, 'GET', '/resources/w'), { status: 200, body: { key: 'w', mark: '3', value: 'three' } });
  await stopGroup(dev);
});
