// MemoryGate's op-id lane (docs/decisions/memorygate-lanes.md): a
// number write whose options are `{ opId }` alone goes through
// `RawMemoryGate.fence_op` with the id copied by `writeOpId`; any other
// options object through `metaOf` and `apply`. Both lanes must give the same
// verdicts, the same errors (code and message) and the same state text, for
// ASCII, non-ASCII and hostile ids alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryGate, FencegateError } from '../../../pkg/node.mjs';

/** `{ opId }` (the lane) and `{ opId, holder: undefined }` (the general path, same meaning). */
const lane = (opId) => ({ opId });
const general = (opId) => ({ opId, holder: undefined });

function outcomeOf(f) {
  try {
    return { verdict: f() };
  } catch (e) {
    assert.ok(e instanceof FencegateError, `not a FencegateError: ${e}`);
    return { code: e.code, message: e.message };
  }
}

/** Runs the same writes on key 'k' through both lanes; returns each write's result and the key's state after. */
function both(steps) {
  const out = [];
  for (const opts of [lane, general]) {
    const g = new MemoryGate();
    const results = steps.map(([token, opId]) => outcomeOf(() => g.write('k', token, `v${token}`, opts(opId))));
    out.push({ results, state: g.state('k') ?? null, mark: g.mark('k'), value: g.value('k') });
    g.free();
  }
  assert.deepEqual(out[0], out[1]);
  return out[0];
}

test('non-ASCII ids: stored as UTF-8 exactly; a retry through either lane is a duplicate', () => {
  for (const id of ['ü-1', 'заказ-7', '注文', '🙂-x', 'a€b']) {
    const r = both([[3, id], [3, id], [3, `${id}!`], [3, id]]);
    assert.deepEqual(r.results.map((x) => x.verdict.outcome), ['advance', 'duplicate', 'accept', 'duplicate']);
    assert.deepEqual(r.state.ops, [[id, '0'], [`${id}!`, '3']]);
    assert.equal(r.mark, 3);
    assert.equal(r.value, 'v3');
    // The id the lane stored answers a retry made through the general path, and the other way round.
    const g = new MemoryGate();
    assert.equal(g.write('k', 4, 'a', lane(id)).outcome, 'advance');
    assert.equal(g.write('k', 4, 'b', general(id)).outcome, 'duplicate');
    assert.equal(g.write('k', 4, 'c', general(`${id}2`)).outcome, 'accept');
    assert.equal(g.write('k', 4, 'd', lane(`${id}2`)).outcome, 'duplicate');
    assert.equal(g.value('k'), 'c');
    g.free();
  }
});

test('the 128-byte limit counts UTF-8 bytes in the lane as in the general path', () => {
  const fits = `${'€'.repeat(42)}ab`; // 42 × 3 + 2 = 128 bytes
  const over = '€'.repeat(43); // 129 bytes in 43 UTF-16 units
  assert.equal(both([[1, fits]]).results[0].verdict.outcome, 'advance');
  const r = both([[1, over], [2, 'x'.repeat(129)], [2, 'x'.repeat(128)]]);
  assert.equal(r.results[0].code, 'INVALID_ARGUMENT');
  assert.equal(r.results[1].code, 'INVALID_ARGUMENT');
  assert.equal(r.results[2].verdict.outcome, 'advance');
  assert.equal(r.mark, 2);
});

test('hostile ids: the same INVALID_ARGUMENT (code and message) from both lanes, nothing changed', () => {
  const hostile = ['', 'a\ud800', '\udc00', 'x\ud83d', 'tab\there', '\u0000', 'del\u007f', 'c1\u0085', 'ü\u0007', 42, null, 1n, {}, 'x'.repeat(10000), '€'.repeat(5000)];
  for (const id of hostile) {
    const r = both([[5, 'ok'], [6, id], [6, id]]);
    assert.equal(r.results[0].verdict.outcome, 'advance');
    assert.equal(r.results[1].code, 'INVALID_ARGUMENT', `opId ${typeof id === 'string' ? JSON.stringify(id.slice(0, 20)) : String(id)}`);
    assert.deepEqual(r.results[2], r.results[1]);
    assert.equal(r.mark, 5);
    assert.equal(r.value, 'v5');
    assert.deepEqual(r.state.ops, [['ok', '0']]);
  }
});

test('an id after a longer non-ASCII one is written whole (no bytes left over from the last id)', () => {
  const g = new MemoryGate();
  assert.equal(g.write('k', 1, 'a', lane('ééééé')).outcome, 'advance');
  assert.equal(g.write('k', 1, 'b', lane('é')).outcome, 'accept');
  assert.equal(g.write('k', 1, 'c', general('é')).outcome, 'duplicate');
  assert.equal(g.write('k', 1, 'd', lane('ééééé')).outcome, 'duplicate');
  assert.equal(g.value('k'), 'b');
  assert.deepEqual(g.state('k').ops, [['ééééé', '0'], ['é', '1']]);
  g.free();
});

test('a holder or fingerprint the options object has but does not enumerate is not dropped by the lane', () => {
  // metaOf reads `holder` and `fingerprint` by name (own or inherited, enumerable or not),
  // so the lane must not take an object that has either: a class getter, a
  // non-enumerable own member, an inherited one.
  class Opts {
    #holder;
    constructor(opId, holder) {
      this.opId = opId;
      this.#holder = holder;
    }
    get holder() {
      return this.#holder;
    }
  }
  const hidden = (opId, holder) => Object.defineProperty({ opId }, 'holder', { value: holder, enumerable: false });
  const inherited = (opId, holder) => {
    const o = Object.create(Object.defineProperty({}, 'holder', { value: holder, enumerable: false }));
    o.opId = opId;
    return o;
  };
  for (const make of [(id, h) => new Opts(id, h), hidden, inherited]) {
    for (const audit of [false, true]) {
      const g = new MemoryGate(audit ? { onVerdict() {} } : undefined);
      assert.deepEqual(g.write('k', 5, 'a', make('a', 'h1')), {
        key: 'k', ok: true, outcome: 'advance', code: null, token: 5, markBefore: 0, markAfter: 5,
      });
      assert.deepEqual(g.write('k', 5, 'b', { opId: 'b', holder: 'h2' }), {
        key: 'k', ok: false, outcome: 'reject', code: 'EPOCH_CONFLICT', token: 5, markBefore: 5, markAfter: 5,
      });
      assert.equal(g.value('k'), 'a');
      assert.deepEqual(g.state('k'), { v: 4, mark: '5', holder: 'h1', ops: [['a', '0']], evicted: null, quarantine: null });
      g.free();
    }
  }
});
