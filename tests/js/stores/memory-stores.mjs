// Reference host stores in plain JS, used by the conformance suite: one of each
// callback shape, and a "lying" compare-and-set host the suite must catch.
// Values go through a codec like the shipped adapters (default `valueCodec`).
import { valueCodec } from '../../../pkg/node.mjs';
import { loadedRecord } from '../../../pkg/adapters/support.mjs';

class Coded {
  constructor(options = {}) {
    this.codec = options.encode ? { encode: options.encode, decode: options.decode } : valueCodec;
  }

  encodeValue(value) {
    return this.codec.encode(value);
  }

  applyChange(entry, nextState, change) {
    entry.state = JSON.stringify(nextState);
    if (change.kind === 'set') entry.value = change.encoded ?? this.encodeValue(change.value);
    else if (change.kind === 'delete') entry.value = undefined;
  }

  loadEntry(entry) {
    if (entry === undefined) return null;
    // like the shipped adapters: the value decoded when read (a write never reads it)
    return loadedRecord(entry.state, entry.version, entry.value, (text) => this.codec.decode(text));
  }
}

/** Compare-and-set over a Map; stored state and value are JSON text, version an integer. */
export class MemoryCasStore extends Coded {
  entries = new Map();

  load(key) {
    return this.loadEntry(this.entries.get(key));
  }

  commit(key, expectedVersion, nextState, change) {
    const entry = this.entries.get(key);
    if ((entry === undefined ? null : entry.version) !== expectedVersion) return false;
    const next = entry ?? { state: undefined, value: undefined, version: 0 };
    this.applyChange(next, nextState, change);
    next.version += 1;
    this.entries.set(key, next);
    return true;
  }
}

/** MemoryCasStore with the state-cache commit (docs/stores.md "commitFrom"): version AND state text, `{ version }` back. */
export class MemoryCommitFromStore extends MemoryCasStore {
  commitFrom(key, expected, nextText, change) {
    const entry = this.entries.get(key);
    if (expected === null ? entry !== undefined : entry === undefined || entry.version !== expected.version || entry.state !== expected.state) {
      return false;
    }
    const next = entry ?? { state: undefined, value: undefined, version: 0 };
    next.state = nextText;
    if (change.kind === 'set') next.value = change.encoded ?? this.encodeValue(change.value);
    else if (change.kind === 'delete') next.value = undefined;
    next.version += 1;
    this.entries.set(key, next);
    return { version: next.version };
  }
}

/** Transaction shape over a Map, Promise-returning (like an async host). */
export class MemoryTxStore extends Coded {
  entries = new Map();

  async load(key) {
    return this.loadEntry(this.entries.get(key));
  }

  async transaction(key, fn) {
    const entry = this.entries.get(key);
    const out = fn(entry === undefined ? null : entry.state);
    if (out === null || out === undefined) return;
    const next = entry ?? { state: undefined, value: undefined, version: 0 };
    this.applyChange(next, out.nextState, out.change);
    next.version += 1;
    this.entries.set(key, next);
  }
}

/** A broken host: its commit ignores the expected version (check-then-write). */
export class LyingCasStore extends MemoryCasStore {
  commit(key, _expectedVersion, nextState, change) {
    const entry = this.entries.get(key);
    return super.commit(key, entry === undefined ? null : entry.version, nextState, change);
  }
}
