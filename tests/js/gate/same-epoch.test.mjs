// Issue 6 on the in-memory gate and the audit trail on both gates: operation
// ids, holder binding, strict mode as per-operation sequence numbers, verdict
// records and counters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryGate, Gate, MemoryHostStore, FencegateError } from '../../../pkg/node.mjs';

test('mark 4; write(5, op r1) advances; the retry with r1 is a duplicate; value written once, mark 5', () => {
  const g = new MemoryGate();
  g.establish('k', 4);
  assert.deepEqual(g.write('k', 5, { n: 1 }, { opId: 'r1' }), { key: 'k', ok: true, outcome: 'advance', code: null, token: 5, markBefore: 4, markAfter: 5 });
  const first = g.value('k');
  assert.deepEqual(g.write('k', 5, { n: 2 }, { opId: 'r1' }), { key: 'k', ok: true, outcome: 'duplicate', code: null, original: 'advance', token: 5, markBefore: 5, markAfter: 5 });
  assert.equal(g.value('k'), first);
  assert.deepEqual(g.read('k'), { mark: 5, value: { n: 1 }, hasValue: true });
  assert.deepEqual(g.state('k'), { v: 4, mark: '5', holder: null, ops: [['r1', '4']], evicted: null, quarantine: null });
});

test('mark 5, window 3: a, b, c, d applied; a again is OP_ID_EXPIRED, not applied as new', () => {
  const g = new MemoryGate({ opWindow: 3 });
  g.establish('k', 5);
  for (const id of ['a', 'b', 'c', 'd']) assert.equal(g.write('k', 5, id, { opId: id }).outcome, 'accept');
  assert.deepEqual(g.write('k', 5, 'a-again', { opId: 'a' }), { key: 'k', ok: false, outcome: 'reject', code: 'OP_ID_EXPIRED', token: 5, markBefore: 5, markAfter: 5 });
  assert.equal(g.value('k'), 'd');
  assert.deepEqual(g.state('k').ops, [['b', '5'], ['c', '5'], ['d', '5']]);
  assert.equal(g.state('k').evicted.length, 512);
  assert.equal(g.write('k', 5, 'c-again', { opId: 'c' }).outcome, 'duplicate');
  // A new epoch clears the window and the filter.
  assert.equal(g.write('k', 6, 'a-new-epoch', { opId: 'a' }).outcome, 'advance');
  assert.deepEqual(g.state('k'), { v: 4, mark: '6', holder: null, ops: [['a', '5']], evicted: null, quarantine: null });
});

test('holder binding: same epoch from another holder is EPOCH_CONFLICT; nothing changes', () => {
  const g = new MemoryGate();
  g.establish('k', 41, { holder: 'A' });
  g.write('k', 41, 'a1', { holder: 'A' });
  assert.deepEqual(g.write('k', 41, 'b1', { holder: 'B' }), { key: 'k', ok: false, outcome: 'reject', code: 'EPOCH_CONFLICT', token: 41, markBefore: 41, markAfter: 41 });
  assert.equal(g.establish('k', 41, { holder: 'B' }).code, 'EPOCH_CONFLICT');
  assert.deepEqual(g.read('k'), { mark: 41, value: 'a1', hasValue: true });
  // Unsigned numbers name no holder: they cannot be told apart and are accepted.
  assert.equal(g.write('k', 41, 'anon').outcome, 'accept');
  assert.equal(g.write('k', 42, 'b2', { holder: 'B' }).outcome, 'advance');
  assert.deepEqual(g.state('k'), { v: 4, mark: '42', holder: 'B', ops: [], evicted: null, quarantine: null });
});

test('strict mode is per-operation sequence numbers: each operation needs a larger token; retries are duplicates', () => {
  // Strict: a different protocol from ownership epochs (README "Same-epoch policies").
  const g = new MemoryGate({ sameEpoch: 'strict' });
  assert.equal(g.write('seq', 1, 'op1', { opId: 'op-1' }).outcome, 'advance');
  assert.equal(g.write('seq', 2, 'op2', { opId: 'op-2' }).outcome, 'advance');
  assert.equal(g.write('seq', 2, 'op2-retry', { opId: 'op-2' }).outcome, 'duplicate');
  assert.equal(g.write('seq', 2, 'op3-reused-number').code, 'SAME_EPOCH_REJECTED');
  assert.deepEqual(g.read('seq'), { mark: 2, value: 'op2', hasValue: true });
});

test('bad operation options throw INVALID_ARGUMENT and change nothing', () => {
  const g = new MemoryGate();
  g.write('k', 1, 'v');
  for (const opts of [{ opId: 7 }, { opId: '' }, { opId: 'x'.repeat(129) }, { opId: 'a\nb' }, { holder: '' }, { holder: 5 }, 'r1']) {
    assert.throws(() => g.write('k', 2, 'x', opts), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT', JSON.stringify(opts));
  }
  assert.deepEqual(g.read('k'), { mark: 1, value: 'v', hasValue: true });
  // A refused metadata call leaves nothing behind for the next call.
  assert.deepEqual(g.state('k'), { v: 1, mark: '1' });
  for (const w of [0, 1025, 1.5, '3']) assert.throws(() => new MemoryGate({ opWindow: w }), { code: 'INVALID_ARGUMENT' });
});

test('audit trail and counters (MemoryGate): every verdict reported; a failing callback never changes a verdict', () => {
  const records = [];
  let fail = false;
  const g = new MemoryGate({ onVerdict: (r) => { if (fail) throw new Error('audit down'); records.push(r); } });
  g.write('k', 3, 'a', { opId: 'o1', holder: 'H' });
  g.write('k', 2, 'b');
  g.write('k', 3, 'c', { opId: 'o1', holder: 'H' });
  fail = true;
  assert.equal(g.write('k', 4, 'd').outcome, 'advance');
  // timings (issue 18): a duration ≥ 0 per record; a MemoryGate has no host commit
  for (const r of records) {
    assert.ok(typeof r.durationMs === 'number' && r.durationMs >= 0, JSON.stringify(r));
    assert.equal(r.commitMs, null);
    delete r.durationMs;
    delete r.commitMs;
  }
  assert.deepEqual(records, [
    { key: 'k', operation: 'write', outcome: 'advance', code: null, token: 3, markBefore: 0, markAfter: 3, holder: 'H', opId: 'o1' },
    { key: 'k', operation: 'write', outcome: 'reject', code: 'STALE_TOKEN', token: 2, markBefore: 3, markAfter: 3, holder: null, opId: null },
    { key: 'k', operation: 'write', outcome: 'duplicate', code: null, token: 3, markBefore: 3, markAfter: 3, holder: 'H', opId: 'o1' },
  ]);
  assert.deepEqual(g.counters(), { total: 4, advance: 2, accept: 0, reject: 1, duplicate: 1, auditErrors: 1, codes: { STALE_TOKEN: 1 } });
  assert.deepEqual(g.read('k'), { mark: 4, value: 'd', hasValue: true });
});

test('audit trail (Gate): async callback rejections are counted, verdicts unchanged', async () => {
  const records = [];
  const gate = new Gate(new MemoryHostStore(), {
    onVerdict: async (r) => { records.push(r.outcome + ':' + (r.code ?? '')); if (r.code) throw new Error('sink down'); },
  });
  assert.equal((await gate.write('k', 2, 'x', { opId: 'a' })).outcome, 'advance');
  assert.equal((await gate.write('k', 1, 'y')).code, 'STALE_TOKEN');
  assert.equal((await gate.write('k', 2, 'z', { opId: 'a' })).outcome, 'duplicate');
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(records, ['advance:', 'reject:STALE_TOKEN', 'duplicate:']);
  assert.deepEqual(gate.counters(), { total: 3, advance: 1, accept: 0, reject: 1, duplicate: 1, auditErrors: 1, codes: { STALE_TOKEN: 1 } });
  assert.deepEqual(await gate.read('k'), { mark: 2, value: 'x', hasValue: true });
});

test('text that UTF-8 cannot carry (lone surrogates) is refused, so two ids, holders or keys never collide', async () => {
  const g = new MemoryGate();
  g.establish('k', 5);
  for (const opts of [{ opId: 'op\uD800' }, { opId: 'op\uDBFF' }, { holder: 'h\uDC00' }]) {
    assert.throws(() => g.write('k', 5, 'A', opts), { code: 'INVALID_ARGUMENT' }, JSON.stringify(opts));
  }
  assert.throws(() => g.write('k\uD800', 5, 'A'), { code: 'INVALID_ARGUMENT' });
  assert.deepEqual(g.read('k'), { mark: 5, value: undefined, hasValue: false });
  // Well-formed astral characters are fine.
  assert.equal(g.write('k', 5, 'B', { opId: 'op\u{1F600}' }).outcome, 'accept');
  const gate = new Gate(new MemoryHostStore());
  await assert.rejects(gate.write('k\uDFFF', 1, 'x'), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(gate.write('k', 1, 'x', { holder: '\uD83D' }), { code: 'INVALID_ARGUMENT' });
});
