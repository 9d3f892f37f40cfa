// examples/node-service over real HTTP on loopback: the example's own files in a
// scratch project with the packed npm tarball, the server a child process on a
// SQLite file; two holder clients, one really stopped (SIGSTOP) past its lease.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { root, scratchProject, request as rawRequest, stopGroup, waitFor, fencedBody as fenced, withoutDetail, twentyRacingWrites } from './helpers.mjs';

// every answer with a problem body's prose `detail` taken out (checked to be there)
const request = async (...args) => withoutDetail(await rawRequest(...args));

const example = join(root, 'examples/node-service');
let project;
let server;
let base;
const children = new Set();

/** Starts `node server.mjs data.db` on a free port; resolves to its URL. */
async function startServer() {
  server = spawn(process.execPath, ['server.mjs', 'data.db'], {
    cwd: project, env: { ...process.env, PORT: '0' }, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(server);
  let out = '';
  server.stdout.on('data', (c) => (out += c));
  server.stderr.on('data', (c) => (out += c));
  base = await waitFor(() => out.match(/listening on (http:\S+)/)?.[1], 15_000, `the server to listen\n${out}`);
}

/** Starts holder.mjs; `events` fills with its JSON lines as they arrive; `onEvent` sees each at once. */
function startHolder(args, onEvent = () => {}) {
  const child = spawn(process.execPath, ['holder.mjs', '--url', base, ...args], { cwd: project, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const events = [];
  let buf = '';
  let err = '';
  child.stdout.on('data', (c) => {
    buf += c;
    for (let nl; (nl = buf.indexOf('\n')) >= 0; buf = buf.slice(nl + 1)) {
      const e = JSON.parse(buf.slice(0, nl));
      events.push(e);
      onEvent(e, child);
    }
  });
  child.stderr.on('data', (c) => (err += c));
  const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal, err })));
  return { child, events, exited };
}

/** The process state letter from /proc (T = stopped). */
const procState = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '')[0];

before(async () => {
  project = scratchProject('node-service-');
  for (const f of ['server.mjs', 'holder.mjs']) cpSync(join(example, f), join(project, f));
  await startServer();
});

after(async () => {
  for (const c of children) await stopGroup(c);
  if (project) rmSync(project, { recursive: true, force: true });
});

const put = (key, token, value) =>
  request(base, 'PUT', `/kv/${key}`, { headers: token === undefined ? {} : { 'Fencing-Token': token }, body: JSON.stringify(value) });
const read = (key) => request(base, 'GET', `/kv/${key}`);

test('issue 8 cases over HTTP: mark 3; "3" accepts; "2" is 409 STALE_TOKEN; "03", "3.0", "" are 400, no header 428; nothing changes on refusal', async () => {
  assert.deepEqual(await put('k', '3', 'v3'), { status: 200, body: fenced('k', 'advance', null, '3', '0', '3') });
  assert.deepEqual(await put('k', '3', { n: 3 }), { status: 200, body: fenced('k', 'accept', null, '3', '3', '3') });
  const kept = { status: 200, body: { key: 'k', mark: '3', value: { n: 3 } } };
  assert.deepEqual(await read('k'), kept);
  assert.deepEqual(await put('k', '2', 'two'), { status: 409, body: fenced('k', 'reject', 'STALE_TOKEN', '2', '3', '3') });
  assert.deepEqual(await read('k'), kept);
  for (const bad of ['03', '3.0', '', '+3', '3e0', '0', '18446744073709551616']) {
    assert.deepEqual(await put('k', bad, 'bad'), { status: 400, body: fenced('k', 'reject', 'MALFORMED_TOKEN', bad, '3', '3') }, JSON.stringify(bad));
    assert.deepEqual(await read('k'), kept);
  }
  assert.deepEqual(await put('k', undefined, 'none'), { status: 428, body: fenced('k', 'reject', 'MISSING_TOKEN', null, '3', '3') });
  assert.deepEqual(await request(base, 'DELETE', '/kv/k', { headers: { 'Fencing-Token': '2' } }), { status: 409, body: fenced('k', 'reject', 'STALE_TOKEN', '2', '3', '3') });
  assert.deepEqual(await read('k'), kept);
  const max = '18446744073709551615';
  assert.deepEqual(await put('k', max, 'max'), { status: 200, body: fenced('k', 'advance', null, max, '3', max) });
  assert.deepEqual(await put('k', '18446744073709551614', 'x'), { status: 409, body: fenced('k', 'reject', 'STALE_TOKEN', '18446744073709551614', max, max) });
});

test('leases: acquire grants epoch 1, a second holder gets 409 LEASE_HELD, renew keeps the epoch, release frees, the next acquire is epoch 2', async () => {
  const post = (path, json) => request(base, 'POST', path, { headers: { 'content-type': 'application/json' }, body: JSON.stringify(json) });
  const a = await post('/leases/orders', { holder: 'A', ttlMs: 60_000, requestId: 'a-1' });
  assert.equal(a.status, 200);
  assert.deepEqual([a.body.ok, a.body.epoch, a.body.holder], [true, '1', 'A']);
  assert.match(a.body.leaseId, /^1\.[A-Za-z0-9_-]{30}$/);
  const again = await post('/leases/orders', { holder: 'A', ttlMs: 60_000, requestId: 'a-1' }); // a retried request
  assert.deepEqual([again.status, again.body.epoch, again.body.replayed], [200, '1', true]);
  const b = await post('/leases/orders', { holder: 'B', ttlMs: 60_000 });
  assert.deepEqual([b.status, b.body.code, b.body.holder, b.body.epoch], [409, 'LEASE_HELD', 'A', '1']);
  // Only A, with its lease id, renews or releases (issue 20): a guessed id or B's name is 409 LEASE_NOT_HELD.
  for (const body of [{ leaseId: 'orders#1', holder: 'A' }, { leaseId: a.body.leaseId, holder: 'B' }]) {
    const refused = await post('/leases/orders/renew', { ...body, ttlMs: 60_000 });
    assert.deepEqual([refused.status, refused.body], [409, { ok: false, code: 'LEASE_NOT_HELD', scope: 'orders' }]);
    assert.deepEqual((await post('/leases/orders/release', body)).status, 409);
  }
  const r = await post('/leases/orders/renew', { leaseId: a.body.leaseId, holder: 'A', ttlMs: 60_000 });
  assert.deepEqual([r.status, r.body.epoch], [200, '1']);
  assert.deepEqual((await post('/leases/orders/release', { leaseId: a.body.leaseId, holder: 'A' })).body.released, true);
  const b2 = await post('/leases/orders', { holder: 'B', ttlMs: 60_000 });
  assert.deepEqual([b2.status, b2.body.epoch], [200, '2']);
  assert.notEqual(b2.body.leaseId, a.body.leaseId);
  const late = await post('/leases/orders/renew', { leaseId: a.body.leaseId, holder: 'A', ttlMs: 60_000 });
  assert.deepEqual([late.status, late.body.code], [409, 'LEASE_EXPIRED']);
  assert.deepEqual((await post('/leases/orders', { holder: 'B', ttlMs: 0 })).body.code, 'INVALID_ARGUMENT');
  assert.deepEqual((await post('/leases/orders', null)).body.code, 'BAD_JSON');
  const notJson = await request(base, 'POST', '/leases/orders', { body: '{holder' });
  assert.deepEqual([notJson.status, notJson.body.code], [400, 'BAD_JSON']);
  const badValue = await request(base, 'PUT', '/kv/orders', { headers: { 'Fencing-Token': '9' }, body: 'not json' });
  assert.deepEqual([badValue.status, badValue.body.code], [400, 'BAD_JSON']);
  assert.deepEqual(await read('orders'), { status: 200, body: { key: 'orders', mark: '0', value: null } });
});

test('two holders: A is stopped (SIGSTOP) past its lease, B takes over, A resumes (SIGCONT) and its late write is refused 409 STALE_TOKEN', { timeout: 90_000 }, async () => {
  // A acquires (lease 3 s), establishes, writes once, renews (the lease is half gone), and is
  // stopped the moment it reports its second piece of work (1.5 s long), before that write
  const a = startHolder(['--key', 'report', '--holder', 'A', '--ttl-ms', '3000', '--writes', '3', '--work-ms', '1500'], (e, child) => {
    if (e.event === 'working' && e.i === 2) process.kill(child.pid, 'SIGSTOP');
  });
  await waitFor(() => a.events.some((e) => e.event === 'working' && e.i === 2), 15_000, `A's second piece of work: ${JSON.stringify(a.events)}`);
  await waitFor(() => procState(a.child.pid) === 'T', 2000, 'A to be stopped');
  const acquired = a.events.find((e) => e.event === 'acquired');
  assert.deepEqual(a.events.map((e) => [e.event, e.status ?? null]), [['acquired', null], ['established', 200], ['working', null], ['write', 200], ['renewed', 200], ['working', null]]);
  assert.equal(acquired.epoch, '1');
  const leaseEnd = a.events.find((e) => e.event === 'renewed').expiresAt;

  // B waits out A's lease (server time), gets epoch 2, fences A out and writes
  const b = startHolder(['--key', 'report', '--holder', 'B', '--ttl-ms', '60000', '--writes', '1', '--work-ms', '0']);
  const bExit = await b.exited;
  assert.equal(bExit.code, 0, bExit.err);
  assert.ok(Date.now() >= leaseEnd, 'B got the key only after A\'s lease ended');
  assert.equal(procState(a.child.pid), 'T', 'A stayed stopped the whole time');
  const bAcq = b.events.find((e) => e.event === 'acquired');
  assert.equal(bAcq.epoch, '2');
  assert.deepEqual(b.events.filter((e) => e.event === 'write'), [{ event: 'write', i: 1, status: 200, code: null, token: '2', mark: '2' }]);
  const bValue = { status: 200, body: { key: 'report', mark: '2', value: { by: 'B', epoch: '2', i: 1 } } };
  assert.deepEqual(await read('report'), bValue);

  // A wakes up mid-work and sends the write it was about to send, with epoch 1
  process.kill(a.child.pid, 'SIGCONT');
  const aExit = await a.exited;
  assert.equal(aExit.code, 0, aExit.err);
  assert.deepEqual(a.events.slice(6), [
    { event: 'write', i: 2, status: 409, code: 'STALE_TOKEN', token: '1', mark: '2' },
    { event: 'fenced', mark: '2' },
  ]);
  assert.deepEqual(await read('report'), bValue, "B's value is intact");
});

test('20 concurrent writes with tokens 1..20 in random order: mark 20, token 20\'s value, a serial history', async () => {
  await twentyRacingWrites(put, read);
});

test('restart: the server process is stopped and started again on the same SQLite file; marks, values and epochs survive', async () => {
  await stopGroup(server);
  children.delete(server);
  await startServer();
  assert.deepEqual(await read('report'), { status: 200, body: { key: 'report', mark: '2', value: { by: 'B', epoch: '2', i: 1 } } });
  assert.deepEqual(await put('report', '1', 'zombie'), { status: 409, body: fenced('report', 'reject', 'STALE_TOKEN', '1', '2', '2') });
  const next = await request(base, 'POST', '/leases/report', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ holder: 'C', ttlMs: 1000 }) });
  assert.deepEqual([next.status, next.body.epoch], [200, '3']);
});
