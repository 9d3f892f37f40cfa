// The conformance cases every host store must pass. Each case takes an opened
// target (see targets.mjs) and throws an AssertionError when the store breaks
// the contract; conformance.test.mjs runs them against every target, and the
// lying host's test shows that they catch a store that ignores the version.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Gate as RealGate, FencegateError } from '../../../pkg/node.mjs';
import { uniqueKey } from './keys.mjs';

/** The `stateCache` every case's gate gets unless the case sets one (undefined: the Gate default). */
let stateCacheDefault;

/** Runs the cases with the state cache on (`undefined`: the default size) or off (`0`). */
export function setStateCache(n) {
  stateCacheDefault = n;
}

/** `Gate` with the suite's `stateCache` (conformance runs every case with the cache on and off). */
class Gate extends RealGate {
  constructor(store, options) {
    if (stateCacheDefault !== undefined && (options === undefined || (options !== null && typeof options === 'object' && !('stateCache' in options)))) {
      options = { ...options, stateCache: stateCacheDefault };
    }
    super(store, options);
  }
}

const BIG = 2n ** 53n + 1n; // not representable as a JS number
const MAX_U64 = 2n ** 64n - 1n;

function stateText(mark) {
  return `{"v":1,"mark":"${mark}"}`;
}

async function expectRead(gate, key, mark, value) {
  const r = await gate.read(key);
  assert.deepEqual(r, value === undefined ? { mark, value: undefined, hasValue: false } : { mark, value, hasValue: true });
}

function verdict(key, outcome, code, token, markBefore, markAfter) {
  return { key, ok: outcome !== 'reject', outcome, code, token, markBefore, markAfter };
}

/** `op()` answers exactly `expected` and leaves the stored bytes of `k` as they were. */
async function refusedUnwritten(t, k, op, expected) {
  const before = await t.raw(k);
  assert.deepEqual(await op(), expected);
  assert.deepEqual(await t.raw(k), before);
}

async function expectError(promise, code) {
  const e = await promise.then(
    (v) => assert.fail(`expected ${code}, got a verdict ${JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x))}`),
    (e) => e,
  );
  assert.ok(e instanceof FencegateError, `expected a FencegateError, got ${e}`);
  assert.equal(e.code, code, e.message);
  return e;
}

/** A store with the same callbacks as `store`, some replaced. */
export function wrap(store, overrides) {
  const w = {};
  for (const name of ['load', 'commit', 'transaction']) {
    if (typeof store[name] === 'function') w[name] = store[name].bind(store);
  }
  return Object.assign(w, overrides);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * JSON text of `value` with object members in another order: `'alphabetical'`
 * (PostgreSQL jsonb sorts shorter names first, then bytewise; serde_json and
 * many document stores sort), or `'integer-like first'` (a JS object: integer-
 * like names ascending, then the others; here reversed so that the order
 * differs from the writer's even where it has no integer-like names).
 */
function reserialise(value, order) {
  if (Array.isArray(value)) return `[${value.map((x) => reserialise(x, order)).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  let names = Object.keys(value);
  if (order === 'alphabetical') names.sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  else {
    const o = {};
    for (const n of names.reverse()) o[n] = value[n];
    names = Object.keys(o);
  }
  return `{${names.map((n) => `${JSON.stringify(n)}:${reserialise(value[n], order)}`).join(',')}}`;
}

/** The stored state as the host hands it back: reordered, in the form (text or object) it was stored in. */
function reordered(state, order) {
  if (state === null || state === undefined) return state;
  const text = reserialise(typeof state === 'string' ? JSON.parse(state) : state, order);
  return typeof state === 'string' ? text : JSON.parse(text);
}

/** A store whose state comes back with its members reordered (issue 13). */
function reordering(t, order) {
  if (t.shape === 'cas') {
    return wrap(t.store, {
      load: async (key) => {
        const r = await t.store.load(key);
        return r === null || r === undefined ? r : { ...r, state: reordered(r.state, order) };
      },
    });
  }
  return wrap(t.store, {
    transaction: (key, fn) => t.store.transaction(key, (state) => fn(reordered(state, order))),
    load: async (key) => {
      const r = await t.store.load(key);
      return r === null || r === undefined ? r : { ...r, state: reordered(r.state, order) };
    },
  });
}

/** A string of exactly `bytes` UTF-8 bytes that starts with `prefix` (ASCII) and mixes 1- to 4-byte characters. */
export function keyOfBytes(prefix, bytes) {
  let k = prefix;
  const len = () => Buffer.byteLength(k, 'utf8');
  for (const ch of ['𝄞', '€', 'é']) while (len() + Buffer.byteLength(ch) <= bytes - 8) k += ch;
  while (len() < bytes) k += 'x';
  assert.equal(len(), bytes);
  return k;
}

/** A format-2 text with an evicted-id filter, as written before format 4 (tests/fixtures/state-v1-v3.json). */
const V2_WINDOW_3 = JSON.parse(readFileSync(new URL('../../fixtures/state-v1-v3.json', import.meta.url), 'utf8')).cases.find(
  (c) => c.name === 'v2 window 3 with a filter',
).text;

export const CASES = {
  /** advance / accept / stale / missing / malformed, exact mark and value after every step. */
  async 'advance, accept, stale, missing and malformed tokens, exact after every step'(t) {
    const gate = new Gate(t.store);
    const k = uniqueKey('basic');
    await expectRead(gate, k, 0, undefined);
    assert.deepEqual(await gate.write(k, 5, { n: 'a' }), verdict(k, 'advance', null, 5, 0, 5));
    await expectRead(gate, k, 5, { n: 'a' });
    assert.deepEqual(await gate.write(k, 5, { n: 'b' }), verdict(k, 'accept', null, 5, 5, 5));
    await expectRead(gate, k, 5, { n: 'b' });
    const before = await t.raw(k);
    assert.deepEqual(before, { state: stateText(5), value: '{"n":"b"}' });
    assert.deepEqual(await gate.write(k, 4, 'stale'), verdict(k, 'reject', 'STALE_TOKEN', 4, 5, 5));
    assert.deepEqual(await gate.write(k, undefined, 'x'), verdict(k, 'reject', 'MISSING_TOKEN', null, 5, 5));
    assert.deepEqual(await gate.write(k, null, 'x'), verdict(k, 'reject', 'MISSING_TOKEN', null, 5, 5));
    for (const bad of ['6', 6.5, 0, -0, -6, 2 ** 53, NaN, Infinity, true, {}, [6], 0n, -6n, 2n ** 64n]) {
      assert.deepEqual(await gate.write(k, bad, 'x'), verdict(k, 'reject', 'MALFORMED_TOKEN', null, 5, 5), String(bad));
      assert.deepEqual(await gate.establish(k, bad), verdict(k, 'reject', 'MALFORMED_TOKEN', null, 5, 5));
    }
    assert.deepEqual(await t.raw(k), before, 'rejections wrote nothing');
    // establish: the barrier raises the mark, the value stays
    assert.deepEqual(await gate.establish(k, 9), verdict(k, 'advance', null, 9, 5, 9));
    await expectRead(gate, k, 9, { n: 'b' });
    assert.deepEqual(await gate.write(k, 8, 'late'), verdict(k, 'reject', 'STALE_TOKEN', 8, 9, 9));
    assert.deepEqual(await gate.establish(k, 9), verdict(k, 'accept', null, 9, 9, 9));
    assert.deepEqual(await gate.write(k, 9n, 'nine'), verdict(k, 'accept', null, 9, 9, 9));
    await expectRead(gate, k, 9, 'nine');
    // a rejected first operation creates no record
    const fresh = uniqueKey('fresh');
    assert.deepEqual(await gate.write(fresh, 'x', 1), verdict(fresh, 'reject', 'MALFORMED_TOKEN', null, 0, 0));
    assert.deepEqual(await gate.establish(fresh, undefined), verdict(fresh, 'reject', 'MISSING_TOKEN', null, 0, 0));
    assert.equal(await t.raw(fresh), null);
    // an establish alone records the mark, no value
    assert.deepEqual(await gate.establish(fresh, 3), verdict(fresh, 'advance', null, 3, 0, 3));
    await expectRead(gate, fresh, 3, undefined);
    assert.deepEqual(await t.raw(fresh), { state: stateText(3), value: null });
  },

  async 'delete is fenced and keeps the fence record'(t) {
    const gate = new Gate(t.store);
    const k = uniqueKey('delete');
    await gate.write(k, 4, 'v4');
    assert.deepEqual(await gate.delete(k, 3), verdict(k, 'reject', 'STALE_TOKEN', 3, 4, 4));
    await expectRead(gate, k, 4, 'v4');
    assert.deepEqual(await gate.delete(k, undefined), verdict(k, 'reject', 'MISSING_TOKEN', null, 4, 4));
    assert.deepEqual(await gate.delete(k, 6), verdict(k, 'advance', null, 6, 4, 6));
    await expectRead(gate, k, 6, undefined);
    assert.deepEqual(await t.raw(k), { state: stateText(6), value: null });
    // the fence survives the data delete: an older epoch still cannot write
    assert.deepEqual(await gate.write(k, 5, 'zombie'), verdict(k, 'reject', 'STALE_TOKEN', 5, 6, 6));
    await expectRead(gate, k, 6, undefined);
    const k2 = uniqueKey('delete-many');
    await gate.write(k2, 9, 'v9');
    const vs = await gate.deleteMany([k, k2], 7);
    assert.deepEqual(vs, [verdict(k, 'advance', null, 7, 6, 7), verdict(k2, 'reject', 'STALE_TOKEN', 7, 9, 9)]);
    await expectRead(gate, k2, 9, 'v9');
  },

  async 'strict same-epoch policy'(t) {
    const gate = new Gate(t.store, { sameEpoch: 'strict' });
    const k = uniqueKey('strict');
    assert.deepEqual(await gate.write(k, 5, 'a'), verdict(k, 'advance', null, 5, 0, 5));
    assert.deepEqual(await gate.write(k, 5, 'b'), verdict(k, 'reject', 'SAME_EPOCH_REJECTED', 5, 5, 5));
    await expectRead(gate, k, 5, 'a');
    assert.deepEqual(await gate.establish(k, 5), verdict(k, 'accept', null, 5, 5, 5));
    assert.deepEqual(await gate.write(k, 6, 'c'), verdict(k, 'advance', null, 6, 5, 6));
    await expectRead(gate, k, 6, 'c');
  },

  async 'exact u64 marks above 2^53 survive the round trip'(t) {
    const gate = new Gate(t.store);
    const k = uniqueKey('u64');
    assert.deepEqual(await gate.write(k, BIG, 'big'), verdict(k, 'advance', null, BIG, 0, BIG));
    assert.deepEqual(await t.raw(k), { state: stateText(BIG), value: '"big"' });
    // 2^53 and 2^53+1 are the same float: only an exact comparison rejects it
    assert.deepEqual(await gate.write(k, BIG - 1n, 'x'), verdict(k, 'reject', 'STALE_TOKEN', BIG - 1n, BIG, BIG));
    assert.deepEqual(await gate.write(k, MAX_U64, 'max'), verdict(k, 'advance', null, MAX_U64, BIG, MAX_U64));
    assert.deepEqual(await gate.write(k, MAX_U64 - 1n, 'x'), verdict(k, 'reject', 'STALE_TOKEN', MAX_U64 - 1n, MAX_U64, MAX_U64));
    await expectRead(gate, k, MAX_U64, 'max');
    assert.deepEqual(await t.raw(k), { state: stateText(MAX_U64), value: '"max"' });
    // a new connection (a restart for SQLite) reads the exact mark back
    const again = new Gate(await t.reopen());
    await expectRead(again, k, MAX_U64, 'max');
    assert.deepEqual(await again.write(k, MAX_U64, 'same'), verdict(k, 'accept', null, MAX_U64, MAX_U64, MAX_U64));
  },

  async 'restart: a new gate on the same storage keeps the mark'(t) {
    const k = uniqueKey('restart');
    const gate = new Gate(t.store);
    assert.equal((await gate.write(k, 41, 'v41')).outcome, 'advance');
    const next = new Gate(await t.reopen());
    assert.deepEqual(await next.write(k, 40, 'old'), verdict(k, 'reject', 'STALE_TOKEN', 40, 41, 41));
    assert.deepEqual(await next.write(k, 41, 'again'), verdict(k, 'accept', null, 41, 41, 41));
    await expectRead(next, k, 41, 'again');
  },

  async 'stored mark as text compares exactly (100: 99 rejected, 101 advances)'(t) {
    const gate = new Gate(t.store);
    const k = uniqueKey('text');
    await t.putRaw(k, stateText(100), '"v100"');
    assert.deepEqual(await gate.write(k, 99, 'x'), verdict(k, 'reject', 'STALE_TOKEN', 99, 100, 100));
    assert.deepEqual(await t.raw(k), { state: stateText(100), value: '"v100"' });
    assert.deepEqual(await gate.write(k, 101, 'v101'), verdict(k, 'advance', null, 101, 100, 101));
    await expectRead(gate, k, 101, 'v101');
  },

  async 'corrupt stored state is CORRUPT_STATE and nothing is written'(t) {
    const gate = new Gate(t.store);
    for (const bad of ['{"v":2,"mark":"5"}', '{"v":1,"mark":5}', '{"v":1,"mark":"05"}', '{"v":1}', 'not json', '', '[]', 'null']) {
      const k = uniqueKey('corrupt');
      await t.putRaw(k, bad, '"old"');
      const before = await t.raw(k);
      const e = await expectError(gate.write(k, 10, 'new'), 'CORRUPT_STATE');
      assert.equal(e.key, k);
      await expectError(gate.establish(k, 10), 'CORRUPT_STATE');
      await expectError(gate.delete(k, 10), 'CORRUPT_STATE');
      await expectError(gate.read(k), 'CORRUPT_STATE');
      assert.deepEqual(await t.raw(k), before, `stored bytes untouched for ${JSON.stringify(bad)}`);
    }
  },

  /**
   * A stored value the store's codec cannot decode (a foreign writer's, another codec's): a write
   * replaces it without reading it, so the verdict is the state's alone, with the state cache on
   * or off (it differed: a cached write accepted, an uncached one failed its load); read is
   * STORE_ERROR. Only for the store adapters (their codec: `encodeValue`).
   */
  async 'a stored value the codec cannot decode: writes decided from the state alone, cache on or off; read is STORE_ERROR'(t) {
    if (typeof t.store.encodeValue !== 'function') return;
    for (const options of [{}, { stateCache: 0 }]) {
      const gate = new Gate(t.store, options);
      const k = uniqueKey('undecodable');
      await t.putRaw(k, stateText(5), '{not json');
      const e = await expectError(gate.read(k), 'STORE_ERROR');
      assert.equal(e.key, k);
      assert.deepEqual(await gate.write(k, 4, 'late'), verdict(k, 'reject', 'STALE_TOKEN', 4, 5, 5));
      assert.deepEqual(await t.raw(k), { state: stateText(5), value: '{not json' });
      assert.deepEqual(await gate.write(k, 5, 'now'), verdict(k, 'accept', null, 5, 5, 5));
      await expectRead(gate, k, 5, 'now');
      await t.putRaw(k, stateText(5), '{not json');
      assert.deepEqual(await gate.establish(k, 6), verdict(k, 'advance', null, 6, 5, 6));
      assert.deepEqual(await t.raw(k), { state: stateText(6), value: '{not json' });
    }
  },

  async 'a throwing callback is STORE_ERROR with its cause, and nothing is written'(t) {
    const k = uniqueKey('throws');
    await new Gate(t.store).write(k, 3, 'v3');
    const before = await t.raw(k);
    const boom = new Error('disk on fire');
    const badLoad = new Gate(wrap(t.store, { load: () => { throw boom; } }));
    let e = await expectError(badLoad.read(k), 'STORE_ERROR');
    assert.equal(e.cause, boom);
    if (t.shape === 'cas') {
      e = await expectError(badLoad.write(k, 4, 'x'), 'STORE_ERROR');
      assert.equal(e.cause, boom);
      const badCommit = new Gate(wrap(t.store, { commit: async () => { throw boom; } }));
      e = await expectError(badCommit.write(k, 4, 'x'), 'STORE_ERROR');
      assert.deepEqual([e.cause, e.callback, e.key], [boom, 'commit', k]);
    } else {
      const badTx = new Gate(wrap(t.store, { transaction: async () => { throw boom; } }));
      e = await expectError(badTx.write(k, 4, 'x'), 'STORE_ERROR');
      assert.deepEqual([e.cause, e.callback, e.key], [boom, 'transaction', k]);
      const lazyTx = new Gate(wrap(t.store, { transaction: () => undefined }));
      await expectError(lazyTx.write(k, 4, 'x'), 'STORE_ERROR');
    }
    assert.deepEqual(await t.raw(k), before);
  },

  async 'commit unknown is COMMIT_UNKNOWN, and retrying with the same token converges'(t) {
    const lost = Object.assign(new Error('reply lost'), { commitUnknown: true });
    const name = t.shape === 'cas' ? 'commit' : 'transaction';
    const real = t.store[name].bind(t.store);
    // 1. the commit landed, the reply was lost
    const k = uniqueKey('unknown');
    await new Gate(t.store).write(k, 2, 'v2');
    const landed = new Gate(wrap(t.store, { [name]: async (...a) => { await real(...a); throw lost; } }));
    const e = await expectError(landed.write(k, 3, 'v3'), 'COMMIT_UNKNOWN');
    assert.deepEqual([e.cause, e.key], [lost, k]);
    await expectRead(new Gate(t.store), k, 3, 'v3');
    assert.deepEqual(await new Gate(t.store).write(k, 3, 'v3'), verdict(k, 'accept', null, 3, 3, 3));
    await expectRead(new Gate(t.store), k, 3, 'v3');
    // 2. the commit never happened
    const k2 = uniqueKey('unknown');
    await new Gate(t.store).write(k2, 2, 'v2');
    const notLanded = new Gate(wrap(t.store, { [name]: async () => { throw lost; } }));
    await expectError(notLanded.write(k2, 3, 'v3'), 'COMMIT_UNKNOWN');
    await expectRead(new Gate(t.store), k2, 2, 'v2');
    assert.deepEqual(await new Gate(t.store).write(k2, 3, 'v3'), verdict(k2, 'advance', null, 3, 2, 3));
    await expectRead(new Gate(t.store), k2, 3, 'v3');
    // 3. no answer in time (commitTimeoutMs); the late commit lands, the retry accepts
    const k3 = uniqueKey('timeout');
    let late;
    const slow = new Gate(wrap(t.store, { [name]: (...a) => (late = sleep(150).then(() => real(...a))) }), { commitTimeoutMs: 20 });
    const te = await expectError(slow.write(k3, 7, 'v7'), 'COMMIT_UNKNOWN');
    assert.match(te.message, /no answer within 20 ms/);
    await late;
    assert.deepEqual(await new Gate(t.store).write(k3, 7, 'v7'), verdict(k3, 'accept', null, 7, 7, 7));
    await expectRead(new Gate(t.store), k3, 7, 'v7');
  },

  /** Issue 6: mark 4; write(5, op r1) advances; the reply is lost; the retry with r1 is a duplicate, applied once. */
  async 'op ids: a write retried after a lost reply is a duplicate and lands once'(t) {
    const lost = Object.assign(new Error('reply lost'), { commitUnknown: true });
    const name = t.shape === 'cas' ? 'commit' : 'transaction';
    const real = t.store[name].bind(t.store);
    let commits = 0;
    const counting = wrap(t.store, { [name]: async (...a) => { commits++; return real(...a); } });
    const gate = new Gate(counting);
    const k = uniqueKey('opid');
    assert.equal((await gate.establish(k, 4)).outcome, 'advance');
    const landed = new Gate(wrap(t.store, { [name]: async (...a) => { commits++; await real(...a); throw lost; } }));
    await expectError(landed.write(k, 5, 'v5', { opId: 'r1' }), 'COMMIT_UNKNOWN');
    const after = await t.raw(k);
    assert.deepEqual(after, { state: '{"v":4,"mark":"5","holder":null,"ops":[["r1","4"]],"evicted":null,"quarantine":null}', value: '"v5"' });
    const retry = await gate.write(k, 5, 'v5', { opId: 'r1' });
    assert.deepEqual(retry, { key: k, ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 5, markBefore: 5, markAfter: 5 });
    assert.deepEqual(await t.raw(k), after); // the duplicate wrote nothing
    // establish + the lost one; the retry never committed (compare-and-set: never
    // called commit; transaction: ran the host's transaction, whose fn returned null).
    assert.equal(commits, t.shape === 'cas' ? 2 : 3);
    // A second operation in the epoch accepts; its retry is a duplicate of an accept.
    assert.equal((await gate.write(k, 5, 'w', { opId: 'r2' })).outcome, 'accept');
    const r2 = await gate.write(k, 5, 'w2', { opId: 'r2' });
    assert.deepEqual([r2.outcome, r2.original], ['duplicate', 'accept']);
    await expectRead(gate, k, 5, 'w');
    // A new epoch clears the window.
    assert.equal((await gate.write(k, 6, 'x', { opId: 'r1' })).outcome, 'advance');
    assert.equal((await gate.write(k, 5, 'y', { opId: 'r3' })).code, 'STALE_TOKEN');
    await expectRead(gate, k, 6, 'x');
  },

  /** Issue 6: mark 5, window 3: a, b, c, d applied; a again is not applied as new. */
  async 'op ids: an id pushed out of the window is OP_ID_EXPIRED, not applied as new'(t) {
    const gate = new Gate(t.store, { opWindow: 3 });
    const k = uniqueKey('window');
    await gate.establish(k, 5);
    for (const id of ['a', 'b', 'c', 'd']) assert.equal((await gate.write(k, 5, id, { opId: id })).outcome, 'accept', id);
    await refusedUnwritten(t, k, () => gate.write(k, 5, 'again', { opId: 'a' }), verdict(k, 'reject', 'OP_ID_EXPIRED', 5, 5, 5));
    assert.equal((await gate.write(k, 5, 'again', { opId: 'b' })).outcome, 'duplicate');
    assert.equal((await gate.write(k, 5, 'e', { opId: 'e' })).outcome, 'accept');
    await expectRead(gate, k, 5, 'e');
  },

  /**
   * Issue 13: a host that hands the state back with its members reordered and
   * re-serialised (jsonb, a document store, a JS object) decides the same:
   * window order, holder binding, quarantine, and states of formats 2 and 3.
   */
  async 'a host that reorders the stored members decides the same (alphabetical, integer-like first)'(t) {
    for (const order of ['alphabetical', 'integer-like first']) {
      const store = reordering(t, order);
      const gate = new Gate(store, { opWindow: 2 });
      const k = uniqueKey('order');
      for (const [id, outcome] of [['z', 'advance'], ['1', 'accept'], ['y', 'accept']]) {
        assert.equal((await gate.write(k, 5, id, { opId: id })).outcome, outcome, `${order} ${id}`);
      }
      const before = await t.raw(k);
      assert.deepEqual(await gate.write(k, 5, 'again', { opId: '1' }), { ...verdict(k, 'duplicate', null, 5, 5, 5), original: 'accept' }, order);
      assert.deepEqual(await gate.write(k, 5, 'again', { opId: 'z' }), verdict(k, 'reject', 'OP_ID_EXPIRED', 5, 5, 5), order);
      assert.deepEqual(await t.raw(k), before);
      await expectRead(gate, k, 5, 'y');
      // The compare-and-set recipe's sequence with a holder (issue 13, jsonb).
      const h = uniqueKey('order-holder');
      const outcomes = [];
      for (const [token, opts] of [[7], [7], [8, { holder: 'node-a' }], [8, { holder: 'node-a' }], [7]]) {
        const v = await gate.write(h, token, `v${token}`, opts);
        outcomes.push(v.code ?? v.outcome);
      }
      assert.deepEqual(outcomes, ['advance', 'accept', 'advance', 'accept', 'STALE_TOKEN'], order);
      assert.deepEqual(await gate.write(h, 8, 'b', { holder: 'node-b' }), verdict(h, 'reject', 'EPOCH_CONFLICT', 8, 8, 8));
      assert.deepEqual(await gate.inspect(h), { key: h, exists: true, mark: 8, holder: 'node-a', quarantine: null });
      // Quarantine.
      const q = uniqueKey('order-quarantine');
      await gate.write(q, 3, 'v3', { opId: 'r1' });
      assert.equal((await gate.quarantine(q, 9)).changed, true);
      assert.deepEqual(await gate.write(q, 9, 'x'), verdict(q, 'reject', 'QUARANTINED', 9, 9, 9));
      assert.deepEqual(await gate.inspect(q), { key: q, exists: true, mark: 9, holder: null, quarantine: 9 });
      assert.deepEqual(await gate.write(q, 10, 'v10', { opId: 'r1' }), verdict(q, 'advance', null, 10, 9, 10));
      // A format-2 state with an evicted-id filter, written before format 4.
      const old = uniqueKey('order-v2');
      await t.putRaw(old, V2_WINDOW_3, '"d"');
      const legacy = new Gate(store, { opWindow: 3 });
      assert.deepEqual(await legacy.write(old, 5, 'x', { opId: 'a' }), verdict(old, 'reject', 'OP_ID_EXPIRED', 5, 5, 5));
      assert.equal((await legacy.write(old, 5, 'x', { opId: 'c' })).outcome, 'duplicate');
      assert.deepEqual(await legacy.write(old, 5, 'e', { opId: 'e' }), verdict(old, 'accept', null, 5, 5, 5));
      // A format-2 window is an object: a host that reordered it changed which
      // id is evicted next (here d instead of b when reversed), never whether
      // one is refused. From now on the window is an array.
      const [evicted, kept] = order === 'alphabetical' ? ['b', 'd'] : ['d', 'b'];
      const now = JSON.parse((await t.raw(old)).state);
      assert.deepEqual({ ...now, evicted: now.evicted.slice(0, 6) }, { v: 4, mark: '5', holder: null, ops: [['c', '5'], [kept, '5'], ['e', '5']], evicted: 'fnv1a:', quarantine: null });
      for (const id of ['a', evicted]) assert.deepEqual(await legacy.write(old, 5, 'x', { opId: id }), verdict(old, 'reject', 'OP_ID_EXPIRED', 5, 5, 5), id);
      for (const id of ['c', kept, 'e']) assert.equal((await legacy.write(old, 5, 'x', { opId: id })).outcome, 'duplicate', id);
      await expectRead(legacy, old, 5, 'e');
    }
  },

  /** Issue 13: one key limit, 512 UTF-8 bytes, for every store; a longer key is INVALID_ARGUMENT and never quoted whole. */
  async 'keys: 512 UTF-8 bytes are accepted, 513 are INVALID_ARGUMENT and nothing is written'(t) {
    const gate = new Gate(t.store);
    const prefix = uniqueKey('limit');
    const atLimit = keyOfBytes(prefix, 512);
    assert.deepEqual(await gate.write(atLimit, 5, 'v5', { opId: 'r1' }), verdict(atLimit, 'advance', null, 5, 0, 5));
    assert.deepEqual(await gate.write(atLimit, 5, 'v5', { opId: 'r1' }), { ...verdict(atLimit, 'duplicate', null, 5, 5, 5), original: 'advance' });
    await expectRead(gate, atLimit, 5, 'v5');
    assert.equal((await t.raw(atLimit)).value, '"v5"');
    for (const over of [keyOfBytes(prefix, 513), keyOfBytes(prefix, 8000), prefix + 'x'.repeat(8000)]) {
      const bytes = Buffer.byteLength(over, 'utf8');
      for (const call of [
        () => gate.write(over, 5, 'x'),
        () => gate.establish(over, 5),
        () => gate.delete(over, 5),
        () => gate.deleteMany([atLimit, over], 9),
        () => gate.read(over),
        () => gate.inspect(over),
        () => gate.quarantine(over, 5),
      ]) {
        const e = await expectError(call(), 'INVALID_ARGUMENT');
        assert.equal(e.keyBytes, bytes);
        assert.ok(e.message.length < 200, e.message);
        assert.ok(!e.message.includes(over.slice(0, 60)), 'the message cuts the key');
        assert.ok(over.startsWith(e.key.slice(0, -1)) && e.key.length <= 41, e.key);
      }
      assert.equal(await t.raw(over), null);
    }
    await expectRead(gate, atLimit, 5, 'v5'); // deleteMany checked every key before touching any
  },

  /** Issue 6: the same epoch from a different holder is EPOCH_CONFLICT and changes nothing. */
  async 'holder binding: one epoch presented by two holders is EPOCH_CONFLICT'(t) {
    const gate = new Gate(t.store);
    const k = uniqueKey('holder');
    assert.equal((await gate.establish(k, 41, { holder: 'A' })).outcome, 'advance');
    assert.equal((await gate.write(k, 41, 'from A', { holder: 'A' })).outcome, 'accept');
    await refusedUnwritten(t, k, () => gate.write(k, 41, 'from B', { holder: 'B' }), verdict(k, 'reject', 'EPOCH_CONFLICT', 41, 41, 41));
    assert.equal((await gate.write(k, 42, 'B, new epoch', { holder: 'B' })).outcome, 'advance');
    assert.equal((await gate.write(k, 41, 'A late', { holder: 'A' })).code, 'STALE_TOKEN');
    await expectRead(gate, k, 42, 'B, new epoch');
  },
};

/** Compare-and-set only: interleavings that a transaction shape serialises away. */
/**
 * Concurrent writers on one key, for every shape (a transaction store that reads
 * outside its transaction fails it): the verdicts must be those of SOME serial
 * order, i.e. the advances form one chain from 0 (each markBefore is the previous
 * markAfter), every other write is STALE_TOKEN against a larger mark, and the
 * largest token's value is what stays.
 */
export const RACE_CASES = {
  async 'concurrent writers: the advances form one chain, the rest are STALE_TOKEN, the largest wins'(t) {
    const gate = new Gate(t.store, { maxRetries: 64 });
    for (let round = 0; round < 3; round++) {
      const k = uniqueKey('race');
      const tokens = [3, 9, 1, 7, 12, 2, 8, 4, 11, 6, 5, 10].map((x) => x + round);
      // One Gate per writer, as separate processes: one Gate runs its own writes on a key one at a time.
      const vs = await Promise.all(tokens.map((tok) => new Gate(t.store, { maxRetries: 64 }).write(k, tok, `v${tok}`)));
      const advances = vs.filter((v) => v.outcome === 'advance').sort((a, b) => a.markAfter - b.markAfter);
      let mark = 0;
      for (const v of advances) {
        assert.equal(v.markBefore, mark, `advance to ${v.markAfter} started from ${v.markBefore}, the chain was at ${mark}`);
        mark = v.markAfter;
      }
      const max = Math.max(...tokens);
      assert.equal(mark, max);
      for (const v of vs.filter((x) => x.outcome !== 'advance')) {
        assert.deepEqual([v.outcome, v.code], ['reject', 'STALE_TOKEN']);
        assert.ok(v.markBefore > v.token && v.markBefore === v.markAfter);
      }
      await expectRead(gate, k, max, `v${max}`);
    }
  },
};

export const CAS_CASES = {
  async 'mark 5, writers 6 and 7 load 5, 7 commits first: 6 is rejected after reloading'(t) {
    const k = uniqueKey('race');
    await new Gate(t.store).write(k, 5, 'v5');
    const seven = new Gate(t.store);
    let loads = 0;
    const six = new Gate(
      wrap(t.store, {
        load: async (key) => {
          const r = await t.store.load(key);
          if (loads++ === 0) {
            assert.equal((await seven.write(k, 7, 'v7')).outcome, 'advance'); // 7 loads 5 too, and commits first
          }
          return r;
        },
      }),
    );
    assert.deepEqual(await six.write(k, 6, 'v6'), verdict(k, 'reject', 'STALE_TOKEN', 6, 7, 7));
    assert.equal(loads, 2, 'the 6-writer loaded again after its commit failed');
    await expectRead(new Gate(t.store), k, 7, 'v7');
    assert.deepEqual(await t.raw(k), { state: stateText(7), value: '"v7"' });
  },

  async 'mark 7, a 7-writer loaded, 9 advanced: the 7-writer stores nothing, later 8 is rejected'(t) {
    const k = uniqueKey('race');
    await new Gate(t.store).write(k, 7, 'v7');
    let loads = 0;
    const seven = new Gate(
      wrap(t.store, {
        load: async (key) => {
          const r = await t.store.load(key);
          if (loads++ === 0) assert.equal((await new Gate(t.store).write(k, 9, 'v9')).outcome, 'advance');
          return r;
        },
      }),
    );
    assert.deepEqual(await seven.write(k, 7, 'late7'), verdict(k, 'reject', 'STALE_TOKEN', 7, 9, 9));
    await expectRead(new Gate(t.store), k, 9, 'v9');
    assert.deepEqual(await new Gate(t.store).write(k, 8, 'v8'), verdict(k, 'reject', 'STALE_TOKEN', 8, 9, 9));
    assert.deepEqual(await t.raw(k), { state: stateText(9), value: '"v9"' });
  },

  async 'conflicts past maxRetries are COMMIT_CONFLICT; commit false is never success'(t) {
    const k = uniqueKey('conflict');
    await new Gate(t.store).write(k, 5, 'v5');
    let n = 0;
    const other = new Gate(t.store);
    const busy = new Gate(
      wrap(t.store, {
        load: async (key) => {
          const r = await t.store.load(key);
          await other.write(k, 5, `other-${++n}`); // same epoch, accepted: the version moves under us
          return r;
        },
      }),
      { maxRetries: 2 },
    );
    const e = await expectError(busy.write(k, 6, 'mine'), 'COMMIT_CONFLICT');
    assert.deepEqual([e.key, e.attempts, n], [k, 3, 3]);
    await expectRead(new Gate(t.store), k, 5, 'other-3');
    // a host whose commit answers false without an error: never reported as success
    const refusing = new Gate(wrap(t.store, { commit: async () => false }), { maxRetries: 0 });
    await expectError(refusing.write(k, 6, 'mine'), 'COMMIT_CONFLICT');
    // a commit answering neither true nor false may have written: COMMIT_UNKNOWN, never ok
    const vague = new Gate(wrap(t.store, { commit: async () => undefined }));
    await expectError(vague.write(k, 6, 'mine'), 'COMMIT_UNKNOWN');
    await expectRead(new Gate(t.store), k, 5, 'other-3');
  },
};

/**
 * A store that forwards every callback of `store` (commitFrom included) and
 * counts the calls: `{ load, commit, commitFrom, lost }` (`lost`: a commit or
 * commitFrom that answered false, a failed precondition).
 */
export function counting(store) {
  const n = { load: 0, commit: 0, commitFrom: 0, lost: 0 };
  const w = {
    load: async (key) => {
      n.load += 1;
      return store.load(key);
    },
    commit: async (...args) => {
      n.commit += 1;
      const ok = await store.commit(...args);
      if (ok === false) n.lost += 1;
      return ok;
    },
  };
  if (typeof store.encodeValue === 'function') w.encodeValue = (v) => store.encodeValue(v);
  if (typeof store.commitFrom === 'function') {
    w.commitFrom = async (...args) => {
      n.commitFrom += 1;
      const r = await store.commitFrom(...args);
      if (r === false) n.lost += 1;
      return r;
    };
  }
  return { store: w, n };
}

/** Whether a gate on `t.store` keeps a state cache in this run (the cache is on, and the store has commitFrom). */
function caching(t) {
  return stateCacheDefault !== 0 && typeof t.store.commitFrom === 'function';
}

/** Cases of the state cache (issue 14), for compare-and-set stores; with the cache off they pin the same verdicts. */
export const CACHE_CASES = {
  /** Another process advances the key between two writes of a cached gate: the second write is STALE_TOKEN, nothing stored. */
  async 'another writer advances the key between two writes of a cached gate: STALE_TOKEN, nothing stored'(t) {
    const c = counting(t.store);
    const gate = new Gate(c.store);
    const other = new Gate(t.store, { stateCache: 0 }); // "another process": its own gate, its own view
    const k = uniqueKey('cache-stale');
    assert.deepEqual(await gate.write(k, 5, 'a'), verdict(k, 'advance', null, 5, 0, 5));
    assert.deepEqual(await gate.write(k, 6, 'b'), verdict(k, 'advance', null, 6, 5, 6));
    assert.deepEqual(await other.write(k, 8, 'c'), verdict(k, 'advance', null, 8, 6, 8));
    // the gate remembers mark 6 and would take 7; the store's precondition says no, the reload says STALE_TOKEN
    assert.deepEqual(await gate.write(k, 7, 'late'), verdict(k, 'reject', 'STALE_TOKEN', 7, 8, 8));
    assert.deepEqual(await t.raw(k), { state: stateText(8), value: '"c"' });
    await expectRead(gate, k, 8, 'c');
    if (caching(t)) {
      // write 5: load + commitFrom; write 6: commitFrom only; write 7: commitFrom (lost) + load; read: load
      assert.deepEqual(c.n, { load: 3, commit: 0, commitFrom: 3, lost: 1 });
    } else {
      assert.deepEqual({ ...c.n, commitFrom: 0 }, { load: 4, commit: 2, commitFrom: 0, lost: 0 });
    }
    // the reload refreshed what the gate knows: 9 advances from 8
    assert.deepEqual(await gate.write(k, 9, 'd'), verdict(k, 'advance', null, 9, 8, 9));
    assert.deepEqual(await t.raw(k), { state: stateText(9), value: '"d"' });
  },

  /** The optimistic commit fails its precondition; the retry decides from the fresh state (accept, not advance). */
  async 'a changed key fails the optimistic precondition; the retry decides from the fresh state'(t) {
    const c = counting(t.store);
    const gate = new Gate(c.store);
    const other = new Gate(t.store, { stateCache: 0 });
    const k = uniqueKey('cache-retry');
    assert.deepEqual(await gate.write(k, 5, { n: 1 }), verdict(k, 'advance', null, 5, 0, 5));
    assert.deepEqual(await other.write(k, 7, { n: 2 }), verdict(k, 'advance', null, 7, 5, 7));
    const before = { ...c.n };
    // from the cached mark 5, token 7 would advance (5 → 7); the store holds 7, so it is an accept at 7
    assert.deepEqual(await gate.write(k, 7, { n: 3 }), verdict(k, 'accept', null, 7, 7, 7));
    assert.deepEqual(await t.raw(k), { state: stateText(7), value: '{"n":3}' });
    if (caching(t)) {
      assert.deepEqual(
        { load: c.n.load - before.load, commitFrom: c.n.commitFrom - before.commitFrom, lost: c.n.lost - before.lost },
        { load: 1, commitFrom: 2, lost: 1 },
        'one optimistic commit lost its precondition, then one load and one commit',
      );
    }
    // the same for a change of the state alone (a holder bound to epoch 7, same mark):
    // the version moves, so the cached precondition fails again and the reload sees the holder
    assert.deepEqual(await other.establish(k, 7, { holder: 'h1' }), verdict(k, 'accept', null, 7, 7, 7));
    const e = await gate.write(k, 7, 'x', { holder: 'h2' }).then((v) => v.code);
    assert.equal(e, (await other.write(k, 7, 'y', { holder: 'h2' })).code, 'the cached gate answers what a fresh gate answers');
  },

  /**
   * A refusal decided on the cached state is decided again on a fresh load (its marks are the stored ones), so
   * after a restore lowered the mark the gate takes what the store now takes: the cache never changes a verdict.
   */
  async 'a refusal on the cached state is decided again on a load; after a restore lowered the mark, the store decides'(t) {
    const c = counting(t.store);
    const gate = new Gate(c.store);
    const other = new Gate(t.store, { stateCache: 0 });
    const k = uniqueKey('cache-restore');
    assert.deepEqual(await gate.write(k, 5, 'a'), verdict(k, 'advance', null, 5, 0, 5));
    assert.deepEqual(await other.establish(k, 8), verdict(k, 'advance', null, 8, 5, 8));
    const before = { ...c.n };
    // cached mark 5 says STALE for 3; the load says the same with the stored marks (8), not the cached ones
    assert.deepEqual(await gate.write(k, 3, 'old'), verdict(k, 'reject', 'STALE_TOKEN', 3, 8, 8));
    assert.deepEqual(await gate.establish(k, 4), verdict(k, 'reject', 'STALE_TOKEN', 4, 8, 8));
    if (caching(t)) assert.deepEqual({ load: c.n.load - before.load, commit: c.n.commit + c.n.commitFrom - before.commit - before.commitFrom }, { load: 2, commit: 0 });
    // a restore puts an older record back (mark 2): the store now takes 3, and so does the cached gate
    await t.putRaw(k, stateText(2), '"restored"');
    assert.deepEqual(await gate.write(k, 3, 'b'), verdict(k, 'advance', null, 3, 2, 3));
    assert.deepEqual(await t.raw(k), { state: stateText(3), value: '"b"' });
    // a write above the cached mark commits against the cached record; the restored one fails that precondition
    assert.deepEqual(await gate.write(k, 6, 'c'), verdict(k, 'advance', null, 6, 3, 6));
    await t.putRaw(k, stateText(4), '"restored again"');
    assert.deepEqual(await gate.write(k, 6, 'd'), verdict(k, 'advance', null, 6, 4, 6));
    assert.deepEqual(await t.raw(k), { state: stateText(6), value: '"d"' });
  },

  /**
   * A restore can put back a record whose version equals the cached one but whose state differs (version counters
   * restart or repeat): the precondition compares the state text too, so the cached decision never lands on it.
   */
  async 'a restored record with the cached version but another state fails the precondition (version and state)'(t) {
    const c = counting(t.store);
    const gate = new Gate(c.store);
    const k = uniqueKey('cache-aba');
    await t.putRaw(k, stateText(2), '"old"'); // version 100 on every target
    assert.deepEqual(await gate.write(k, 1, 'x'), verdict(k, 'reject', 'STALE_TOKEN', 1, 2, 2)); // loaded: mark 2, version 100 remembered
    await t.putRaw(k, stateText(9), '"newer"'); // same version 100, another state
    const before = { ...c.n };
    assert.deepEqual(await gate.write(k, 4, 'y'), verdict(k, 'reject', 'STALE_TOKEN', 4, 9, 9));
    assert.deepEqual(await t.raw(k), { state: stateText(9), value: '"newer"' });
    if (caching(t)) {
      assert.deepEqual({ load: c.n.load - before.load, commitFrom: c.n.commitFrom - before.commitFrom, lost: c.n.lost - before.lost }, { load: 1, commitFrom: 1, lost: 1 });
    }
  },
};

/**
 * The transaction form (Gate.transaction; docs/stores.md "Your own data"), for targets whose
 * store has `fencedTransaction` and that give the caller's own data (`t.own`, targets.mjs):
 * exact verdicts, the caller's row after, the body never called on a refusal, and an
 * interleaving that catches a store deciding outside its transaction. `t.own.optimistic`:
 * the engine checks at commit instead of locking (Deno KV, etcd), so in the interleaving the
 * later writer commits first and the earlier one is decided again.
 */
export const OWN_CASES = {
  async 'transaction form: advance, accept, stale refused without the body; a throwing body rolls back'(t) {
    const k = uniqueKey('own');
    await t.own.setup(k);
    const gate = new Gate(t.store);
    let calls = 0;
    const body = (v) => {
      const w = t.own.write(k, v);
      return (tx) => {
        calls++;
        return w(tx);
      };
    };
    assert.deepEqual(await gate.transaction(k, 5, body('a')), { ...verdict(k, 'advance', null, 5, 0, 5), result: 1 });
    assert.deepEqual(await gate.transaction(k, 5, body('b')), { ...verdict(k, 'accept', null, 5, 5, 5), result: 1 });
    const raw = await t.raw(k);
    assert.deepEqual(await gate.transaction(k, 4, body('stale')), verdict(k, 'reject', 'STALE_TOKEN', 4, 5, 5));
    assert.equal(calls, 2, 'the body ran for the two calls that applied, not for the refused one');
    assert.equal(await t.own.read(k), 'b', 'the refused call wrote nothing of the caller\'s');
    assert.deepEqual(await t.raw(k), raw);
    const boom = new Error('boom');
    const w = t.own.write(k, 'half');
    const e = await expectError(gate.transaction(k, 6, t.own.sync ? (tx) => { w(tx); throw boom; } : async (tx) => { await w(tx); throw boom; }), 'CALLBACK_FAILED');
    assert.equal(e.cause, boom);
    assert.equal(await t.own.read(k), 'b');
    assert.deepEqual(await t.raw(k), raw);
    assert.equal(await new Gate(t.store, { stateCache: 0 }).mark(k), 5);
  },

  async 'transaction form: a writer that starts while another decides inside its transaction waits for it (or cannot commit), never decides on the old mark'(t) {
    const k = uniqueKey('own-race');
    await t.own.setup(k);
    assert.equal((await new Gate(t.store).transaction(k, 5, t.own.write(k, '5'))).outcome, 'advance');
    const other = await t.own.other();
    const gate7 = new Gate(other === null ? t.store : other.store, { maxRetries: 3, stateCache: 0 });
    let seven = null;
    const hooked = {
      load: (key) => t.store.load(key),
      encodeValue: (v) => t.store.encodeValue(v),
      fencedTransaction: (key, step) =>
        t.store.fencedTransaction(key, {
          ...step,
          decide(state) {
            // the first decision of writer 6: writer 7 starts now ("another process")
            if (seven === null) seven = gate7.transaction(k, 7, t.own.write(k, '7')).then((v) => v, (e) => e);
            return step.decide(state);
          },
        }),
    };
    if (typeof t.store.commit === 'function') hooked.commit = (...a) => t.store.commit(...a);
    if (typeof t.store.transaction === 'function') hooked.transaction = (...a) => t.store.transaction(...a);
    try {
      const v6 = await new Gate(hooked, { stateCache: 0 }).transaction(k, 6, t.own.write(k, '6', 150));
      if (t.own.optimistic) {
        // an engine without locks (Deno KV, etcd): writer 7 reads mark 5 too and commits first (6 is
        // still in its body); 6's commit fails its check of the fence entry, and 6, decided again on
        // mark 7, is refused: never two advances from mark 5
        assert.deepEqual(await seven, { ...verdict(k, 'advance', null, 7, 5, 7), result: 1 }, 'writer 7 committed first');
        assert.deepEqual(v6, verdict(k, 'reject', 'STALE_TOKEN', 6, 7, 7), 'writer 6 decided again on the mark 7 committed under it');
        assert.equal(await t.own.read(k), '7', 'the caller\'s data holds the statement of writer 7, the one that applied');
        assert.equal(await new Gate(t.store, { stateCache: 0 }).mark(k), 7);
        return;
      }
      assert.deepEqual(v6, { ...verdict(k, 'advance', null, 6, 5, 6), result: 1 }, 'writer 6, deciding first, advanced from mark 5');
      const v7 = await seven;
      if (v7 instanceof Error) {
        // it could not get the write lock while 6 held it (SQLite busy at once, a serialization failure)
        assert.equal(v7.code, 'COMMIT_CONFLICT', v7.message);
        assert.equal(await t.own.read(k), '6');
        assert.equal(await new Gate(t.store, { stateCache: 0 }).mark(k), 6);
      } else {
        assert.deepEqual(v7, { ...verdict(k, 'advance', null, 7, 6, 7), result: 1 }, 'writer 7 decided after 6 committed');
        assert.equal(await t.own.read(k), '7');
        assert.equal(await new Gate(t.store, { stateCache: 0 }).mark(k), 7);
      }
    } finally {
      if (other !== null) await other.close();
    }
  },
};
