// Host stores written for the issuer tests: plain compare-and-set and
// transaction references (sync and async), fault injection, and a file-backed
// compare-and-set store that several OS processes can share.
import fs from 'node:fs';
import path from 'node:path';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function stored(state) {
  return typeof state === 'string' ? state : JSON.stringify(state);
}

/** Synchronous compare-and-set over a Map; counts commits; state kept as JSON text. */
export class SpyStore {
  records = new Map();
  commits = 0;
  #snapshots = new Map();

  load(key) {
    const r = this.records.get(key);
    return r === undefined ? null : { state: r.state, version: r.version };
  }

  commit(key, expectedVersion, nextState, change) {
    if (change.kind !== 'none') throw new Error(`the issuer must only write state, got change ${change.kind}`);
    const r = this.records.get(key);
    if ((r === undefined ? null : r.version) !== expectedVersion) return false;
    this.records.set(key, { state: JSON.stringify(nextState), version: (r === undefined ? 0 : r.version) + 1 });
    this.commits += 1;
    return true;
  }

  /** The stored text of `key`. */
  raw(key) {
    return this.records.get(key)?.state;
  }

  /** Stores `state` (any value; objects as-is, to test decoding) under `key`. */
  put(key, state) {
    const r = this.records.get(key);
    this.records.set(key, { state, version: (r === undefined ? 0 : r.version) + 1 });
  }

  snapshot(key) {
    this.#snapshots.set(key, this.records.get(key).state);
  }

  /** Restores an old copy of `key` (as a backup restore would: a new version, old content). */
  restore(key) {
    this.put(key, this.#snapshots.get(key));
  }
}

/** The same compare-and-set with Promise-returning callbacks and optional random delays. */
export class AsyncCasStore extends SpyStore {
  constructor(maxDelayMs = 0) {
    super();
    this.maxDelayMs = maxDelayMs;
  }

  async #pause() {
    if (this.maxDelayMs > 0) await sleep(Math.random() * this.maxDelayMs);
    else await null;
  }

  async load(key) {
    await this.#pause();
    return super.load(key);
  }

  async commit(key, expectedVersion, nextState, change) {
    await this.#pause();
    return super.commit(key, expectedVersion, nextState, change);
  }
}

/** Transaction shape over a Map: `fn(state)` runs inside, its result applied atomically. Sync or async. */
export class TxStore {
  records = new Map();
  commits = 0;

  constructor({ async = false } = {}) {
    this.async = async;
  }

  #run(key, fn) {
    const r = this.records.get(key);
    const out = fn(r === undefined ? null : r.state);
    if (out === null || out === undefined) return undefined;
    if (out.change.kind !== 'none') throw new Error('the issuer must only write state');
    this.records.set(key, { state: JSON.stringify(out.nextState), version: (r === undefined ? 0 : r.version) + 1 });
    this.commits += 1;
    return undefined;
  }

  transaction(key, fn) {
    if (!this.async) return this.#run(key, fn);
    return Promise.resolve().then(() => this.#run(key, fn));
  }

  raw(key) {
    return this.records.get(key)?.state;
  }
}

/**
 * Fault injection around an inner store. `plan` is a list consumed one
 * commit (or transaction) at a time; each entry is one of
 *   'ok'             pass through
 *   'throw-before'   throw without writing
 *   'throw-after'    write, then throw (the reply is lost)
 *   'unknown-after'  write, then throw an error marked commitUnknown
 *   'hang'           never answer, never write
 *   'hang-then-write' never answer; write `lateMs` later
 *   'garbage'        write, then answer something that is not true/false
 * Entries past the end of the plan pass through.
 */
export class FaultyStore {
  constructor(inner, plan, { lateMs = 30 } = {}) {
    this.inner = inner;
    this.plan = [...plan];
    this.lateMs = lateMs;
    this.late = [];
    if (typeof inner.load === 'function') this.load = (key) => inner.load(key);
    if (typeof inner.transaction === 'function') {
      this.transaction = (key, fn) => this.#fault(() => inner.transaction(key, fn));
    } else {
      this.commit = (key, expected, next, change) => this.#fault(() => inner.commit(key, expected, next, change));
    }
  }

  #fault(write) {
    const what = this.plan.length > 0 ? this.plan.shift() : 'ok';
    switch (what) {
      case 'ok':
        return write();
      case 'throw-before':
        throw new Error('injected: storage failed before commit');
      case 'throw-after':
        return Promise.resolve(write()).then(() => {
          throw new Error('injected: storage failed after commit (reply lost)');
        });
      case 'unknown-after':
        return Promise.resolve(write()).then(() => {
          throw Object.assign(new Error('injected: connection lost after commit'), { commitUnknown: true });
        });
      case 'hang':
        return new Promise(() => {});
      case 'hang-then-write':
        this.late.push(
          new Promise((resolve) => {
            setTimeout(() => resolve(write()), this.lateMs);
          }),
        );
        return new Promise(() => {});
      case 'garbage':
        return Promise.resolve(write()).then(() => 'yes');
      default:
        throw new Error(`unknown fault ${what}`);
    }
  }
}

/**
 * Compare-and-set over files in `dir`, safe across OS processes and across a
 * process killed at any moment, with no lock: version N of a key is the file
 * `<key>.v<N>.json`, and a commit from version N creates version N + 1 with
 * `link(2)` of a fully written temporary file, which fails when that version
 * exists (the lost compare-and-set). A record is never half-written and never
 * overwritten; the current one is the highest version. Old versions are kept:
 * deleting one would let a commit that read before it was written create it again.
 */
export class FileCasStore {
  constructor(dir) {
    this.dir = dir;
    fs.mkdirSync(dir, { recursive: true });
  }

  #prefix(key) {
    return `${encodeURIComponent(key)}.v`;
  }

  /** The highest version of `key`, or null. */
  #latest(key) {
    const prefix = this.#prefix(key);
    let max = null;
    for (const name of fs.readdirSync(this.dir)) {
      if (!name.startsWith(prefix) || !name.endsWith('.json')) continue;
      const digits = name.slice(prefix.length, -'.json'.length);
      if (!/^[1-9][0-9]*$/.test(digits)) continue;
      const v = Number(digits);
      if (max === null || v > max) max = v;
    }
    return max;
  }

  load(key) {
    const version = this.#latest(key);
    if (version === null) return null;
    const { state, value } = JSON.parse(fs.readFileSync(path.join(this.dir, `${this.#prefix(key)}${version}.json`), 'utf8'));
    return { state, version, value };
  }

  /** Writes `nextState` when the version is still `expectedVersion`. `afterWrite` runs once it is written, before the call returns (fault hook). */
  async commit(key, expectedVersion, nextState, change, afterWrite) {
    const current = this.load(key);
    if ((current === null ? null : current.version) !== expectedVersion) return false;
    const version = (current === null ? 0 : current.version) + 1;
    let value = current === null ? undefined : current.value;
    if (change.kind === 'set') value = change.value;
    else if (change.kind === 'delete') value = undefined;
    const target = path.join(this.dir, `${this.#prefix(key)}${version}.json`);
    const tmp = path.join(this.dir, `.tmp.${process.pid}.${Math.random().toString(36).slice(2)}`);
    fs.writeFileSync(tmp, JSON.stringify({ state: JSON.stringify(nextState), value }));
    try {
      fs.linkSync(tmp, target);
    } catch (e) {
      if (e.code === 'EEXIST') return false; // another process committed version N + 1 first
      throw e;
    } finally {
      fs.rmSync(tmp, { force: true });
    }
    if (afterWrite) afterWrite();
    return true;
  }
}
