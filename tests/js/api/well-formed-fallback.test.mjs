// On a runtime without String.prototype.isWellFormed (Node 18), text with a lone
// surrogate is still refused: UTF-8 cannot carry it (it would be written as U+FFFD,
// so two different ids, holders or keys would become one). This process runs
// without the method; the same cases as on Node 20 answer the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';

delete String.prototype.isWellFormed;
const { MemoryGate, Gate, MemoryHostStore } = await import('../../../pkg/node.mjs');

const LONE = ['a\uD800', '\uDC00b', 'x\uDBFFy', '\uDFFF'];
const FINE = ['plain', 'wörker', '\uD83D\uDE00 pair', ''];

test('without isWellFormed: lone surrogates in an op id, a holder or a key are INVALID_ARGUMENT, nothing written', async () => {
  assert.equal(typeof ''.isWellFormed, 'undefined');
  const gate = new MemoryGate();
  for (const text of LONE) {
    assert.throws(() => gate.write('k', 5, 'v', { opId: text }), { code: 'INVALID_ARGUMENT', message: 'opId must be a well-formed string' }, JSON.stringify(text));
    assert.throws(() => gate.write('k', 5, 'v', { holder: text }), { code: 'INVALID_ARGUMENT', message: 'holder must be a well-formed string' });
    assert.throws(() => gate.write(text, 5, 'v'), { code: 'INVALID_ARGUMENT' });
  }
  assert.equal(gate.mark('k'), 0);
  const host = new Gate(new MemoryHostStore());
  await assert.rejects(host.write('k', 5, 'v', { opId: LONE[0] }), { code: 'INVALID_ARGUMENT' });
  assert.equal((await host.read('k')).mark, 0);
});

test('without isWellFormed: well-formed text (surrogate pairs included) is accepted as before', () => {
  const gate = new MemoryGate();
  let e = 0;
  for (const text of FINE.filter((t) => t !== '')) {
    assert.equal(gate.write('k', ++e, 'v', { opId: text, holder: text }).outcome, 'advance');
    assert.equal(gate.write(text, 1, 'v').outcome, 'advance');
  }
  assert.equal(gate.mark('k'), 3);
});
