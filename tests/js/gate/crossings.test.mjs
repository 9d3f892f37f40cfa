// Issue 12: one boundary crossing per decision, whatever the token kind and
// options. Counts every call into a
// Wasm export and every call out of Wasm into a JS import made by one public
// operation (tests/crossings.mjs wraps the instance; `node tests/crossings.mjs`
// prints the table with the names of the calls).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { measure } from '../../crossings.mjs';

const rows = new Map(await measure(new URL('../../../pkg/', import.meta.url)));

// [calls into Wasm, calls out of Wasm] per operation (one uncontended decision attempt).
const EXPECTED = {
  // Every decision: one call. Texts (stored state, op id, holder, signed token,
  // scope) and fingerprint bytes are written to the Wasm input buffer first.
  'Gate.write number': [1, 0],
  'Gate.write bigint': [1, 0],
  'Gate.write stale': [1, 0],
  'Gate.write opId': [1, 0],
  'Gate.write opId + fingerprint': [1, 0],
  'Gate.write holder': [1, 0],
  'Gate.write holder (non-ASCII)': [1, 0],
  'Gate.establish': [1, 0],
  'Gate.delete': [1, 0],
  'Gate.write signed (HMAC)': [1, 0],
  'Gate.write signed + opId': [1, 0],
  'Gate.write number, policy gate': [1, 0],
  'MemoryGate.write number': [1, 0],
  'MemoryGate.write bigint': [1, 0],
  'MemoryGate.write opId': [1, 0],
  'MemoryGate.write signed (HMAC)': [1, 0],
  // Not decisions, unchanged: the stored state is a wasm-bindgen string (malloc);
  // quarantine's floor crosses as a JsValue (a table slot, three type checks) and its next state's text is freed.
  'Gate.inspect': [2, 0],
  'Gate.quarantine': [3, 3],
};

test('crossings per operation: one per decision attempt for every token kind (plain, bigint, op id, holder, signed)', () => {
  const got = Object.fromEntries([...rows].map(([name, c]) => [name, [c.exports, c.imports]]));
  assert.deepEqual(got, EXPECTED);
});

// The decision entries: Gate's, MemoryGate's general one, and MemoryGate's numeric lane (number / bigint, no options; number + opId).
const DECISION_ENTRIES = ['__gate_decide', 'rawmemorygate_apply', 'rawmemorygate_fence', 'rawmemorygate_fence_exact', 'rawmemorygate_fence_op'];

test('the one call is the decision entry: __gate_decide / RawMemoryGate.apply / fence / fence_exact / fence_op', () => {
  for (const [name, c] of rows) {
    if (name === 'Gate.quarantine' || name === 'Gate.inspect') continue;
    const decisions = c.names.filter((n) => DECISION_ENTRIES.includes(n));
    assert.equal(decisions.length, 1, name);
    assert.deepEqual(c.names, decisions, name);
  }
});
