// What MemoryGate and Gate share around a decision: the operation options,
// the plain policy handle and the audit trail. The request
// and the answer cross in pkg/lib/exchange.mjs.
import * as wasm from '../dist/fencegate.js';
import { CODES, DUPLICATE, TABLES } from './runtime.mjs';
import { invalid, wellFormed, checkOptions, unreadable, plainObject, describeKind } from './common.mjs';
import { FencegateError } from './errors.mjs';

/** The names of a write/establish/delete's options. */
const OP_OPTIONS = ['opId', 'holder', 'fingerprint'];

/**
 * `token`, with strings longer than any valid fg1 text (src/signed.rs
 * MAX_TEXT_LEN) cut to one unit more before they enter Wasm: still refused
 * (MALFORMED_TOKEN), but a huge header cannot grow Wasm memory, which never
 * shrinks.
 */
export function bounded(token) {
  const max = TABLES.maxTokenText;
  return typeof token === 'string' && token.length > max ? token.slice(0, max + 1) : token;
}

let plain = null;

/** The shared plain policy handle (no keys, `adopt`) that gates without policy options decide under; never freed. */
export function plainPolicy() {
  if (plain === null) plain = new wasm.RawPolicy(false, TABLES.higherEpochModes.indexOf('adopt'), undefined);
  return plain;
}

const utf8 = new TextEncoder();

/**
 * An operation's fingerprint as bytes (hashed in Wasm): a well-formed string
 * (its UTF-8), a Uint8Array, or an ArrayBuffer; undefined when absent.
 */
function fingerprintOf(fingerprint) {
  if (fingerprint === undefined) return undefined;
  let bytes;
  if (typeof fingerprint === 'string') {
    if (!wellFormed(fingerprint)) throw invalid('fingerprint must be a well-formed string (no lone surrogates)');
    if (fingerprint.length > TABLES.maxFingerprintInput) throw tooLong(fingerprint.length);
    bytes = utf8.encode(fingerprint);
  } else if (fingerprint instanceof Uint8Array || fingerprint instanceof ArrayBuffer) {
    // A detached buffer (transferred, or its ArrayBuffer resized away) has no bytes to hash.
    const buffer = fingerprint instanceof ArrayBuffer ? fingerprint : fingerprint.buffer;
    if (buffer.detached === true || (fingerprint.byteLength === 0 && isDetached(buffer))) {
      throw invalid('fingerprint is (a view of) a detached ArrayBuffer: it has no bytes to hash');
    }
    bytes = fingerprint instanceof ArrayBuffer ? new Uint8Array(fingerprint) : fingerprint;
  } else {
    throw invalid('fingerprint must be a string, a Uint8Array or an ArrayBuffer', { fingerprint });
  }
  if (bytes.length > TABLES.maxFingerprintInput) throw tooLong(bytes.length);
  return bytes;
}

/** INVALID_ARGUMENT for a fingerprint over `maxFingerprintInput` bytes. */
function tooLong(bytes) {
  return invalid(`fingerprint is at most ${TABLES.maxFingerprintInput} bytes (hash a larger body yourself and pass the digest)`, { fingerprintBytes: bytes });
}

/** Whether `buffer` is detached, on runtimes without `ArrayBuffer.prototype.detached` (Node 18, 20). */
function isDetached(buffer) {
  try {
    new Uint8Array(buffer, 0, 0);
    return false;
  } catch {
    return true;
  }
}

/**
 * Per-operation options `{ opId, holder, fingerprint }` → `{ opId, holder,
 * fingerprint }` (the fingerprint as bytes) or null when none is given.
 * Contents are checked in Wasm (with the decision); a fingerprint needs an opId.
 */
export function metaOf(options) {
  if (options === undefined || options === null) return null;
  let opId, holder, fingerprintIn;
  try {
    // An array, Map, Date… is refused: `for…in` sees none of a Map's entries, so its `opId` would be ignored.
    if (!plainObject(options)) throw invalid(`operation options must be a plain object { opId, holder, fingerprint }, got ${describeKind(options)}`, { options });
    // An unknown name (a typo such as `opid`) must not silently turn de-duplication or the holder check off.
    for (const name in options) {
      if (name !== 'opId' && name !== 'holder' && name !== 'fingerprint') checkOptions(options, OP_OPTIONS, 'operation');
    }
    ({ opId, holder, fingerprint: fingerprintIn } = options);
  } catch (e) {
    if (e instanceof FencegateError) throw e;
    throw unreadable('operation', e); // a getter or Proxy trap that threw: nothing decided, nothing changed
  }
  if (opId !== undefined && !wellFormed(opId)) throw invalid('opId must be a well-formed string', { opId });
  if (holder !== undefined && !wellFormed(holder)) throw invalid('holder must be a well-formed string', { holder });
  const fingerprint = fingerprintOf(fingerprintIn);
  if (fingerprint !== undefined && opId === undefined) throw invalid('a fingerprint belongs to an operation id: pass opId with it');
  if (opId === undefined && holder === undefined) return null;
  return { opId, holder, fingerprint };
}

/** INVALID_ARGUMENT for an `opId` given to establish, which changes no data and so has nothing to de-duplicate. */
export function establishOpId(key) {
  return invalid('establish takes no opId: it changes no data, so there is nothing to de-duplicate (a repeated establish of the same epoch is accepted anyway); pass only holder', { key, option: 'opId' });
}

/** The gate option `opWindow` (operation ids kept per key and epoch): 1..=maxWindow (1024), default defaultWindow (64). */
export function windowOf(options) {
  const { maxWindow, defaultWindow } = TABLES;
  const w = options?.opWindow ?? defaultWindow;
  if (!Number.isSafeInteger(w) || w < 1 || w > maxWindow) throw invalid(`opWindow must be an integer in 1 to ${maxWindow}`, { opWindow: w });
  return w;
}

/** The gate option `onVerdict`: a function or undefined. */
export function auditOf(options) {
  const f = options?.onVerdict;
  if (f !== undefined && typeof f !== 'function') throw invalid('onVerdict must be a function', { onVerdict: f });
  return f ?? null;
}

/** The status of a verdict object (what the decision returned: 0 advance, 1 accept, 2 + code index, DUPLICATE + 0/1). */
function statusOf(v) {
  switch (v.outcome) {
    case 'advance': return 0;
    case 'accept': return 1;
    case 'duplicate': return v.original === 'advance' ? DUPLICATE : DUPLICATE + 1;
    default: return 2 + CODES.indexOf(v.code);
  }
}

/** verdict → the holder its operation bound, as the decision in Rust answered it (gates with a policy: signed tokens). */
const BOUND = new WeakMap();

/** Remembers the holder `v`'s operation bound (exchange.mjs `readBoundHolder`), for its audit record. */
export function bindHolder(v, holder) {
  BOUND.set(v, holder);
}

/** The holder of an audit record: what the decision bound, else the operation's own `holder` (a plain token binds nothing else). */
function holderOf(v, meta) {
  return BOUND.has(v) ? BOUND.get(v) : (meta?.holder ?? null);
}

/**
 * Counters per outcome and per code, and the audit callback; its failures
 * never change a verdict. Counted by status in one array (an outcome name or
 * code as a property key cost a keyed store per decision); `counters()`
 * spells the names.
 */
export class Observer {
  #onVerdict;
  /** Decisions per status (0, 1, 2 + code index, DUPLICATE, DUPLICATE + 1). */
  #byStatus = new Array(DUPLICATE + 2).fill(0);
  /** Code indexes in the order they were first counted (the order of `codes`). */
  #codeOrder = [];
  #auditErrors = 0;

  constructor(onVerdict) {
    this.#onVerdict = onVerdict;
  }

  /** Whether operations should be timed: only when someone receives the audit records. */
  get timed() {
    return this.#onVerdict !== null;
  }

  /** Counts one decision by its status (no audit record: for callers that know nobody listens). */
  count(status) {
    if (this.#byStatus[status]++ === 0 && status >= 2 && status < DUPLICATE) this.#codeOrder.push(status - 2);
  }

  /**
   * Counts `v` and reports it to the audit callback (errors and rejections of
   * the callback are swallowed and counted). `started`: `performance.now()` at
   * the call (when `timed`); `commitMs`: milliseconds spent in the host's
   * commit/transaction callbacks, or null when none was asked to commit;
   * `status`: the decision's status when the caller has it.
   */
  record(v, operation, meta, started = null, commitMs = null, status = statusOf(v)) {
    this.count(status);
    if (this.#onVerdict === null) return;
    const entry = {
      key: v.key, operation, outcome: v.outcome, code: v.code, token: v.token,
      markBefore: v.markBefore, markAfter: v.markAfter,
      holder: holderOf(v, meta), opId: meta?.opId ?? null,
      durationMs: started === null ? null : performance.now() - started, commitMs,
    };
    try {
      const r = this.#onVerdict(entry);
      if (r !== null && typeof r === 'object' && typeof r.then === 'function') {
        r.then(undefined, () => { this.#auditErrors++; });
      }
    } catch {
      this.#auditErrors++;
    }
  }

  /** A snapshot: `{ total, advance, accept, reject, duplicate, auditErrors, codes: { CODE: n } }`. */
  counters() {
    const n = this.#byStatus;
    const codes = {};
    let reject = 0;
    for (const i of this.#codeOrder) {
      codes[CODES[i]] = n[i + 2];
      reject += n[i + 2];
    }
    const duplicate = n[DUPLICATE] + n[DUPLICATE + 1];
    return { total: n[0] + n[1] + reject + duplicate, advance: n[0], accept: n[1], reject, duplicate, auditErrors: this.#auditErrors, codes };
  }
}
