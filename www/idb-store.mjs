// The demo's IndexedDB database: the fence records (fencegate/indexeddb's
// IndexedDbStore, pkg/adapters/indexeddb.mjs) and the page's own UI state, in
// one database with two object stores.
import { IndexedDbStore, openFenceDatabase } from '../pkg/adapters/indexeddb.mjs';

export const FENCE = 'fence';
export const UI = 'ui';

function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
  });
}

/** Opens (creating if needed) the demo's database: the fence store plus the UI store. */
export function openDatabase(name) {
  return openFenceDatabase(name, {
    storeName: FENCE,
    upgrade: (db) => {
      if (!db.objectStoreNames.contains(UI)) db.createObjectStore(UI);
    },
  });
}

/**
 * The package's store plus the demo's simulated backup and restore of the
 * issuer's storage: the raw record of a key, and putting one back (null:
 * delete). Not a path for writes to fenced resources (R13).
 */
export class DemoStore extends IndexedDbStore {
  #db;

  constructor(db) {
    super(db, { storeName: FENCE });
    this.#db = db;
  }

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
