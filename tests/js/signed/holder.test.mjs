// The holder a signed token binds (docs/signed-tokens.md, "The lease id in a token"):
// a non-empty lease id is the holder whatever `holder` the operation names; an empty
// lease id binds nothing and the operation's own holder stays. Rust decides it
// (OpMeta::claimed_by) for the stored state and answers it with the decision
// (the exchange's bound holder), which audit records name: both gates, both
// places, the exact holder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryGate, Gate, MemoryHostStore, mintToken } from '../../../pkg/node.mjs';

const K1 = new Uint8Array(32).fill(1);
const keys = { k1: K1 };
const token = (leaseId, epoch) => mintToken({ scope: 'orders', epoch, leaseId, generation: 1 }, { kid: 'k1', hmac: K1 });

// [lease id in the token, the operation's holder, the holder bound]
const CASES = [
  ['', undefined, null],
  ['', 'worker-7', 'worker-7'],
  ['lease-9f2', undefined, 'lease-9f2'],
  ['lease-9f2', 'worker-7', 'lease-9f2'],
];

test('MemoryGate: an empty lease id binds the named holder (or none), a lease id binds itself; audit record and stored state agree', () => {
  for (const [leaseId, holder, bound] of CASES) {
    const audit = [];
    const gate = new MemoryGate({ keys, onVerdict: (r) => audit.push(r.holder) });
    const v = gate.write('orders', token(leaseId, 3), 'v', holder === undefined ? undefined : { holder });
    assert.equal(v.outcome, 'advance');
    assert.deepEqual(audit, [bound], `${JSON.stringify(leaseId)} ${holder}`);
    const state = gate.state('orders');
    assert.deepEqual(
      state,
      bound === null ? { v: 1, mark: '3' } : { v: 4, mark: '3', holder: bound, ops: [], evicted: null, quarantine: null },
      `${JSON.stringify(leaseId)} ${holder}`,
    );
  }
});

test('Gate: the same holder in the audit record and in the stored fence record', async () => {
  for (const [leaseId, holder, bound] of CASES) {
    const audit = [];
    const gate = new Gate(new MemoryHostStore(), { keys, onVerdict: (r) => audit.push(r.holder) });
    const v = await gate.write('orders', token(leaseId, 3), 'v', holder === undefined ? undefined : { holder });
    assert.equal(v.outcome, 'advance');
    assert.deepEqual(audit, [bound], `${JSON.stringify(leaseId)} ${holder}`);
    assert.deepEqual(await gate.inspect('orders'), { key: 'orders', exists: true, mark: 3, holder: bound, quarantine: null });
  }
});

test('an empty lease id at the bound epoch is not another holder: the named holder is checked (EPOCH_CONFLICT for a different one)', () => {
  const gate = new MemoryGate({ keys });
  assert.equal(gate.write('orders', token('', 3), 'a', { holder: 'worker-7' }).outcome, 'advance');
  assert.equal(gate.write('orders', token('', 3), 'b', { holder: 'worker-7' }).outcome, 'accept');
  const other = gate.write('orders', token('', 3), 'c', { holder: 'worker-8' });
  assert.deepEqual([other.outcome, other.code], ['reject', 'EPOCH_CONFLICT']);
  // A lease id at the same epoch is its own holder, not worker-7.
  const leased = gate.write('orders', token('lease-9f2', 3), 'd', { holder: 'worker-7' });
  assert.deepEqual([leased.outcome, leased.code], ['reject', 'EPOCH_CONFLICT']);
  assert.equal(gate.value('orders'), 'b');
});
