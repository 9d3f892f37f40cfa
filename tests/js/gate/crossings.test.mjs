// One boundary crossing per decision, whatever the token kind and options
// (decision record typed-exchange). Counts every call into a
// Wasm export and every call out of Wasm into a JS import made by one public
// operation (tests/crossings.mjs wraps the instance; `node tests/crossings.mjs`
// prints the table with the names of the calls).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { measure } from '../../crossings.mjs';

const rows = new Map(await measure(new URL('../../../pkg/', import.meta.url)));

// [calls into Wasm, calls out of Wasm] per operation (one uncontended decision attempt).
const EXPECTED = {
  // Every decision: one call. The request (its fields, texts and fingerprint
  // bytes) is written to the exchange buffer first and the answer read from it.
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

// The decision entries: Gate's, MemoryGate's general one, and MemoryGate's one numeric lane (a number token, no options).
const DECISION_ENTRIES = ['__gateDecide', 'rawmemorygate_apply', 'rawmemorygate_fence'];

test('the one call is the decision entry: __gateDecide / RawMemoryGate.apply / RawMemoryGate.fence', () => {
  for (const [name, c] of rows) {
    if (name === 'Gate.quarantine' || name === 'Gate.inspect') continue;
    const decisions = c.names.filter((n) => DECISION_ENTRIES.includes(n));
    assert.equal(decisions.length, 1, name);
    assert.deepEqual(c.names, decisions, name);
  }
});
