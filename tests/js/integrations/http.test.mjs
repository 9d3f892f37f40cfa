// fencegate/http (issue 18): headers, the status mapping of every code, RFC 9457
// problem bodies, store failures (503 + Retry-After, COMMIT_UNKNOWN retried
// safely with the same token and op id), signed-token refusals, and the
// CommonJS copy. Against the built package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { MemoryGate, Gate, MemoryHostStore, FencegateError, errorCodes, mintToken } from '../../../pkg/node.mjs';
import * as http from '../../../pkg/integrations/http.mjs';

const require = createRequire(import.meta.url);
const { fence, fenceReply, readFencing, statusFor, verdictReply, errorReply, tokenProblemReply } = http;

const put = (headers = {}) => new Request('http://h/r/k', { method: 'PUT', headers, body: 'v' });
async function answer(response) {
  return { status: response.status, type: response.headers.get('content-type'), retryAfter: response.headers.get('retry-after'), body: await response.json() };
}
const problem = (status, code, title, detail, token, markBefore, mark, key = 'k') => ({
  type: `urn:fencegate:problem:${code.toLowerCase().replaceAll('_', '-')}`, title, status, detail, code, key, outcome: 'reject', token, markBefore, mark,
});

test('statusFor: every stable code has its documented status (docs/http.md)', () => {
  const expected = {
    MISSING_TOKEN: 428, MALFORMED_TOKEN: 400, STALE_TOKEN: 409, SAME_EPOCH_REJECTED: 409, CORRUPT_STATE: 500,
    STORE_ERROR: 503, COMMIT_CONFLICT: 503, COMMIT_UNKNOWN: 503, LEASE_HELD: 409, LEASE_EXPIRED: 409,
    EPOCH_OVERFLOW: 500, BAD_SIGNATURE: 403, WRONG_SCOPE: 403, INVALID_ARGUMENT: 400, NOT_INITIALIZED: 500,
    UNKNOWN_KEY: 403, KEY_RETIRED: 403, UNSIGNED_TOKEN: 403, EPOCH_JUMP_TOO_LARGE: 409, FUTURE_EPOCH: 409,
    EPOCH_CONFLICT: 409, OP_ID_EXPIRED: 409, QUARANTINED: 409, OP_ID_REUSED: 422, LEASE_NOT_HELD: 409, REQUEST_ID_REUSED: 422,
    CALLBACK_FAILED: 500, DUPLICATE_OPERATION: 409, GUARD_REFUSED: 500,
  };
  assert.deepEqual(Object.fromEntries(errorCodes().map((c) => [c, statusFor(c)])), expected);
  assert.equal(statusFor(null), 200);
  assert.equal(statusFor('SOMETHING_NEW'), 500);
});

test('readFencing: the token header → what the gate gets; Fetch Headers, Request and Node header objects', () => {
  const max = 18446744073709551615n;
  const cases = [
    [{}, { token: undefined, header: null, problem: 'MISSING_TOKEN' }],
    [{ 'fencing-token': '' }, { token: '', header: '', problem: 'MALFORMED_TOKEN' }],
    [{ 'fencing-token': '007' }, { token: '007', header: '007', problem: 'MALFORMED_TOKEN' }],
    [{ 'fencing-token': '3, 4' }, { token: '3, 4', header: '3, 4', problem: 'MALFORMED_TOKEN' }],
    [{ 'fencing-token': '18446744073709551616' }, { token: '18446744073709551616', header: '18446744073709551616', problem: 'MALFORMED_TOKEN' }],
    [{ 'fencing-token': '7' }, { token: 7, header: '7', problem: null }],
    [{ 'fencing-token': String(max) }, { token: max, header: String(max), problem: null }],
    [{ 'fencing-token': 'fg1.abc' }, { token: 'fg1.abc', header: 'fg1.abc', problem: null }],
  ];
  for (const [h, want] of cases) {
    assert.deepEqual(readFencing(new Headers(h)), { ...want, options: {} }, JSON.stringify(h));
    assert.deepEqual(readFencing(put(h)), { ...want, options: {} }, JSON.stringify(h));
    assert.deepEqual(readFencing(h), { ...want, options: {} }, JSON.stringify(h));
  }
  // Node joins a repeated unknown header with ", "; an array value is joined the same way
  assert.equal(readFencing({ 'fencing-token': ['3', '4'] }).problem, 'MALFORMED_TOKEN');
  assert.deepEqual(readFencing({ 'fencing-token': '5', 'fencing-op-id': 'r-1', 'fencing-holder': 'node-a' }).options, { opId: 'r-1', holder: 'node-a' });
  assert.deepEqual(readFencing({ 'x-epoch': '5', 'x-op': 'o' }, { token: 'X-Epoch', opId: 'X-Op' }), { token: 5, header: '5', problem: null, options: { opId: 'o' } });
});

test('readFencing: op-id and holder headers are validated (visible ASCII, no comma, 1..128 / 1..256)', () => {
  assert.equal(readFencing({ 'fencing-token': '1', 'fencing-op-id': 'x'.repeat(128) }).options.opId.length, 128);
  assert.equal(readFencing({ 'fencing-token': '1', 'fencing-holder': 'h'.repeat(256) }).options.holder.length, 256);
  const bad = [
    ['fencing-op-id', 'Fencing-Op-Id', ''], ['fencing-op-id', 'Fencing-Op-Id', 'a,b'], ['fencing-op-id', 'Fencing-Op-Id', 'a b'],
    ['fencing-op-id', 'Fencing-Op-Id', 'x'.repeat(129)], ['fencing-op-id', 'Fencing-Op-Id', '\u00e9'],
    ['fencing-holder', 'Fencing-Holder', ''], ['fencing-holder', 'Fencing-Holder', 'h'.repeat(257)], ['fencing-holder', 'Fencing-Holder', 'a\tb'],
  ];
  for (const [lower, name, value] of bad) {
    assert.throws(() => readFencing({ 'fencing-token': '1', [lower]: value }), (e) => {
      assert.ok(e instanceof FencegateError);
      assert.deepEqual([e.code, e.header, e.value], ['INVALID_ARGUMENT', name, value]);
      return true;
    }, `${name}: ${JSON.stringify(value)}`);
  }
});

test('fence on a MemoryGate: every refusal is a verdict with the mark, and a problem body', async () => {
  const gate = new MemoryGate({ opWindow: 1 });
  const send = (headers) => fence(put(headers), 'k', (t, o) => gate.write('k', t, 'v', o)).then(answer);
  assert.deepEqual(await send({ 'fencing-token': '5', 'fencing-holder': 'a' }), {
    status: 200, type: 'application/json', retryAfter: null, body: { key: 'k', outcome: 'advance', code: null, token: '5', markBefore: '0', mark: '5' },
  });
  const P = 'application/problem+json';
  assert.deepEqual(await send({}), { status: 428, type: P, retryAfter: null, body: problem(428, 'MISSING_TOKEN', 'Fencing token required', "send the owner's fencing token in the Fencing-Token header; the resource's mark is 5", null, '5', '5') });
  assert.deepEqual(await send({ 'fencing-token': '007' }), { status: 400, type: P, retryAfter: null, body: problem(400, 'MALFORMED_TOKEN', 'Malformed fencing token', 'the Fencing-Token header must be a canonical decimal epoch 1..18446744073709551615 (no sign, leading zero, space, fraction or exponent) or a signed fg1 token', '007', '5', '5') });
  assert.deepEqual(await send({ 'fencing-token': '4' }), { status: 409, type: P, retryAfter: null, body: problem(409, 'STALE_TOKEN', 'Stale fencing token', "epoch 4 is below the resource's mark 5: a newer owner has written; acquire a new lease", '4', '5', '5') });
  assert.deepEqual(await send({ 'fencing-token': '5', 'fencing-holder': 'b' }), { status: 409, type: P, retryAfter: null, body: problem(409, 'EPOCH_CONFLICT', 'Epoch held by another holder', 'epoch 5 is bound to another holder: one epoch was handed to two owners (an issuer restore or bug)', '5', '5', '5') });
  // op ids: a retry is a duplicate (200); an id pushed out of the window (opWindow 1) is OP_ID_EXPIRED
  assert.equal((await send({ 'fencing-token': '5', 'fencing-op-id': 'a' })).body.outcome, 'accept');
  assert.deepEqual((await send({ 'fencing-token': '5', 'fencing-op-id': 'a' })).body, { key: 'k', outcome: 'duplicate', code: null, token: '5', markBefore: '5', mark: '5', original: 'accept' });
  assert.equal((await send({ 'fencing-token': '5', 'fencing-op-id': 'b' })).body.outcome, 'accept');
  assert.deepEqual(await send({ 'fencing-token': '5', 'fencing-op-id': 'a' }), { status: 409, type: P, retryAfter: null, body: problem(409, 'OP_ID_EXPIRED', 'Operation id expired', 'the operation id fell out of the de-duplication window and may already be applied: read the resource, then retry under a new id if needed', '5', '5', '5') });
  gate.quarantine('k', 9);
  assert.deepEqual(await send({ 'fencing-token': '9' }), { status: 409, type: P, retryAfter: null, body: problem(409, 'QUARANTINED', 'Resource quarantined', 'the resource is quarantined at 9: establish a fresh epoch above it first', '9', '9', '9') });
  assert.deepEqual(gate.counters().codes, { MISSING_TOKEN: 1, MALFORMED_TOKEN: 1, STALE_TOKEN: 1, EPOCH_CONFLICT: 1, OP_ID_EXPIRED: 1, QUARANTINED: 1 });
  assert.deepEqual(gate.read('k'), { mark: 9, value: 'v', hasValue: true });

  const strict = new MemoryGate({ sameEpoch: 'strict' });
  strict.write('k', 2, 'x');
  const same = await fence(put({ 'fencing-token': '2' }), 'k', (t, o) => strict.write('k', t, 'y', o)).then(answer);
  assert.deepEqual(same.body, problem(409, 'SAME_EPOCH_REJECTED', 'Fencing token already used', 'epoch 2 equals the mark and this resource requires a larger token for every operation', '2', '2', '2'));
  const within = new MemoryGate({ higherEpoch: { mode: 'adopt-within', maxJump: 10 } });
  const jump = await fence(put({ 'fencing-token': '11' }), 'k', (t, o) => within.write('k', t, 'y', o)).then(answer);
  assert.deepEqual(jump.body, problem(409, 'EPOCH_JUMP_TOO_LARGE', 'Fencing token too far ahead', 'epoch 11 is further above the mark 0 than this resource allows', '11', '0', '0'));
  const future = new MemoryGate({ higherEpoch: { mode: 'reject-future', ceiling: 3 } });
  const fut = await fence(put({ 'fencing-token': '4' }), 'k', (t, o) => future.write('k', t, 'y', o)).then(answer);
  assert.deepEqual(fut.body, problem(409, 'FUTURE_EPOCH', 'Fencing token from the future', 'epoch 4 is above what this resource knows was issued', '4', '0', '0'));
});

test('signed tokens: refusals are 403; a valid fg1 token is 200 with its epoch', async () => {
  const secret = new Uint8Array(32).fill(7);
  const gate = new MemoryGate({ requireSigned: true, keys: { k1: secret } });
  const send = (token) => fence(put({ 'fencing-token': token }), 'doc', (t, o) => gate.write('doc', t, 'v', o)).then(answer);
  const mint = (scope, epoch, hmac = secret) => mintToken({ scope, epoch }, { kid: 'k1', hmac });
  assert.deepEqual((await send(mint('doc', 3))).body, { key: 'doc', outcome: 'advance', code: null, token: '3', markBefore: '0', mark: '3' });
  for (const [token, code, title] of [
    ['4', 'UNSIGNED_TOKEN', 'Signed fencing token required'],
    [mint('other', 4), 'WRONG_SCOPE', 'Fencing token issued for another scope'],
    [mint('doc', 4, new Uint8Array(32).fill(1)), 'BAD_SIGNATURE', 'Fencing token signature does not verify'],
    [mintToken({ scope: 'doc', epoch: 4 }, { kid: 'k9', hmac: secret }), 'UNKNOWN_KEY', 'Fencing token signed with an unknown key'],
  ]) {
    const a = await send(token);
    assert.deepEqual([a.status, a.body.status, a.body.code, a.body.title, a.body.mark, a.body.detail], [403, 403, code, title, '3', `the fencing token was refused (${code}); nothing changed`], code);
  }
  assert.equal((await send('fg1.garbage')).status, 400);
  assert.equal(gate.mark('doc'), 3);
});

/** A compare-and-set store over MemoryHostStore whose commit can be made to fail. */
function flakyStore() {
  const inner = new MemoryHostStore();
  const s = {
    mode: 'ok',
    load: (key) => (s.mode === 'load-throws' ? (() => { throw new Error('disk on fire'); })() : inner.load(key)),
    commit: (key, expected, next, change) => {
      if (s.mode === 'conflict') return false;
      const done = inner.commit(key, expected, next, change);
      if (s.mode === 'unknown') throw Object.assign(new Error('connection lost after sending COMMIT'), { commitUnknown: true });
      return done;
    },
  };
  return s;
}

test('store failures: STORE_ERROR and COMMIT_CONFLICT are 503 + Retry-After; COMMIT_UNKNOWN is 503 and the retry with the same token and op id is applied once', async () => {
  const store = flakyStore();
  const gate = new Gate(store, { maxRetries: 2 });
  const send = (headers, options) => fence(put(headers), 'k', (t, o) => gate.write('k', t, 'v', o), options).then(answer);
  const P = 'application/problem+json';
  const err = (status, code, title, detail) => ({ type: `urn:fencegate:problem:${code.toLowerCase().replaceAll('_', '-')}`, title, status, detail, code, key: 'k', mark: null });

  store.mode = 'load-throws';
  assert.deepEqual(await send({ 'fencing-token': '1' }), { status: 503, type: P, retryAfter: '1', body: err(503, 'STORE_ERROR', 'Storage unavailable', 'nothing was written; retry the same request') });
  store.mode = 'conflict';
  assert.deepEqual(await send({ 'fencing-token': '1' }, { retryAfter: 7 }), { status: 503, type: P, retryAfter: '7', body: err(503, 'COMMIT_CONFLICT', 'Too much contention on this resource', 'nothing was written; retry the same request') });
  store.mode = 'unknown';
  const h = { 'fencing-token': '1', 'fencing-op-id': 'op-1' };
  assert.deepEqual(await send(h), {
    status: 503, type: P, retryAfter: '1',
    body: err(503, 'COMMIT_UNKNOWN', 'Commit outcome unknown', 'the store did not confirm the commit; it may have landed. Retry the same request with the same Fencing-Token and Fencing-Op-Id: with an op id it is applied at most once'),
  });
  store.mode = 'ok';
  assert.deepEqual((await send(h)).body, { key: 'k', outcome: 'duplicate', code: null, token: '1', markBefore: '1', mark: '1', original: 'advance' });
  assert.deepEqual(await gate.read('k'), { mark: 1, value: 'v', hasValue: true });
});

test('CORRUPT_STATE is 500 without Retry-After; the type base is configurable; other errors are rethrown', async () => {
  const gate = new Gate({ load: () => ({ state: '{"v":1,"mark":"041"}', version: 1 }), commit: () => true });
  const a = await fence(put({ 'fencing-token': '1' }), 'k', (t, o) => gate.write('k', t, 'v', o), { typeBase: 'https://docs.example/problems/' }).then(answer);
  assert.deepEqual(a, {
    status: 500, type: 'application/problem+json', retryAfter: null,
    body: { type: 'https://docs.example/problems/corrupt-state', title: 'Stored fence state is corrupt', status: 500, detail: 'the server could not complete the fenced operation; nothing is known to have changed', code: 'CORRUPT_STATE', key: 'k', mark: null },
  });
  await assert.rejects(fence(put({ 'fencing-token': '1' }), 'k', () => { throw new TypeError('a bug'); }), TypeError);
  assert.equal(errorReply(new Error('x')), null);
});

test('the neutral replies: verdictReply, tokenProblemReply, fenceReply on Node-style headers', async () => {
  const v = { key: 'k', ok: true, outcome: 'advance', code: null, token: 18446744073709551615n, markBefore: 0, markAfter: 18446744073709551615n };
  assert.deepEqual(verdictReply(v), { status: 200, headers: { 'content-type': 'application/json' }, body: { key: 'k', outcome: 'advance', code: null, token: '18446744073709551615', markBefore: '0', mark: '18446744073709551615' } });
  const input = readFencing({});
  assert.deepEqual(tokenProblemReply('k', input, 3).body, problem(428, 'MISSING_TOKEN', 'Fencing token required', "send the owner's fencing token in the Fencing-Token header; the resource's mark is 3", null, '3', '3'));
  const gate = new MemoryGate();
  const r = await fenceReply({ 'fencing-token': '2' }, 'k', (t, o) => gate.establish('k', t, o));
  assert.deepEqual(r, { status: 200, headers: { 'content-type': 'application/json' }, body: { key: 'k', outcome: 'advance', code: null, token: '2', markBefore: '0', mark: '2' } });
});

test('CommonJS: require("fencegate/http") shares the core with require("fencegate")', async () => {
  const cjs = require('../../../pkg/dist/integrations/http.cjs');
  const core = require('../../../pkg/node.cjs');
  assert.deepEqual(Object.keys(cjs).sort(), Object.keys(http).sort());
  const gate = new core.MemoryGate();
  const r = await cjs.fenceReply({ 'fencing-token': '3' }, 'k', (t, o) => gate.write('k', t, 'v', o));
  assert.deepEqual([r.status, r.body.mark], [200, '3']);
  assert.throws(() => cjs.readFencing({ 'fencing-op-id': '' }), core.FencegateError);
  const hono = require('../../../pkg/dist/integrations/hono.cjs');
  const express = require('../../../pkg/dist/integrations/express.cjs');
  assert.deepEqual([Object.keys(hono).sort(), Object.keys(express).sort()], [['fenced', 'fencing'], ['fenced', 'fencing']]);
});
