// The in-memory host store (fencegate/memory, and re-exported by the main entry).

/**
 * An in-memory host store (compare-and-set shape) for one process: the default
 * store of `new Issuer()`, and a store a `Gate` can share with it (the
 * issuer's records are `issuer:<scope>`, the gate's are the resource keys).
 * Not durable: it lives as long as the process. Records keep the state as
 * JSON text and the value by reference (no codec, no copy: a later mutation of
 * the written object is seen; docs/stores.md "Values").
 */
export class MemoryHostStore {
  #records = new Map();

  load(key) {
    const r = this.#records.get(key);
    return r === undefined ? null : { state: r.state, version: r.version, value: r.value };
  }

  commit(key, expectedVersion, nextState, change) {
    const r = this.#records.get(key);
    if ((r === undefined ? null : r.version) !== expectedVersion) return false;
    const next = { state: JSON.stringify(nextState), version: (r === undefined ? 0 : r.version) + 1, value: r?.value };
    if (change?.kind === 'set') next.value = change.value;
    else if (change?.kind === 'delete') next.value = undefined;
    this.#records.set(key, next);
    return true;
  }

  /** Keys that have a record, sorted. */
  keys() {
    return [...this.#records.keys()].sort();
  }
}
