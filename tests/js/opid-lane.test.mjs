// MemoryGate's op-id lane (docs/design.md "Issue 14 item 4", third pass): a
// number write whose options are `{ opId }` alone goes through
// `RawMemoryGate.fence_op` with the id copied by `writeOpId`; any other
// options object through `metaOf` and `apply`. Both lanes must give the same
// verdicts, the same errors (code and message) and the same state text, for
// ASCII, non-ASCII and hostile ids alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryGate, FencegateError } from '../../pkg/node.mjs';

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
