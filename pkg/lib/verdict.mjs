// One decision request and its result, shared by MemoryGate and Gate: the
// request packed for the single Wasm entry, the verdict, claims and next state
// read from the output scratch; and the audit trail.
import * as wasm from '../dist/fencegate.js';
import { CODES, DUPLICATE, TABLES, REQUEST_FLAGS, lastMarks, exactMarks, wasmText, writeInput } from './runtime.mjs';
import { MAX_U64, invalid, wellFormed, checkOptions, unreadable, plainObject, describeKind } from './common.mjs';
import { FencegateError } from './errors.mjs';

/** The names of a write/establish/delete's options. */
const OP_OPTIONS = ['opId', 'holder', 'fingerprint'];

/** Request flag bits (src/wasm/resource.rs `REQUEST_FLAGS`, checked at start-up). */
const FLAG = Object.fromEntries(REQUEST_FLAGS.map((name, i) => [name, 1 << i]));
export const ESTABLISH = FLAG.establish;
export const STRICT = FLAG.strict;
const { state: STATE, exact: EXACT, text: TEXT, other: OTHER, opId: OP_ID, holder: HOLDER } = FLAG;
const { ceiling: CEILING, ceilingExact: CEILING_EXACT, fingerprint: FINGERPRINT } = FLAG;
export const HOST_VERIFIED = FLAG.hostVerified;
export { EXACT };

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

/**
 * The request of one decision, packed for the single entry
 * (`RawMemoryGate.apply`, `__gate_decide`; src/wasm/resource.rs `Request`): the
 * token in its lane (a number; a bigint in 0..=2^64−1 as `exact`; a string
 * as `text` when the gate has a policy, which then needs `scope`; any other
 * value as `other`: missing or malformed), and every text as one string
 * (token text, scope, opId, holder, stored state; lengths in UTF-16 units)
 * followed by the fingerprint's bytes, written to the Wasm input buffer, so
 * the deciding call carries them all. One object, refilled by every call: it
 * is read right away, with no await in between.
 */
export const REQ = { flags: 0, number: 0, exact: 0n, textBytes: 0, tokenLen: 0, scopeLen: 0, opLen: 0, holderLen: 0, fingerprintBytes: 0, ceiling: -1, ceilingExact: 0n };

/** Fills `REQ`: `scope` null = no policy (a string token is then malformed); `state` null/undefined = none. */
export function pack(flags, token, scope, meta, state) {
  const r = REQ;
  let text = '';
  r.number = 0;
  r.exact = 0n;
  r.tokenLen = 0;
  r.scopeLen = 0;
  r.opLen = 0;
  r.holderLen = 0;
  r.fingerprintBytes = 0;
  let fingerprint;
  if (typeof token === 'number') r.number = token;
  else if (typeof token === 'bigint' && token >= 0n && token <= MAX_U64) {
    flags |= EXACT;
    r.exact = token;
  } else if (typeof token === 'string' && scope !== null) {
    flags |= TEXT;
    const t = bounded(token);
    text = t + scope;
    r.tokenLen = t.length;
    r.scopeLen = scope.length;
  } else {
    // Any other value: missing (undefined, null) or malformed; the verdict carries only the code.
    flags |= OTHER;
    r.number = token === undefined || token === null ? 0 : 1;
  }
  if (meta !== null) {
    if (meta.opId !== undefined) {
      flags |= OP_ID;
      text += meta.opId;
      r.opLen = meta.opId.length;
    }
    if (meta.holder !== undefined) {
      flags |= HOLDER;
      text += meta.holder;
      r.holderLen = meta.holder.length;
    }
    fingerprint = meta.fingerprint;
    if (fingerprint !== undefined) {
      flags |= FINGERPRINT;
      r.fingerprintBytes = fingerprint.length;
    }
  }
  if (state !== null && state !== undefined) {
    flags |= STATE;
    text += state;
  }
  r.flags = flags;
  r.textBytes = flags === (flags & (ESTABLISH | STRICT | EXACT | OTHER)) ? 0 : writeInput(text, fingerprint);
  return r;
}

/** Adds this decision's reject-future ceiling (already validated: null, a number or a bigint) to `REQ`. */
export function packCeiling(ceiling) {
  const r = REQ;
  r.flags |= CEILING;
  r.ceiling = -1;
  r.ceilingExact = 0n;
  if (typeof ceiling === 'number') r.ceiling = ceiling;
  else if (typeof ceiling === 'bigint') {
    r.flags |= CEILING_EXACT;
    r.ceilingExact = ceiling;
  }
}

let plain = null;

/** The shared plain policy handle (no keys, `adopt`) that gates without policy options decide under; never freed. */
export function plainPolicy() {
  if (plain === null) plain = new wasm.RawPolicy(false, TABLES.higherEpochModes.indexOf('adopt'), undefined);
  return plain;
}

/** An epoch from the scratch: slot `i` (f64, −1 above 2^53−1) or its exact u64 at `i + 1`; −2: null. */
function epochAt(m, i) {
  const n = m[i];
  return n >= 0 ? n : n === -1 ? exactMarks()[i + 1] : null;
}

/** `[markBefore, markAfter]` of the last binding call (exact bigints above 2^53−1). */
export function marksOut() {
  const m = lastMarks();
  return [m[0] >= 0 ? m[0] : exactMarks()[2], m[1] >= 0 ? m[1] : exactMarks()[3]];
}

/**
 * The verdict of the last decision, for `status`. `token` is what was
 * presented: a bigint above 2^53−1 that the decision validated is its own
 * canonical form, so it is not read back.
 */
export function verdictOut(key, status, token) {
  const m = lastMarks();
  const t = m[5] === -1 && typeof token === 'bigint' ? token : epochAt(m, 5);
  return verdictFor(key, status, t, m[0] >= 0 ? m[0] : exactMarks()[2], m[1] >= 0 ? m[1] : exactMarks()[3]);
}

/** The claims of the token the last decision (or verification) verified, or null. */
export function claimsOut() {
  const m = lastMarks();
  const alg = m[7];
  if (alg === 0) return null;
  const text = wasmText(m[14], m[15]);
  const k = m[8];
  const s = k + m[9];
  return {
    alg: TABLES.algorithms[alg],
    kid: text.slice(0, k),
    scope: text.slice(k, s),
    epoch: epochAt(m, 10),
    leaseId: text.slice(s),
    generation: epochAt(m, 12),
  };
}

/** The next state to commit after the last decision: null when it does not apply; format v1 spelled here from `markAfter`. */
export function nextOut(status, markAfter) {
  if (status >= 2) return null;
  const m = lastMarks();
  const n = m[16];
  // Plain format v1, spelled exactly as the Rust encoder writes it (the state-format tests compare them).
  if (n === 0) return `{"v":1,"mark":"${markAfter}"}`;
  return wasmText(m[14] + m[15], n);
}

/**
 * A driver step (`StoreDriver.run`'s `decide` answer) whose next state is the
 * text `nextText` (null: nothing to write): stores that take text (the
 * shipped SQL, Redis and etcd stores, `commitFrom`) get the text as it came
 * from Wasm; the object form `next` (what `commit` and a host transaction's
 * `nextState` hand to user stores) is parsed only when something reads it.
 */
export function stepOf(result, nextText, change) {
  return new Step(result, nextText, change);
}

/**
 * A driver step: a class with `next` on its prototype, so a step costs one
 * small object per write (an object literal with its own getter costs a
 * closure, its context and an accessor pair each time).
 */
class Step {
  constructor(result, nextText, change) {
    this.result = result;
    this.nextText = nextText;
    this.change = change;
    this.parsed = undefined;
  }

  /** The next state's object form (null: nothing to write), parsed from `nextText` on first read. */
  get next() {
    if (this.nextText === null) return null;
    return (this.parsed ??= JSON.parse(this.nextText));
  }
}

/** The verdict object for a status. */
export function verdictFor(key, status, token, markBefore, markAfter) {
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

/**
 * The holder an operation binds: a verified signed token's non-empty lease id,
 * else the operation's own `holder`, else null. The same definition as the
 * gate's in Rust (`OpMeta::claimed_by`; docs/signed-tokens.md, "The lease id
 * in a token"): an empty lease id binds nothing.
 */
export function boundHolder(claims, meta) {
  const leaseId = claims?.leaseId;
  return typeof leaseId === 'string' && leaseId !== '' ? leaseId : (meta?.holder ?? null);
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
      holder: boundHolder(v.claims, meta), opId: meta?.opId ?? null,
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
