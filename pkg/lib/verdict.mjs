// Verdict shaping and the audit trail, shared by MemoryGate and Gate.
import { CODES, DUPLICATE, TABLES } from './runtime.mjs';
import { invalid, wellFormed } from './common.mjs';


/** The verdict object for a status. */
export function shape(key, status, token, markBefore, markAfter) {
  if (status >= DUPLICATE) {
    return { key, ok: true, outcome: 'duplicate', code: null, original: status === DUPLICATE ? 'advance' : 'accept', token, markBefore, markAfter };
  }
  const rejected = status >= 2;
  return {
    key,
    ok: !rejected,
    outcome: rejected ? 'reject' : status === 0 ? 'advance' : 'accept',
    code: rejected ? CODES[status - 2] : null,
    token,
    markBefore,
    markAfter,
  };
}

const utf8 = new TextEncoder();

/**
 * An operation's fingerprint as bytes (hashed in Wasm): a well-formed string
 * (its UTF-8), a Uint8Array, or an ArrayBuffer; undefined when absent.
 */
function fingerprintOf(fingerprint) {
  if (fingerprint === undefined) return undefined;
  if (typeof fingerprint === 'string') {
    if (!wellFormed(fingerprint)) throw invalid('fingerprint must be a well-formed string (no lone surrogates)');
    return utf8.encode(fingerprint);
  }
  if (fingerprint instanceof Uint8Array) return fingerprint;
  if (fingerprint instanceof ArrayBuffer) return new Uint8Array(fingerprint);
  throw invalid('fingerprint must be a string, a Uint8Array or an ArrayBuffer', { fingerprint });
}

/**
 * Per-operation options `{ opId, holder, fingerprint }` → `{ opId, holder,
 * fingerprint }` (the fingerprint as bytes) or null when none is given.
 * Contents are checked in Wasm (`__meta`); a fingerprint needs an opId.
 */
export function metaOf(options) {
  if (options === undefined || options === null) return null;
  if (typeof options !== 'object') throw invalid('operation options must be an object { opId, holder, fingerprint }', { options });
  const { opId, holder } = options;
  if (opId !== undefined && !wellFormed(opId)) throw invalid('opId must be a well-formed string', { opId });
  if (holder !== undefined && !wellFormed(holder)) throw invalid('holder must be a well-formed string', { holder });
  const fingerprint = fingerprintOf(options.fingerprint);
  if (fingerprint !== undefined && opId === undefined) throw invalid('a fingerprint belongs to an operation id: pass opId with it');
  if (opId === undefined && holder === undefined) return null;
  return { opId, holder, fingerprint };
}

/** The gate option `opWindow` (operation ids kept per key and epoch): 1..=maxWindow (1024), default defaultWindow (64). */
export function windowOf(options) {
  const { maxWindow, defaultWindow } = TABLES;
  const w = options?.opWindow ?? defaultWindow;
  if (!Number.isSafeInteger(w) || w < 1 || w > maxWindow) throw invalid(`opWindow must be an integer in 1..=${maxWindow}`, { opWindow: w });
  return w;
}

/** The gate option `onVerdict`: a function or undefined. */
export function auditOf(options) {
  const f = options?.onVerdict;
  if (f !== undefined && typeof f !== 'function') throw invalid('onVerdict must be a function', { onVerdict: f });
  return f ?? null;
}

/** Counters per outcome and per code, and the audit callback; its failures never change a verdict. */
export class Observer {
  #onVerdict;
  #counts = { total: 0, advance: 0, accept: 0, reject: 0, duplicate: 0, auditErrors: 0, codes: {} };

  constructor(onVerdict) {
    this.#onVerdict = onVerdict;
  }

  /** Whether operations should be timed: only when someone receives the audit records. */
  get timed() {
    return this.#onVerdict !== null;
  }

  /**
   * Counts `v` and reports it to the audit callback (errors and rejections of
   * the callback are swallowed and counted). `started`: `performance.now()` at
   * the call (when `timed`); `commitMs`: milliseconds spent in the host's
   * commit/transaction callbacks, or null when none was asked to commit.
   */
  record(v, operation, meta, started = null, commitMs = null) {
    const c = this.#counts;
    c.total++;
    c[v.outcome]++;
    if (v.code !== null) c.codes[v.code] = (c.codes[v.code] ?? 0) + 1;
    if (this.#onVerdict === null) return;
    const entry = {
      key: v.key, operation, outcome: v.outcome, code: v.code, token: v.token,
      markBefore: v.markBefore, markAfter: v.markAfter,
      holder: meta?.holder ?? v.claims?.leaseId ?? null, opId: meta?.opId ?? null,
      durationMs: started === null ? null : performance.now() - started, commitMs,
    };
    try {
      const r = this.#onVerdict(entry);
      if (r !== null && typeof r === 'object' && typeof r.then === 'function') {
        r.then(undefined, () => { this.#counts.auditErrors++; });
      }
    } catch {
      c.auditErrors++;
    }
  }

  /** A snapshot: `{ total, advance, accept, reject, duplicate, auditErrors, codes: { CODE: n } }`. */
  counters() {
    return { ...this.#counts, codes: { ...this.#counts.codes } };
  }
}
