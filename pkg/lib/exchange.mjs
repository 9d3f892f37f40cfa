// The exchange (decision record docs/decisions/typed-exchange.md): how one
// decision crosses into Wasm and back in one call. The layout is Rust's
// (src/wasm/exchange.rs `RequestHead`, `DecisionHead`), read by name from
// `__tables().layout` at start-up; this module writes a request's fields and
// texts into the exchange buffer before the deciding call and reads the
// answer after it. Nothing here decides anything.
import { __exchangeBuffer, __decisionHead } from '../dist/fencegate.js';

/** The largest u64 epoch: a bigint token above it is malformed. */
export const MAX_U64 = 0xffff_ffff_ffff_ffffn;

/** The field types this module reads and writes, checked against Rust's at start-up. */
const REQUEST = {
  number: 'f64', exact: 'u64', ceilingNumber: 'f64', ceilingExact: 'u64', slot: 'u32', window: 'u32',
  tokenTextBytes: 'u32', scopeBytes: 'u32', opIdBytes: 'u32', holderBytes: 'u32', stateBytes: 'u32', fingerprintBytes: 'u32',
  establish: 'u8', strict: 'u8', tokenKind: 'u8', ceilingKind: 'u8', hasOpId: 'u8', hasHolder: 'u8', hasState: 'u8', hasFingerprint: 'u8',
};
const DECISION = {
  markBefore: 'u64', markAfter: 'u64', token: 'u64', claimsEpoch: 'u64', claimsGeneration: 'u64',
  status: 'u32', kidBytes: 'u32', scopeBytes: 'u32', leaseIdBytes: 'u32', claimsTextBytes: 'u32', nextBytes: 'u32', boundHolderBytes: 'u32', textPtr: 'u32',
  outcome: 'u8', originalAdvanced: 'u8', code: 'u8', alg: 'u8', hasToken: 'u8', hasClaims: 'u8', hasNext: 'u8', hasFloor: 'u8',
};

let memory = null;
let layout = null;
/** Offsets: `R.name` of a request field, `D.name` of a decision field, in bytes. */
let R = null;
let D = null;
/** The kind indexes: `KIND.number` … (`tokenKinds`), `CEILING.policy` … (`ceilingKinds`). */
let KIND = null;
let CEILING = null;
let OUTCOMES = null;
let CODES = null;
let ALGORITHMS = null;

/** The request buffer (sized on the first request) and its views. */
let base = 0;
let capacity = 0;
let u8 = new Uint8Array(0);
let u32 = new Uint32Array(0);
let f64 = new Float64Array(0);
let u64 = new BigUint64Array(0);
/** The answer (`DecisionHead`, at a fixed address) and its views. */
let answer = 0;
let a8 = new Uint8Array(0);
let a32 = new Uint32Array(0);

/** Binds the exchange to an instantiated module: its memory and `__tables()` (throws when lib/ and the .wasm differ). */
export function attachExchange(exports, tables) {
  memory = exports.memory;
  layout = tables.layout;
  R = offsets(layout.request, REQUEST, 'request');
  D = offsets(layout.decision, DECISION, 'decision');
  KIND = Object.fromEntries(layout.tokenKinds.map((k, i) => [k, i]));
  CEILING = Object.fromEntries(layout.ceilingKinds.map((k, i) => [k, i]));
  OUTCOMES = tables.outcomes;
  CODES = tables.codes;
  ALGORITHMS = tables.algorithms;
  answer = __decisionHead();
}

/**
 * `{ name: offset }` of a head, after checking that every field this module
 * uses has the type it expects. A copy of the `expected` literal with its
 * values replaced, so V8 keeps it in fast mode (one built by keyed stores
 * from `{}` turns into a dictionary, and every field access into a lookup).
 */
function offsets(head, expected, what) {
  const out = { ...expected };
  for (const name in expected) {
    const field = head.fields[name];
    if (field === undefined || field[1] !== expected[name]) throw new Error(`fencegate: pkg/lib does not match the Wasm build (the ${what} field ${name})`);
    out[name] = field[0];
  }
  return out;
}

/** Makes the exchange buffer at least `bytes` long (asks Wasm only when it has less) and the views current. */
function reserve(bytes) {
  if (bytes > capacity) {
    // Doubling, but never more than 64 MiB of spare room (a request is bounded:
    // maxFingerprintInput, maxStateText); the capacity is what Wasm has given.
    const cap = Math.max(bytes, Math.min(capacity * 2, bytes + (64 << 20)), 4096);
    base = __exchangeBuffer(cap);
    capacity = cap;
    u8 = new Uint8Array(0);
  }
  if (u8.length === 0) views(); // new, or detached by memory growth
}

function views() {
  const buffer = memory.buffer;
  u8 = new Uint8Array(buffer, base, capacity);
  u32 = new Uint32Array(buffer, base, capacity >> 2);
  f64 = new Float64Array(buffer, base, capacity >> 3);
  u64 = new BigUint64Array(buffer, base, capacity >> 3);
}

/** The answer's views (re-made when memory growth detached them). */
function current() {
  if (a8.length === 0) {
    a8 = new Uint8Array(memory.buffer, answer, layout.decision.size);
    a32 = new Uint32Array(memory.buffer, answer, layout.decision.size >> 2);
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Writes `text` (UTF-8) at byte `at` of the buffer; returns its length in bytes. ASCII is copied unit by unit. */
function putText(text, at) {
  const n = text.length;
  let i = 0;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x7f) break;
    u8[at + i] = c;
  }
  if (i < n) i += encoder.encodeInto(text.slice(i), u8.subarray(at + i)).written;
  return i;
}

/**
 * Writes one decision request (src/wasm/exchange.rs `RequestHead` and its
 * texts). `token` is as presented: a number, a bigint in 0..=2^64−1, a
 * signed token's text when `scope` is a string (a gate with a policy; the
 * text already `bounded`), anything else missing (undefined, null) or
 * malformed. `meta`: `{ opId, holder, fingerprint }` (fingerprint as bytes)
 * or null; `state`: the stored state's text or null; `ceiling`: undefined
 * for the policy's own, else null, a number or a bigint (validated).
 */
export function writeRequest(slot, establish, strict, token, scope, hostVerified, meta, state, ceiling, window) {
  const opId = meta?.opId;
  const holder = meta?.holder;
  const fingerprint = meta?.fingerprint;
  const signed = typeof token === 'string' && scope !== null;
  const textUnits = (signed ? token.length + scope.length : 0) + (opId?.length ?? 0) + (holder?.length ?? 0) + (state?.length ?? 0);
  reserve(layout.request.size + textUnits * 3 + (fingerprint?.length ?? 0));
  // A field Rust does not read for this kind (the token's other lane, an unused ceiling) is left as it was.
  let kind;
  if (typeof token === 'number') {
    kind = KIND.number;
    f64[R.number >> 3] = token;
  } else if (typeof token === 'bigint' && token >= 0n && token <= MAX_U64) {
    kind = KIND.exact;
    u64[R.exact >> 3] = token;
  } else if (signed) {
    kind = hostVerified ? KIND.hostVerified : KIND.signed;
  } else {
    kind = token === undefined || token === null ? KIND.missing : KIND.malformed;
  }
  u8[R.tokenKind] = kind;
  if (ceiling === undefined) u8[R.ceilingKind] = CEILING.policy;
  else if (ceiling === null) u8[R.ceilingKind] = CEILING.none;
  else if (typeof ceiling === 'number') {
    u8[R.ceilingKind] = CEILING.number;
    f64[R.ceilingNumber >> 3] = ceiling;
  } else {
    u8[R.ceilingKind] = CEILING.exact;
    u64[R.ceilingExact >> 3] = ceiling;
  }
  u32[R.slot >> 2] = slot;
  u32[R.window >> 2] = window;
  u8[R.establish] = establish ? 1 : 0;
  u8[R.strict] = strict ? 1 : 0;
  let at = layout.request.size;
  at = putField(signed ? token : undefined, -1, R.tokenTextBytes, at);
  at = putField(signed ? scope : undefined, -1, R.scopeBytes, at);
  at = putField(opId, R.hasOpId, R.opIdBytes, at);
  at = putField(holder, R.hasHolder, R.holderBytes, at);
  at = putField(state ?? undefined, R.hasState, R.stateBytes, at);
  u8[R.hasFingerprint] = fingerprint === undefined ? 0 : 1;
  if (fingerprint !== undefined) u8.set(fingerprint, at);
  u32[R.fingerprintBytes >> 2] = fingerprint?.length ?? 0;
}

/**
 * Writes one optional text of a request at byte `at`: its `has…` flag (at
 * offset `has`; −1: the field has none), its UTF-8 length (at offset
 * `bytes`) and its bytes. Returns where the next text goes.
 */
function putField(text, has, bytes, at) {
  if (has >= 0) u8[has] = text === undefined ? 0 : 1;
  const n = text === undefined ? 0 : putText(text, at);
  u32[bytes >> 2] = n;
  return at + n;
}

/** The u64 epoch at byte `offset` of the answer: a number when ≤ 2^53−1, a bigint above. */
function epochAt(offset) {
  const lo = a32[offset >> 2];
  const hi = a32[(offset >> 2) + 1];
  return hi < 0x200000 ? hi * 4294967296 + lo : (BigInt(hi) << 32n) | BigInt(lo);
}

/**
 * The verdict of the last decision (src/wasm/exchange.rs `DecisionHead`):
 * `{ key, ok, outcome, code, token, markBefore, markAfter }`, and `original`
 * for a duplicate. `token` is what was presented: a number or a bigint
 * that the decision validated is its own canonical form when it is above
 * 2^53−1, so no second bigint is made.
 */
export function readVerdict(key, token) {
  current();
  const outcome = OUTCOMES[a8[D.outcome]];
  const valid = a8[D.hasToken] === 1;
  const t = !valid ? null : typeof token === 'bigint' && token > 0x1fffffffffffffn ? token : epochAt(D.token);
  const markBefore = epochAt(D.markBefore);
  const markAfter = epochAt(D.markAfter);
  if (outcome === 'duplicate') {
    return { key, ok: true, outcome, code: null, original: a8[D.originalAdvanced] === 1 ? 'advance' : 'accept', token: t, markBefore, markAfter };
  }
  const rejected = outcome === 'reject';
  return { key, ok: !rejected, outcome, code: rejected ? CODES[a8[D.code]] : null, token: t, markBefore, markAfter };
}

/**
 * The verdict of a number-token decision (MemoryGate's numeric lane): as
 * `readVerdict`, with the token the number itself when valid (a number's
 * canonical form is itself).
 */
export function readNumberVerdict(key, token, status) {
  current();
  const ok = status < 2;
  const t = a8[D.hasToken] === 1 ? token : null;
  const markBefore = a32[(D.markBefore >> 2) + 1] === 0 ? a32[D.markBefore >> 2] : epochAt(D.markBefore);
  const markAfter = a32[(D.markAfter >> 2) + 1] === 0 ? a32[D.markAfter >> 2] : epochAt(D.markAfter);
  return { key, ok, outcome: OUTCOMES[a8[D.outcome]], code: ok ? null : CODES[a8[D.code]], token: t, markBefore, markAfter };
}

/** The UTF-8 text of `bytes` bytes at `ptr` in Wasm memory. */
function textAt(ptr, bytes) {
  return bytes === 0 ? '' : decoder.decode(new Uint8Array(memory.buffer, ptr, bytes));
}

/** The claims of the token the last decision (or verification) verified: `{ alg, kid, scope, epoch, leaseId, generation }`, or null. */
export function readClaims() {
  current();
  if (a8[D.hasClaims] === 0) return null;
  const ptr = a32[D.textPtr >> 2];
  const kid = a32[D.kidBytes >> 2];
  const scope = a32[D.scopeBytes >> 2];
  return {
    alg: ALGORITHMS[a8[D.alg]],
    kid: textAt(ptr, kid),
    scope: textAt(ptr + kid, scope),
    epoch: epochAt(D.claimsEpoch),
    leaseId: textAt(ptr + kid + scope, a32[D.leaseIdBytes >> 2]),
    generation: epochAt(D.claimsGeneration),
  };
}

/** The next state's JSON text to commit after the last decision (as Rust wrote it), or null when nothing applies. */
export function readNext() {
  current();
  if (a8[D.hasNext] === 0) return null;
  return textAt(a32[D.textPtr >> 2] + a32[D.claimsTextBytes >> 2], a32[D.nextBytes >> 2]);
}

/** The holder the last decision's operation binds (a verified token's non-empty lease id, else its own holder), or null. */
export function readBoundHolder() {
  current();
  const n = a32[D.boundHolderBytes >> 2];
  return n === 0 ? null : textAt(a32[D.textPtr >> 2] + a32[D.claimsTextBytes >> 2] + a32[D.nextBytes >> 2], n);
}

/** `[markBefore, markAfter]` of the last answer (quarantine; inspect: the mark and the floor). */
export function readMarks() {
  current();
  return [epochAt(D.markBefore), epochAt(D.markAfter)];
}

/** Whether the last inspect found a quarantine floor (its `markAfter`). */
export function readHasFloor() {
  current();
  return a8[D.hasFloor] === 1;
}
