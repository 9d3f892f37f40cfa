// An IndexedDB host store for fencegate's `Gate` (and `Issuer`), transaction shape.
//
// One record per key in the object store `fence`: `{ state, value, hasValue }`,
// where `state` is the fence state as its versioned JSON text ({"v":1,"mark":"41"}).
// State and value live in the same record, so they commit together (DESIGN R1).
//
// IndexedDB commits a transaction by itself as soon as no request is pending
// when the event loop idles. That is why `fn` (given by fencegate) is called
// synchronously inside the `get` request's success callback, and the `put` is
// issued in that same callback: nothing is awaited between the read, the
// decision and the write. fencegate's `Gate` calls `fn` and decides
// synchronously (pkg/lib/gate.mjs, #viaTransaction), so the transaction shape fits.

const DB_VERSION = 1;
export const FENCE = 'fence';
export const UI = 'ui';

/** Opens (creating if needed) the demo's database. */
export function openDatabase(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, DB_VERSION);
    req.onupgradeneeded = () => {
      const db = req.result;
      if (!db.objectStoreNames.contains(FENCE)) db.createObjectStore(FENCE);
      if (!db.objectStoreNames.contains(UI)) db.createObjectStore(UI);
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error(`IndexedDB ${name} is blocked by another tab`));
  });
}

function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
  });
}

export class IdbStore {
  #db;

  constructor(db) {
    this.#db = db;
  }

  /**
   * Read–modify–write of one record in one readwrite transaction. `update(record | null)`
   * runs synchronously in the read's callback and returns the new record, or null to
   * write nothing. Resolves when the transaction has committed; rejects (rolled back)
   * when `update` throws, with what it threw.
   */
  update(key, update) {
    const tx = this.#db.transaction(FENCE, 'readwrite');
    const os = tx.objectStore(FENCE);
    let thrown = null;
    const committed = done(tx);
    const get = os.get(key);
    get.onsuccess = () => {
      let next;
      try {
        next = update(get.result === undefined ? null : get.result);
      } catch (e) {
        thrown = { e };
        tx.abort();
        return;
      }
      if (next !== null) os.put(next, key);
    };
    return committed.catch((e) => {
      throw thrown !== null ? thrown.e : e;
    });
  }

  /** fencegate's transaction shape: `fn(state)` → `{ nextState, change }` or null. */
  transaction(key, fn) {
    return this.update(key, (record) => {
      const out = fn(record === null ? null : record.state);
      if (out === null) return null;
      const next = { state: JSON.stringify(out.nextState), value: record?.value, hasValue: record?.hasValue ?? false };
      if (out.change.kind === 'set') {
        next.value = out.change.value;
        next.hasValue = true;
      } else if (out.change.kind === 'delete') {
        next.value = undefined;
        next.hasValue = false;
      }
      return next;
    });
  }

  /**
   * The raw record of `key` (or null), and putting one back (null: delete): the
   * demo's simulated backup and restore of the issuer's storage. Not a path for
   * writes to fenced resources (R13).
   */
  async raw(key) {
    let copy = null;
    await this.update(key, (record) => {
      copy = record;
      return null;
    });
    return copy;
  }

  replace(key, record) {
    const tx = this.#db.transaction(FENCE, 'readwrite');
    if (record === null) tx.objectStore(FENCE).delete(key);
    else tx.objectStore(FENCE).put(record, key);
    return done(tx);
  }

  /** `{ state, version, value }` or null (used by `gate.read` and `issuer.current`). */
  load(key) {
    return new Promise((resolve, reject) => {
      const req = this.#db.transaction(FENCE, 'readonly').objectStore(FENCE).get(key);
      req.onsuccess = () => {
        const r = req.result;
        resolve(r === undefined ? null : { state: r.state, version: null, value: r.hasValue ? r.value : undefined });
      };
      req.onerror = () => reject(req.error);
    });
  }
}

/** The page's own (unfenced) UI state: clock, clients, timeline, log. */
export function loadUi(db, key) {
  return new Promise((resolve, reject) => {
    const req = db.transaction(UI, 'readonly').objectStore(UI).get(key);
    req.onsuccess = () => resolve(req.result ?? null);
    req.onerror = () => reject(req.error);
  });
}

export function saveUi(db, key, value) {
  const tx = db.transaction(UI, 'readwrite');
  tx.objectStore(UI).put(value, key);
  return done(tx);
}

/** Clears every fence record, issuer record and the UI state in one transaction. */
export function clearAll(db) {
  const tx = db.transaction([FENCE, UI], 'readwrite');
  tx.objectStore(FENCE).clear();
  tx.objectStore(UI).clear();
  return done(tx);
}
