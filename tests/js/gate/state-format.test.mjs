// Issue 13: stored state whose members a host reorders, texts of formats 1-3
// written before format 4, and operation ids reused with another fingerprint.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { Gate, MemoryGate, MemoryHostStore, decodeState, FencegateError } from '../../../pkg/node.mjs';
import { TextStore, json } from '../../helpers.mjs';

const fixture = JSON.parse(readFileSync(new URL('../../fixtures/state-v1-v3.json', import.meta.url), 'utf8'));
const fromJson = (t) => (typeof t === 'string' && /^\d+n$/.test(t) ? BigInt(t.slice(0, -1)) : t);
const fp = (text) => createHash('sha256').update(text).digest('hex').slice(0, 32);

test('formats 1-3 as the build before format 4 wrote them decode, and answer every probe, exactly as then', async () => {
  assert.equal(fixture.cases.length, 16);
  let probes = 0;
  for (const c of fixture.cases) {
    assert.deepEqual(json(decodeState(c.text)), c.decoded, c.name);
    for (const p of c.probes) {
      const store = new TextStore();
      store.entries.set('k', { state: c.text, version: 1, value: 'v' });
      const gate = new Gate(store, { opWindow: c.window });
      const opts = p.holder === null ? { opId: p.opId } : { opId: p.opId, holder: p.holder };
      const v = await gate.write('k', fromJson(p.token), 'new', opts);
      assert.deepEqual(json(v), p.verdict, `${c.name}: ${JSON.stringify(p)}`);
      assert.equal(store.entries.get('k').state !== c.text, p.wrote, `${c.name}: ${JSON.stringify(p)}`);
      probes++;
    }
  }
  assert.equal(probes, 284);
});

test('issue 13 input: Gate over MemoryHostStore, opWindow 2, epoch 5, ids z, 1, y, then 1 again: duplicate', async () => {
  const store = new MemoryHostStore();
  const gate = new Gate(store, { opWindow: 2 });
  const mem = new MemoryGate({ opWindow: 2 });
  for (const [id, outcome] of [['z', 'advance'], ['1', 'accept'], ['y', 'accept']]) {
    assert.equal((await gate.write('k', 5, id, { opId: id })).outcome, outcome, id);
    assert.equal(mem.write('k', 5, id, { opId: id }).outcome, outcome, id);
  }
  const expected = { key: 'k', ok: true, outcome: 'duplicate', code: null, original: 'accept', token: 5, markBefore: 5, markAfter: 5 };
  assert.deepEqual(await gate.write('k', 5, 'again', { opId: '1' }), expected);
  assert.deepEqual(mem.write('k', 5, 'again', { opId: '1' }), expected);
  // z was the one pushed out of the window.
  const expired = { key: 'k', ok: false, outcome: 'reject', code: 'OP_ID_EXPIRED', token: 5, markBefore: 5, markAfter: 5 };
  assert.deepEqual(await gate.write('k', 5, 'again', { opId: 'z' }), expired);
  assert.deepEqual(mem.write('k', 5, 'again', { opId: 'z' }), expired);
  const state = JSON.parse(store.load('k').state);
  assert.deepEqual(state.ops, [['1', '5'], ['y', '5']]);
  assert.deepEqual({ ...state, evicted: null }, { v: 4, mark: '5', holder: null, ops: [['1', '5'], ['y', '5']], evicted: null, quarantine: null });
  assert.deepEqual(mem.state('k').ops, state.ops);
  assert.deepEqual(await gate.read('k'), { mark: 5, value: 'y', hasValue: true });
});

test('the decoder takes members in any order and still refuses unknown, duplicate and missing fields and non-canonical numbers', () => {
  const good = [
    ['{"mark":"41","v":1}', { mark: 41 }],
    ['{"v": 2, "ops": {}, "mark": "8", "holder": "node-a", "evicted": null}', { mark: 8, holder: 'node-a', opIds: [] }],
    ['{"quarantine":"9","ops":{},"holder":null,"mark":"9","evicted":null,"v":3}', { mark: 9, quarantine: 9 }],
    ['{"evicted":null,"holder":"h","mark":"5","ops":[["1","5"],["y","5"]],"quarantine":null,"v":4}', { mark: 5, holder: 'h', opIds: ['1', 'y'] }],
  ];
  for (const [text, decoded] of good) {
    assert.deepEqual(decodeState(text), decoded, text);
    assert.deepEqual(decodeState(JSON.parse(text)), decoded, text); // as an object (integer-like keys first)
  }
  for (const bad of [
    '{"mark":"41","v":1,"x":null}',
    '{"mark":"41","mark":"41","v":1}',
    '{"mark":"41"}',
    '{"v":1}',
    '{"mark":"041","v":1}',
    '{"mark":"41","v":1.0}',
    '{"mark":"41","v":01}',
    '{"v":4,"mark":"5","holder":null,"ops":[],"evicted":null}',
    '{"v":4,"mark":"5","holder":null,"ops":{},"evicted":null,"quarantine":null}',
    '{"v":4,"mark":"5","holder":null,"ops":[["a","5"],["a","5"]],"evicted":null,"quarantine":null}',
    '{"v":4,"mark":"5","holder":null,"ops":[["a","05"]],"evicted":null,"quarantine":null}',
    '{"v":2,"mark":"5","holder":null,"ops":[],"evicted":null}',
  ]) {
    assert.throws(() => decodeState(bad), (e) => e instanceof FencegateError && e.code === 'CORRUPT_STATE', bad);
  }
});

const PAY_10 = JSON.stringify({ pay: 10 });
const PAY_99 = JSON.stringify({ pay: 99 });

test('issue 13 input: write(acct, 5, {pay: 10}, {opId: pay-1}) then {pay: 99}: OP_ID_REUSED with fingerprints, changes nothing', async () => {
  const store = new TextStore();
  const gate = new Gate(store);
  const mem = new MemoryGate();
  const reused = { key: 'acct', ok: false, outcome: 'reject', code: 'OP_ID_REUSED', token: 5, markBefore: 5, markAfter: 5 };
  const duplicate = { key: 'acct', ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 5, markBefore: 5, markAfter: 5 };
  const first = { key: 'acct', ok: true, outcome: 'advance', code: null, token: 5, markBefore: 0, markAfter: 5 };
  assert.deepEqual(await gate.write('acct', 5, { pay: 10 }, { opId: 'pay-1', fingerprint: PAY_10 }), first);
  assert.deepEqual(mem.write('acct', 5, { pay: 10 }, { opId: 'pay-1', fingerprint: PAY_10 }), first);
  const stored = store.entries.get('acct').state;
  assert.equal(stored, `{"v":4,"mark":"5","holder":null,"ops":[["pay-1","0","${fp(PAY_10)}"]],"evicted":null,"quarantine":null}`);
  assert.deepEqual(await gate.write('acct', 5, { pay: 99 }, { opId: 'pay-1', fingerprint: PAY_99 }), reused);
  assert.deepEqual(mem.write('acct', 5, { pay: 99 }, { opId: 'pay-1', fingerprint: PAY_99 }), reused);
  assert.equal(store.entries.get('acct').state, stored);
  assert.deepEqual(await gate.read('acct'), { mark: 5, value: { pay: 10 }, hasValue: true });
  assert.deepEqual(mem.read('acct'), { mark: 5, value: { pay: 10 }, hasValue: true });
  assert.deepEqual(mem.counters().codes, { OP_ID_REUSED: 1 });
  // The same fingerprint (as text or as its UTF-8 bytes) is the retry it claims to be.
  for (const same of [PAY_10, new TextEncoder().encode(PAY_10), new TextEncoder().encode(PAY_10).buffer]) {
    assert.deepEqual(await gate.write('acct', 5, { pay: 10 }, { opId: 'pay-1', fingerprint: same }), duplicate);
    assert.deepEqual(mem.write('acct', 5, { pay: 10 }, { opId: 'pay-1', fingerprint: same }), duplicate);
  }
  // Without a fingerprint on the retry there is nothing to compare: duplicate, as before issue 13.
  assert.deepEqual(await gate.write('acct', 5, { pay: 99 }, { opId: 'pay-1' }), duplicate);
  assert.deepEqual(mem.write('acct', 5, { pay: 99 }, { opId: 'pay-1' }), duplicate);
  assert.equal(store.entries.get('acct').state, stored);
  assert.deepEqual(mem.read('acct').value, { pay: 10 });
});

test('issue 13 input without fingerprints: the reuse stays a duplicate (the documented limit)', async () => {
  const gate = new Gate(new TextStore());
  const mem = new MemoryGate();
  for (const g of [gate, mem]) {
    await g.write('acct', 5, { pay: 10 }, { opId: 'pay-1' });
    assert.deepEqual(await g.write('acct', 5, { pay: 99 }, { opId: 'pay-1' }), { key: 'acct', ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 5, markBefore: 5, markAfter: 5 });
    assert.deepEqual((await g.read('acct')).value, { pay: 10 });
  }
});

test('fingerprint arguments: string, Uint8Array or ArrayBuffer, and only with an opId', async () => {
  const mem = new MemoryGate();
  const gate = new Gate(new TextStore());
  for (const [opts, what] of [
    [{ fingerprint: 'x' }, 'without opId'],
    [{ holder: 'h', fingerprint: 'x' }, 'without opId'],
    [{ opId: 'a', fingerprint: 5 }, 'a number'],
    [{ opId: 'a', fingerprint: null }, 'null'],
    [{ opId: 'a', fingerprint: '\ud800' }, 'a lone surrogate'],
    [{ opId: 'a', fingerprint: [1, 2] }, 'an array'],
  ]) {
    assert.throws(() => mem.write('k', 1, 'v', opts), (e) => e.code === 'INVALID_ARGUMENT', what);
    await assert.rejects(gate.write('k', 1, 'v', opts), (e) => e.code === 'INVALID_ARGUMENT', what);
  }
  assert.equal(mem.read('k').hasValue, false);
  assert.equal(await gate.mark('k'), 0);
  // An empty fingerprint is a fingerprint (of no bytes); establish refuses op ids (and so fingerprints).
  assert.equal(mem.write('k', 1, 'v', { opId: 'a', fingerprint: '' }).outcome, 'advance');
  assert.equal(mem.write('k', 1, 'w', { opId: 'a', fingerprint: new Uint8Array(0) }).outcome, 'duplicate');
  assert.equal(mem.write('k', 1, 'w', { opId: 'a', fingerprint: 'x' }).code, 'OP_ID_REUSED');
  assert.throws(() => mem.establish('k', 1, { opId: 'a', fingerprint: 'x' }), { code: 'INVALID_ARGUMENT', option: 'opId' });
  assert.equal(mem.establish('k', 1).outcome, 'accept');
  // Under strict the retry is checked the same way.
  const strict = new MemoryGate({ sameEpoch: 'strict' });
  strict.write('s', 3, 'v', { opId: 'a', fingerprint: 'one' });
  assert.equal(strict.write('s', 3, 'v', { opId: 'a', fingerprint: 'two' }).code, 'OP_ID_REUSED');
  assert.equal(strict.write('s', 3, 'v', { opId: 'a', fingerprint: 'one' }).outcome, 'duplicate');
});

// Issue 12: texts the build before serde wrote (formats 1 and 4) and read (1-3), with what its
// decodeState() answered (tests/fixtures/formats-today.json, gen-formats-today-js.mjs).
test('state texts of the build before serde decode as then, also with their members in another order', () => {
  const today = JSON.parse(readFileSync(new URL('../../fixtures/formats-today.json', import.meta.url), 'utf8'));
  const states = today.cases.filter((c) => c.kind === 'state');
  assert.equal(states.length, 29);
  let reordered = 0;
  for (const c of states) {
    assert.deepEqual(json(decodeState(c.text)), c.decodeState, c.name);
    const o = JSON.parse(c.text);
    // A v2/v3 ops object's member order is its window order: only v1 and v4 are reordered here
    // (src/format_fixture.rs reorders every text member by member, keeping that object as written).
    if (o.v === 2 || o.v === 3) continue;
    const reversed = JSON.stringify(Object.fromEntries(Object.entries(o).reverse()));
    assert.notEqual(reversed, c.text, c.name);
    assert.deepEqual(json(decodeState(reversed)), c.decodeState, `${c.name}: ${reversed}`);
    assert.deepEqual(json(decodeState(Object.fromEntries(Object.entries(o).reverse()))), c.decodeState, c.name);
    reordered++;
  }
  assert.equal(reordered, 17);
});
