// Small helpers shared by several test files (issue 12: one copy of each).
import assert from 'node:assert/strict';

/** The error `fn` throws; fails the test when it returns. */
export function caught(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  assert.fail('expected a throw');
}

/** `x` as plain JSON, bigints as `"<digits>n"` strings. */
export const json = (x) => JSON.parse(JSON.stringify(x, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)));

/** Keeps the exact text a host would store (JSON.stringify of nextState). */
export class TextStore {
  entries = new Map();
  load(key) {
    const e = this.entries.get(key);
    return e === undefined ? null : { state: e.state, version: e.version, value: e.value };
  }
  commit(key, expected, nextState, change) {
    const e = this.entries.get(key);
    if ((e === undefined ? null : e.version) !== expected) return false;
    const next = { state: JSON.stringify(nextState), version: (e?.version ?? 0) + 1, value: e?.value };
    if (change.kind === 'set') next.value = change.value;
    if (change.kind === 'delete') next.value = undefined;
    this.entries.set(key, next);
    return true;
  }
}
