// The state cache (docs/decisions/state-cache.md): a strategy around the store
// driver's loop, for a store with the optional `commitFrom(key, expected,
// nextText, change)`. Per key it keeps the state text and version of the last
// record the driver loaded or committed (LRU by key count). A cached step
// decides from that state and commits with it as the precondition (its state
// text, and the version where the store compares it: docs/stores.md
// "commitFrom"): one `commitFrom`, no `load`. A lost precondition drops the
// entry and runs the loop (load → decide → commitFrom, remembering what it
// wrote). No answer leaves without the store: a decision that writes nothing
// (a refusal, a duplicate) is made again on a fresh load.
import { isThenable, withTimeout, describe, marksCommitUnknown, messageOf, TIMED_OUT, versionOf, answeredVersion } from './common.mjs';

/**
 * Per key, `{ state (text), version }` last loaded or committed. Least
 * recently used goes first, kept cheaply (second chance): a key seen again is
 * only marked `used`; when the cache is over its size, the oldest unmarked key
 * goes and marked ones met on the way move to the newest end, unmarked.
 */
export class StateCache {
  #entries = new Map();
  #size;

  constructor(size) {
    this.#size = size;
  }

  /** The entry of `key` (`{ state, version }`), or undefined. */
  get(key) {
    return this.#entries.get(key);
  }

  /** Records `key`'s state text and version. */
  remember(key, state, version) {
    const entries = this.#entries;
    const entry = entries.get(key);
    if (entry !== undefined) {
      entry.state = state;
      entry.version = version;
      entry.used = true;
      return;
    }
    if (entries.size >= this.#size) {
      // make room first, so the key being added is never the one that goes
      for (const [oldest, e] of entries) {
        entries.delete(oldest);
        if (!e.used) break;
        e.used = false;
        entries.set(oldest, e);
      }
    }
    entries.set(key, { state, version, used: false });
  }

  /** Drops the entry of `key`, or every entry when `key` is undefined. */
  forget(key) {
    if (key === undefined) this.#entries.clear();
    else this.#entries.delete(key);
  }
}

/**
 * The steps of a driver with a state cache. `loop` is the driver's side:
 * `{ store, faults, maxRetries, commitTimeoutMs, transactional, load(ctx, key),
 * release(key, slot), plain(ctx, key, decide, timing), transaction(ctx, key,
 * decide, timing, slot) }` — `plain` the compare-and-set loop without the
 * cache (for a record the cache cannot hold), `transaction` the transaction
 * step of a `textTransaction` store, which remembers what it wrote here.
 */
export class CachedSteps {
  #loop;
  /** The entries (a `StateCache`). */
  entries;

  constructor(size, loop) {
    this.entries = new StateCache(size);
    this.#loop = loop;
  }

  /**
   * One step on `key`, once the step before (`before`, a promise or null)
   * has ended its turn: from the cached state when the step may use it
   * (`cached`: writes, not quarantine) and the key has an entry; else the
   * entry goes and the step runs as `#after` says. An idle key's cached
   * write runs with no async frame of its own. Releases `slot` when it ends.
   */
  run(ctx, key, decide, timing, cached, before, slot) {
    if (before === null && cached) {
      const entry = this.entries.get(key);
      if (entry !== undefined) return this.#fromEntry(ctx, key, decide, timing, entry, slot);
    }
    return this.#later(ctx, key, decide, timing, cached, before, slot);
  }

  async #later(ctx, key, decide, timing, cached, before, slot) {
    if (before !== null) await before.then(idle, idle);
    const entry = cached ? this.entries.get(key) : undefined;
    if (entry !== undefined) return await this.#fromEntry(ctx, key, decide, timing, entry, slot);
    this.entries.forget(key);
    return await this.#after(ctx, key, decide, timing, 0, slot);
  }

  /**
   * A step that does not go (or no longer goes) through the cached state:
   * no entry, a step that may not use it, a decision that writes nothing (a
   * refusal, a duplicate: decided again on the stored state), a lost
   * precondition. The transaction (a transaction store, which then
   * remembers what it wrote), or the compare-and-set rounds with a load,
   * from round `first` (a lost optimistic commit was round 0).
   */
  #after(ctx, key, decide, timing, first, slot) {
    return this.#loop.transactional
      ? this.#loop.transaction(ctx, key, decide, timing, slot)
      : this.#rounds(ctx, key, decide, timing, slot, first);
  }

  /**
   * A step from the cached state `entry`: decide from that state and
   * `commitFrom` with it as the precondition; a synchronous store
   * (SqliteStore) is done at once. A decision that writes nothing, or a lost
   * precondition, drops the entry and goes on as `#after` says; any failure
   * drops it too. Always answers a Promise, and releases `slot` exactly when
   * the step ends.
   */
  #fromEntry(ctx, key, decide, timing, entry, slot) {
    const loop = this.#loop;
    let d;
    let text;
    try {
      d = decide(entry.state);
      text = d.nextText;
    } catch (e) {
      this.entries.forget(key);
      loop.release(key, slot);
      return Promise.reject(e);
    }
    // A refusal, a duplicate: the stored state answers it, so every verdict,
    // marks included, is the one the store's state gives.
    if (text === null) {
      this.entries.forget(key);
      return this.#after(ctx, key, decide, timing, 0, slot);
    }
    const t0 = timing === null ? 0 : performance.now();
    let answer;
    try {
      answer = loop.store.commitFrom(key, entry, text, d.change);
    } catch (cause) {
      this.entries.forget(key);
      loop.release(key, slot);
      return Promise.reject(this.#fault(ctx, cause));
    }
    if (!isThenable(answer)) {
      try {
        return Promise.resolve(this.#entryDone(ctx, key, decide, timing, d, text, answer, t0, slot));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return Promise.resolve(withTimeout(answer, loop.commitTimeoutMs)).then(
      (a) => this.#entryDone(ctx, key, decide, timing, d, text, a, t0, slot),
      (cause) => {
        this.entries.forget(key);
        loop.release(key, slot);
        throw this.#fault(ctx, cause);
      },
    );
  }

  /** A cached step's `commitFrom` answered `answer`: its result (committed), or what follows a lost precondition. */
  #entryDone(ctx, key, decide, timing, d, text, answer, t0, slot) {
    let done;
    try {
      done = this.#committed(ctx, answer, timing, t0);
    } catch (e) {
      this.entries.forget(key);
      this.#loop.release(key, slot);
      throw e;
    }
    if (done !== false) {
      this.entries.remember(key, text, done.version);
      this.#loop.release(key, slot);
      return d.result;
    }
    this.entries.forget(key);
    return this.#after(ctx, key, decide, timing, 1, slot);
  }

  /**
   * The compare-and-set rounds with the cache, after a step that could not
   * use the cached state: each round loads, decides, and commits through
   * `commitFrom` with the loaded state (version and text) as the
   * precondition, remembering what it wrote. Any failure drops the entry; a
   * lost precondition loads again, exactly like the plain loop. `first`: the
   * round this starts at (1 after a lost optimistic commit: it was round 0).
   */
  async #rounds(ctx, key, decide, timing, slot, first) {
    const loop = this.#loop;
    const entries = this.entries;
    try {
      try {
        entries.forget(key);
        for (let attempt = first; attempt <= loop.maxRetries; attempt++) {
          const record = await loop.load(ctx, key);
          const state = loop.faults.record(ctx, record);
          const d = decide(state);
          const version = versionOf(loop.faults, ctx, record);
          // Only text states with a version are cached (the shipped adapters'); another form takes the plain loop.
          const textual = state === null || (typeof state === 'string' && version !== null);
          const text = d.nextText;
          if (text === null) {
            if (textual && state !== null) entries.remember(key, state, version);
            return d.result;
          }
          if (!textual) return await loop.plain(ctx, key, decide, timing);
          const expected = state === null ? null : { version, state };
          const t0 = timing === null ? 0 : performance.now();
          let answer;
          try {
            answer = loop.store.commitFrom(key, expected, text, d.change);
            if (isThenable(answer)) answer = await withTimeout(answer, loop.commitTimeoutMs);
          } catch (cause) {
            throw this.#fault(ctx, cause);
          }
          const done = this.#committed(ctx, answer, timing, t0);
          if (done !== false) {
            entries.remember(key, text, done.version);
            return d.result;
          }
        }
        throw loop.faults.conflict(ctx, 'commit', loop.maxRetries + 1, undefined);
      } catch (e) {
        entries.forget(key); // COMMIT_UNKNOWN, STORE_ERROR, a timeout, anything: the stored state is unknown
        throw e;
      }
    } finally {
      loop.release(key, slot);
    }
  }

  /**
   * `commitFrom`'s answer checked: `{ version }` (committed), false
   * (precondition lost); anything else throws COMMIT_UNKNOWN. `t0`: when it
   * was called (for `timing`).
   */
  #committed(ctx, answer, timing, t0) {
    const { faults, commitTimeoutMs } = this.#loop;
    if (answer === TIMED_OUT) throw faults.unknown(ctx, 'commit', undefined, `no answer within ${commitTimeoutMs} ms`);
    if (timing !== null) timing.commitMs = (timing.commitMs ?? 0) + (performance.now() - t0);
    if (answer === false) return false;
    const written = answeredVersion(answer);
    if (written !== null) return written;
    throw faults.unknown(ctx, 'commit', undefined, `commitFrom returned ${describe(answer)}, not { version } or false`);
  }

  /** The fault of a `commitFrom` that threw: COMMIT_UNKNOWN when it may have committed, else STORE_ERROR. */
  #fault(ctx, cause) {
    const { faults } = this.#loop;
    if (marksCommitUnknown(cause)) return faults.unknown(ctx, 'commit', cause, messageOf(cause));
    return faults.store(ctx, 'commit', cause);
  }
}

const idle = () => {};
