// fencegate/indexeddb — a transaction host store on IndexedDB (browsers, and
// workers that have `indexedDB`).
//
// One record per resource key in an object store (default `fence`):
// `{ state, value }`, the fence state as its versioned JSON text and the value
// as codec text (null = no value). State and value are one record, so they
// commit together (DESIGN R1).
//
// Why one decision is atomic: each decision is ONE readwrite transaction. The
// record is read with `get`; fencegate's `fn` (synchronous) is called in that
// request's success callback, and the `put` is issued in the same callback.
// While a request of a transaction is pending the transaction stays active, so
// it cannot commit between the read and the write; and IndexedDB runs readwrite
// transactions with overlapping scopes one after another, in creation order,
// across all tabs and workers of the origin. So two deciders of one key (two
// tabs, say) never both read the same mark: the second reads the first's.
//
// Values go through a codec (default `valueCodec`, docs/stores.md "Values").
import { valueCodec } from '../lib/codec.mjs';
import { FencegateError } from '../lib/errors.mjs';
import { codecOf, encodeWith, encodedOf, loadedRecord, nextStateTextOf, storeOptions, CODEC_OPTIONS } from './support.mjs';
import { invalid } from '../lib/options.mjs';

function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
  });
}

/**
 * Opens (creating if needed) a database with the object store `storeName`
 * (default `fence`). Pass `version` and `upgrade(db)` to create your own
 * object stores in the same database.
 */
export function openFenceDatabase(name, options = {}) {
  if (typeof name !== 'string' || name === '') throw invalid('openFenceDatabase needs a database name', { option: 'name' });
  const { storeName = 'fence', version = 1, upgrade } = storeOptions(options ?? undefined, 'openFenceDatabase', { storeName: null, version: null, upgrade: null });
  if (typeof storeName !== 'string' || storeName === '') throw invalid('storeName must be a non-empty string', { option: 'storeName' });
  if (!Number.isSafeInteger(version) || version < 1) throw invalid('version must be a positive integer', { option: 'version' });
  if (upgrade !== undefined && typeof upgrade !== 'function') throw invalid('upgrade must be a function', { option: 'upgrade' });
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, version);
    req.onupgradeneeded = () => {
      const db = req.result;
      if (!db.objectStoreNames.contains(storeName)) db.createObjectStore(storeName);
      if (upgrade) upgrade(db);
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error(`IndexedDB ${name} is blocked by another tab`));
  });
}

export class IndexedDbStore {
  #db;
  #name;
  #scope;
  #encode;
  #decode;

  constructor(db, options = {}) {
    if (db === null || typeof db !== 'object' || typeof db.transaction !== 'function' || !db.objectStoreNames) {
      throw invalid('IndexedDbStore needs an open IDBDatabase (openFenceDatabase(name))');
    }
    options = storeOptions(options, 'IndexedDbStore', { storeName: null, dataStores: 'array', ...CODEC_OPTIONS });
    const storeName = options.storeName ?? 'fence';
    if (typeof storeName !== 'string' || !db.objectStoreNames.contains(storeName)) {
      throw invalid(`storeName: the database has no object store ${JSON.stringify(String(storeName))}`, { option: 'storeName' });
    }
    const dataStores = [...(options.dataStores ?? [])];
    for (const name of dataStores) {
      if (typeof name !== 'string' || name === storeName || !db.objectStoreNames.contains(name)) {
        throw invalid(`dataStores: ${JSON.stringify(String(name))} is not an object store of the database (other than the fence store)`, { option: 'dataStores' });
      }
    }
    this.#db = db;
    this.#name = storeName;
    this.#scope = [storeName, ...dataStores];
    [this.#encode, this.#decode] = codecOf(options, valueCodec);
  }

  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }

  /**
   * Read–modify–write of one record in one readwrite transaction: `update(record | null)`
   * runs synchronously in the read's callback and returns the record to put, or null
   * for nothing. Resolves to whether it put one, once committed; rejects (rolled back)
   * with what `update` threw.
   */
  update(key, update) {
    const tx = this.#db.transaction(this.#name, 'readwrite');
    const os = tx.objectStore(this.#name);
    let thrown = null;
    let wrote = false;
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
      if (next !== null) {
        os.put(next, key);
        wrote = true;
      }
    };
    return committed.then(
      () => wrote,
      (e) => {
        throw thrown !== null ? thrown.e : e;
      },
    );
  }

  /** fencegate's transaction shape: `fn(state)` → `{ nextState, change }` or null. */
  transaction(key, fn) {
    return this.update(key, (record) => {
      const out = fn(record === null ? null : record.state);
      if (out === null || out === undefined) return null;
      const { change } = out;
      const value = change.kind === 'set' ? encodedOf(this, change) : change.kind === 'delete' ? null : (record?.value ?? null);
      return { state: nextStateTextOf(out), value };
    });
  }

  /**
   * The caller's own object stores (the store's `dataStores`) in the fence's
   * one readwrite transaction (Gate.transaction; docs/stores.md "Your own
   * data"): the fence record is read, decided, and when the verdict applies
   * put, then `step.run(tx)` runs the caller's body with the IDBTransaction
   * in that request's callback. A synchronous body issues its requests there;
   * an async body may await requests of `tx` (their callbacks keep it
   * active). While the body's Promise is pending the store keeps the
   * transaction from committing (a read of the fence record after each
   * other), so it commits only after the body settled, or is aborted when the
   * body throws or rejects: nothing of it is written. A body that awaits
   * something else (fetch, a timer) and then uses `tx` gets IndexedDB's
   * TransactionInactiveError: rolled back, CALLBACK_FAILED. Answers
   * `{ version: null }` or null (refused).
   */
  fencedTransaction(key, step) {
    const tx = this.#db.transaction(this.#scope, 'readwrite');
    const os = tx.objectStore(this.#name);
    const committed = done(tx);
    let failure = null;
    let applied = false;
    let settled = true;
    const fail = (e) => {
      if (failure === null) failure = { e };
      try {
        tx.abort();
      } catch {
        // already finished
      }
    };
    const get = os.get(key);
    get.onsuccess = () => {
      try {
        const record = get.result === undefined ? null : get.result;
        const plan = step.decide(record === null ? null : record.state);
        if (plan === null) return;
        os.put({ state: plan.nextStateText, value: record === null ? null : (record.value ?? null) }, key);
        applied = true;
        const out = step.run(tx);
        if (out !== null && (typeof out === 'object' || typeof out === 'function') && typeof out.then === 'function') {
          settled = false;
          // keep the transaction busy (one read after the other) until the body settles
          const spin = () => {
            if (settled || failure !== null) return;
            try {
              os.count(key).onsuccess = spin;
            } catch {
              // the transaction finished under the body (it called tx.commit()): seen at complete
            }
          };
          spin();
          Promise.resolve(out).then(() => {
            settled = true;
          }, (e) => {
            settled = true;
            fail(e);
          });
        }
      } catch (e) {
        fail(e);
      }
    };
    return committed.then(
      () => {
        if (!settled) {
          throw new FencegateError('STORE_ERROR', 'IndexedDbStore: the transaction committed before the statements function settled (did it call tx.commit()?): the fence and the requests issued until then are written, the rest is not', {});
        }
        if (failure !== null) throw failure.e;
        return applied ? { version: null } : null;
      },
      (e) => {
        throw failure !== null ? failure.e : e;
      },
    );
  }

  /**
   * The fence step inside the caller's readwrite IDBTransaction (its scope
   * includes the fence store): reads the fence record on it, decides, and
   * puts the next state on it in the read's callback, so the caller's
   * `await gate.fenceIn(tx, …)` resumes while `tx` is still active. On a
   * refusal it aborts `tx` before the gate throws: nothing the caller wrote
   * in it can commit. INVALID_ARGUMENT for another database's transaction, a
   * readonly one, or one without the fence store.
   */
  fenceIn(handle, key, step) {
    let ok = false;
    try {
      ok = handle !== null && typeof handle === 'object' && handle.db === this.#db && handle.mode === 'readwrite' && handle.objectStoreNames.contains(this.#name);
    } catch {
      ok = false;
    }
    if (!ok) {
      throw invalid(`IndexedDbStore.fenceIn: the handle must be a readwrite transaction of this database over the fence store ${JSON.stringify(this.#name)}`);
    }
    const os = handle.objectStore(this.#name);
    return new Promise((resolve, reject) => {
      const get = os.get(key);
      get.onsuccess = () => {
        try {
          const record = get.result === undefined ? null : get.result;
          const plan = step.decide(record === null ? null : record.state);
          if (plan === null) {
            handle.abort();
          } else {
            os.put({ state: plan.nextStateText, value: record === null ? null : (record.value ?? null) }, key);
          }
          resolve();
        } catch (e) {
          reject(e);
        }
      };
      get.onerror = () => reject(get.error);
    });
  }

  load(key) {
    return new Promise((resolve, reject) => {
      const req = this.#db.transaction(this.#name, 'readonly').objectStore(this.#name).get(key);
      req.onsuccess = () => {
        const r = req.result;
        try {
          resolve(r === undefined ? null : loadedRecord(r.state, null, r.value, this.#decode));
        } catch (e) {
          reject(e);
        }
      };
      req.onerror = () => reject(req.error);
    });
  }
}
