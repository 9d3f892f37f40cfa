// fencegate/http: fencing over HTTP with the Fetch API's Request/Response
// (Workers, Deno, Bun, Vercel edge, Node ≥ 18). Reads the token, op-id and
// holder headers, runs a fenced operation, and answers with a status and, on a
// refusal, an RFC 9457 application/problem+json body. The mapping and its
// reasons: docs/http.md. Framework middleware (fencegate/hono,
// fencegate/express) is built on the neutral functions here.
import { parseToken, FencegateError, __operationLimits } from '../lib/core.mjs';
import { invalid, replyOptions, headerNames } from '../lib/options.mjs';

/** Reply/fence options checked (unknown names, wrong types, bad header names and a non-integer retryAfter are INVALID_ARGUMENT). */
function fenceOptions(options, what) {
  return replyOptions(options, what);
}

const own = (table, code) => typeof code === 'string' && Object.hasOwn(table, code);

/** The request header carrying the fencing token (decimal epoch or signed `fg1.` text). */
export const TOKEN_HEADER = 'Fencing-Token';
/** The request header carrying the operation id (`opId`, de-duplication within an epoch). */
export const OP_ID_HEADER = 'Fencing-Op-Id';
/** The request header naming the lease holder (`holder`, EPOCH_CONFLICT detection). */
export const HOLDER_HEADER = 'Fencing-Holder';
/** The media type of problem bodies (RFC 9457). */
export const PROBLEM_JSON = 'application/problem+json';
/** The default prefix of problem `type` URIs; the code follows in lower case, `_` → `-`. */
export const PROBLEM_TYPE_BASE = 'urn:fencegate:problem:';

// Status for every stable code; reasons in docs/http.md.
const STATUS = {
  MISSING_TOKEN: 428,
  MALFORMED_TOKEN: 400,
  INVALID_ARGUMENT: 400,
  UNSIGNED_TOKEN: 403,
  BAD_SIGNATURE: 403,
  UNKNOWN_KEY: 403,
  KEY_RETIRED: 403,
  WRONG_SCOPE: 403,
  STALE_TOKEN: 409,
  SAME_EPOCH_REJECTED: 409,
  EPOCH_CONFLICT: 409,
  QUARANTINED: 409,
  OP_ID_EXPIRED: 409,
  EPOCH_JUMP_TOO_LARGE: 409,
  FUTURE_EPOCH: 409,
  LEASE_HELD: 409,
  LEASE_EXPIRED: 409,
  LEASE_NOT_HELD: 409,
  OP_ID_REUSED: 422,
  REQUEST_ID_REUSED: 422,
  STORE_ERROR: 503,
  COMMIT_CONFLICT: 503,
  COMMIT_UNKNOWN: 503,
  CORRUPT_STATE: 500,
  EPOCH_OVERFLOW: 500,
  NOT_INITIALIZED: 500,
  DUPLICATE_OPERATION: 409,
  CALLBACK_FAILED: 500,
  GUARD_REFUSED: 500,
};

const TITLE = {
  MISSING_TOKEN: 'Fencing token required',
  MALFORMED_TOKEN: 'Malformed fencing token',
  INVALID_ARGUMENT: 'Invalid request',
  UNSIGNED_TOKEN: 'Signed fencing token required',
  BAD_SIGNATURE: 'Fencing token signature does not verify',
  UNKNOWN_KEY: 'Fencing token signed with an unknown key',
  KEY_RETIRED: 'Fencing token signed with a retired key',
  WRONG_SCOPE: 'Fencing token issued for another scope',
  STALE_TOKEN: 'Stale fencing token',
  SAME_EPOCH_REJECTED: 'Fencing token already used',
  EPOCH_CONFLICT: 'Epoch held by another holder',
  QUARANTINED: 'Resource quarantined',
  OP_ID_EXPIRED: 'Operation id expired',
  EPOCH_JUMP_TOO_LARGE: 'Fencing token too far ahead',
  FUTURE_EPOCH: 'Fencing token from the future',
  LEASE_HELD: 'Lease held',
  LEASE_EXPIRED: 'Lease expired',
  LEASE_NOT_HELD: 'Lease not held by this holder',
  OP_ID_REUSED: 'Operation id reused for a different operation',
  REQUEST_ID_REUSED: 'Request id reused for a different request',
  STORE_ERROR: 'Storage unavailable',
  COMMIT_CONFLICT: 'Too much contention on this resource',
  COMMIT_UNKNOWN: 'Commit outcome unknown',
  CORRUPT_STATE: 'Stored fence state is corrupt',
  EPOCH_OVERFLOW: 'Epochs exhausted',
  NOT_INITIALIZED: 'fencegate not initialized',
  DUPLICATE_OPERATION: 'Operation already applied',
  CALLBACK_FAILED: 'The fenced transaction failed',
  GUARD_REFUSED: 'Change refused by the database guard',
};

// Statuses that a client may retry as is: they carry Retry-After.
const RETRYABLE = new Set(['STORE_ERROR', 'COMMIT_CONFLICT', 'COMMIT_UNKNOWN']);

/**
 * The HTTP status for a verdict code or error code (docs/http.md); 200 for
 * `null` (an applied or duplicate operation). Unknown codes answer 500.
 */
export function statusFor(code) {
  if (code === null || code === undefined) return 200;
  return own(STATUS, code) ? STATUS[code] : 500; // only the table's own entries: never Object.prototype's
}

// Op ids and holders in headers: visible ASCII only. Header bytes above 0x7F
// arrive as Latin-1 in Fetch and Node, so UTF-8 text would silently become
// another string; commas would merge repeated headers into one value. Their
// lengths are the gate's limits (`__operationLimits`; ASCII: characters = bytes).
const HEADER_TEXT_RE = /^[\x21-\x2b\x2d-\x7e]+$/;

/** `value` of header `name` when it is 1 to `max` visible ASCII characters without commas; INVALID_ARGUMENT otherwise. */
function headerValue(name, value, max) {
  if (value.length > max || !HEADER_TEXT_RE.test(value)) throw badHeader(name, value, `1 to ${max} visible ASCII characters without commas`);
  return value;
}

/**
 * Looks a header up by the source's shape, never its class (a Request or
 * Headers of another realm or package, a polyfill, a framework's class, a
 * `Map`): an object with `get(name)` is asked for the name and its lower-case
 * form (a `Map` with differently cased keys is searched); else an object with
 * a `headers` member is read through it (a Request, Node's IncomingMessage);
 * else the object's own members are the headers, matched case-insensitively
 * (RFC 9110 §5.1). `null` or `undefined` from any of them is "absent"; an
 * array of texts is joined with ", " (Node's repeated headers); other values
 * are INVALID_ARGUMENT, as is a source that throws while read.
 */
function header(source, name) {
  if (source === null || typeof source !== 'object') return null;
  try {
    return headerText(headersOf(source), name);
  } catch (e) {
    if (e instanceof FencegateError) throw e;
    throw invalid(`reading the ${name} header threw: ${e instanceof Error ? e.message : 'a non-error value'}`, { header: name, cause: e });
  }
}

function headersOf(source) {
  if (typeof source.get === 'function') return source;
  const h = source.headers;
  if (h !== null && typeof h === 'object') return h;
  return source;
}

function headerText(headers, name) {
  const lower = name.toLowerCase();
  let v;
  if (typeof headers.get === 'function') {
    v = headers.get(name);
    if (v === undefined || v === null) v = headers.get(lower);
    if ((v === undefined || v === null) && headers instanceof Map) {
      for (const [k, value] of headers) {
        if (typeof k === 'string' && k.toLowerCase() === lower && value !== undefined && value !== null) {
          v = value;
          break;
        }
      }
    }
  } else {
    v = Object.hasOwn(headers, lower) ? headers[lower] : undefined;
    if (v === undefined || v === null) {
      const found = [];
      for (const k of Object.keys(headers)) {
        if (k.toLowerCase() === lower && headers[k] !== undefined && headers[k] !== null) found.push(headers[k]);
      }
      v = found.length === 0 ? undefined : found.length === 1 ? found[0] : found.flat();
    }
  }
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.join(', ');
  throw invalid(`the ${name} header is not text (a string, or an array of strings)`, { header: name });
}

function badHeader(name, value, what) {
  return invalid(`the ${name} header must be ${what}`, { header: name, value });
}

/**
 * Reads the fencing headers of a request. `token` is what to hand the gate:
 * the canonical epoch, signed `fg1.` text (the gate verifies it), `undefined`
 * when the header is absent (the gate answers MISSING_TOKEN), or the text as
 * received when it is not a canonical decimal (the gate answers
 * MALFORMED_TOKEN). Handing the gate every token keeps every refusal a verdict
 * with the mark, counted and audited like any other.
 * @throws FencegateError INVALID_ARGUMENT for an op-id or holder header that is
 *   present but not visible ASCII characters without commas, 1 up to the gate's
 *   operation-id (holder) limit long: 1..128 (1..256).
 */
export function readFencing(source, names = {}) {
  names = headerNames(names, 'readFencing header names');
  const tokenName = names.token ?? TOKEN_HEADER;
  const opIdName = names.opId ?? OP_ID_HEADER;
  const holderName = names.holder ?? HOLDER_HEADER;
  const text = header(source, tokenName);
  let token;
  let problem = null;
  if (text === null) {
    problem = 'MISSING_TOKEN';
  } else if (text.startsWith('fg1.')) {
    token = text;
  } else {
    try {
      token = parseToken(text);
    } catch (e) {
      if (e?.code !== 'MALFORMED_TOKEN') throw e;
      token = text;
      problem = 'MALFORMED_TOKEN';
    }
  }
  const options = {};
  const opId = header(source, opIdName);
  if (opId !== null) options.opId = headerValue(opIdName, opId, __operationLimits().maxOpIdBytes);
  const holder = header(source, holderName);
  if (holder !== null) options.holder = headerValue(holderName, holder, __operationLimits().maxHolderBytes);
  return { token, header: text, problem, options };
}

/** The `code` of a FencegateError (of any copy of the package), else null; a getter or trap that throws reads as "not one". */
function codeOf(error) {
  try {
    if (error === null || typeof error !== 'object' || error.name !== 'FencegateError' || typeof error.code !== 'string') return null;
    return error.code;
  } catch {
    return null;
  }
}

/** The message of the error a refused request got, for a problem body's `detail` (unreadable: a fixed text). */
function refusalMessage(error) {
  try {
    const m = error.message;
    return typeof m === 'string' ? m : 'the request was refused';
  } catch {
    return 'the request was refused';
  }
}

const OUTCOMES = ['advance', 'accept', 'duplicate', 'reject'];

function isEpoch(x) {
  return (typeof x === 'number' && Number.isSafeInteger(x) && x >= 0) || (typeof x === 'bigint' && x >= 0n && x <= 0xffff_ffff_ffff_ffffn);
}

/** What a non-verdict is, for the message: never its own conversions. */
function whatIs(x) {
  if (x === undefined) return 'undefined (a handler with braces and no `return`?)';
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  if (typeof x !== 'object') return `a ${typeof x}`;
  if ('changed' in x && 'floor' in x) return "quarantine()'s result, not a verdict";
  if ('hasValue' in x) return "read()'s result, not a verdict";
  if ('leaseId' in x || 'lease' in x) return "an Issuer's result, not a verdict";
  return `an object without a verdict's members (outcome ${typeof x.outcome === 'string' ? JSON.stringify(x.outcome.slice(0, 40)) : typeof x.outcome})`;
}

/**
 * `x` when it is a gate's verdict (`{ key, ok, outcome, code, token,
 * markBefore, markAfter }`, consistent), else INVALID_ARGUMENT saying what
 * was returned: a handler that forgot `return`, or returned another result,
 * is the server's bug, reported with a code and never answered as a 200.
 */
function verdictOf(x) {
  let ok = false;
  try {
    ok = x !== null && typeof x === 'object' && !Array.isArray(x) && typeof x.key === 'string' &&
      OUTCOMES.includes(x.outcome) && x.ok === (x.outcome !== 'reject') &&
      (x.outcome === 'reject' ? typeof x.code === 'string' : x.code === null) &&
      isEpoch(x.markBefore) && isEpoch(x.markAfter) && (x.token === null || isEpoch(x.token)) &&
      (x.outcome !== 'duplicate' || x.original === 'advance' || x.original === 'accept');
  } catch {
    ok = false;
  }
  if (ok) return x;
  let what;
  try {
    what = whatIs(x);
  } catch {
    what = 'an object that cannot be read';
  }
  throw invalid(
    `run(token, options) must return (or resolve to) the gate's verdict, e.g. \`(t, o) => gate.write(key, t, value, o)\`; it returned ${what}. The operation may have been applied: nothing was answered`,
    { returned: x },
  );
}

const text = (epoch) => (epoch === null || epoch === undefined ? null : String(epoch));

function detailOf(v, header) {
  const mark = String(v.markAfter);
  switch (v.code) {
    case 'MISSING_TOKEN':
      return `send the owner's fencing token in the ${header} header; the resource's mark is ${mark}`;
    case 'MALFORMED_TOKEN':
      return `the ${header} header must be a canonical decimal epoch 1..18446744073709551615 (no sign, leading zero, space, fraction or exponent) or a signed fg1 token`;
    case 'STALE_TOKEN':
      return `epoch ${text(v.token)} is below the resource's mark ${mark}: a newer owner has written; acquire a new lease`;
    case 'SAME_EPOCH_REJECTED':
      return `epoch ${text(v.token)} equals the mark and this resource requires a larger token for every operation`;
    case 'EPOCH_CONFLICT':
      return `epoch ${text(v.token)} is bound to another holder: one epoch was handed to two owners (an issuer restore or bug)`;
    case 'QUARANTINED':
      return `the resource is quarantined at ${mark}: establish a fresh epoch above it first`;
    case 'OP_ID_EXPIRED':
      return 'the operation id fell out of the de-duplication window and may already be applied: read the resource, then retry under a new id if needed';
    case 'OP_ID_REUSED':
      return 'this operation id was already used in this epoch for a different operation; nothing changed: send a new id for a new operation';
    case 'EPOCH_JUMP_TOO_LARGE':
      return `epoch ${text(v.token)} is further above the mark ${mark} than this resource allows`;
    case 'FUTURE_EPOCH':
      return `epoch ${text(v.token)} is above what this resource knows was issued`;
    default:
      return `the fencing token was refused (${v.code}); nothing changed`;
  }
}

function problemType(code, base) {
  return base + code.toLowerCase().replaceAll('_', '-');
}

/**
 * The reply to a verdict, framework-neutral: `{ status, headers, body }`.
 * Applied and duplicate operations: 200, `{ key, outcome, code: null, token,
 * markBefore, mark }` (plus `original` on a duplicate). Refusals: the status
 * of `statusFor(code)` and a problem body `{ type, title, status, detail, code,
 * key, outcome, token, markBefore, mark }`. Epochs are decimal text; `token` is
 * the header as received (null when absent) when it was not a valid epoch.
 */
export function verdictReply(verdict, input = null, options = {}) {
  options = fenceOptions(options, 'verdictReply');
  const v = verdictOf(verdict);
  let header = null;
  try {
    header = input !== null && typeof input === 'object' && typeof input.header === 'string' ? input.header : null;
  } catch {
    // an input that cannot be read names no header
  }
  const token = v.token === null ? header : String(v.token);
  if (v.ok) {
    const body = { key: v.key, outcome: v.outcome, code: null, token, markBefore: String(v.markBefore), mark: String(v.markAfter) };
    if (v.outcome === 'duplicate') body.original = v.original;
    return { status: 200, headers: { 'content-type': 'application/json' }, body };
  }
  const status = statusFor(v.code);
  return {
    status,
    headers: { 'content-type': PROBLEM_JSON },
    body: {
      type: problemType(v.code, options.typeBase ?? PROBLEM_TYPE_BASE),
      title: own(TITLE, v.code) ? TITLE[v.code] : 'Fencing token refused',
      status,
      detail: detailOf(v, options.headers?.token ?? TOKEN_HEADER),
      code: v.code,
      key: v.key,
      outcome: 'reject',
      token,
      markBefore: String(v.markBefore),
      mark: String(v.markAfter),
    },
  };
}

/**
 * The reply to a thrown FencegateError (store failures, a bad header, …):
 * `{ status, headers, body }` with a problem body `{ type, title, status,
 * detail, code, key, mark: null }` (the gate did not decide, so no mark is
 * known). 503 answers carry `Retry-After` (seconds, `options.retryAfter`, default 1).
 * Returns `null` for anything that is not a FencegateError.
 */
export function errorReply(error, key = null, options = {}) {
  options = fenceOptions(options, 'errorReply');
  if (key !== null && typeof key !== 'string') throw invalid('errorReply(error, key): key must be a string or null', { option: 'key' });
  const code = codeOf(error);
  if (code === null) return null;
  const status = statusFor(code);
  const headers = { 'content-type': PROBLEM_JSON };
  if (RETRYABLE.has(code)) headers['retry-after'] = String(options.retryAfter ?? 1);
  let detail;
  if (code === 'COMMIT_UNKNOWN') {
    detail = `the store did not confirm the commit; it may have landed. Retry the same request with the same ${options.headers?.token ?? TOKEN_HEADER} and ${options.headers?.opId ?? OP_ID_HEADER}: with an op id it is applied at most once`;
  } else if (code === 'STORE_ERROR' || code === 'COMMIT_CONFLICT') {
    detail = 'nothing was written; retry the same request';
  } else if (status < 500) {
    detail = refusalMessage(error);
  } else {
    detail = 'the server could not complete the fenced operation; nothing is known to have changed';
  }
  return {
    status,
    headers,
    body: {
      type: problemType(code, options.typeBase ?? PROBLEM_TYPE_BASE),
      title: own(TITLE, code) ? TITLE[code] : 'Fenced operation failed',
      status,
      detail,
      code,
      key,
      mark: null,
    },
  };
}

/**
 * The reply to a token problem found by {@link readFencing} before any gate
 * ran (middleware): the same body a gate's MISSING_TOKEN / MALFORMED_TOKEN
 * verdict gets, with the key's current `mark`.
 */
export function tokenProblemReply(key, input, mark, options = {}) {
  let problem;
  try {
    problem = input.problem;
  } catch {
    problem = undefined;
  }
  if (problem !== 'MISSING_TOKEN' && problem !== 'MALFORMED_TOKEN') {
    throw invalid("tokenProblemReply(key, input, mark): input must be readFencing's result with problem 'MISSING_TOKEN' or 'MALFORMED_TOKEN'", { option: 'input' });
  }
  const v = { key, ok: false, outcome: 'reject', code: problem, token: null, markBefore: mark, markAfter: mark };
  return verdictReply(v, input, options);
}

/** A Fetch `Response` for a reply from {@link verdictReply} / {@link errorReply}. */
export function toResponse(reply) {
  return new Response(JSON.stringify(reply.body), { status: reply.status, headers: reply.headers });
}

/**
 * Runs one fenced operation for a request and returns the reply
 * (framework-neutral). `run(token, options)` calls the gate, e.g.
 * `(token, options) => gate.write(key, token, value, options)`; `options`
 * holds `opId` / `holder` from the headers. A FencegateError thrown by the
 * headers or the gate becomes a problem reply; any other error is rethrown.
 */
export async function fenceReply(source, key, run, options = {}) {
  options = fenceOptions(options, 'fence'); // before the request is read or the gate called
  if (typeof key !== 'string') throw invalid('fence(request, key, run): key must be the resource key (a string)', { option: 'key' });
  if (typeof run !== 'function') throw invalid('fence(request, key, run): run must be a function (token, options) => verdict', { option: 'run' });
  let input;
  let verdict;
  try {
    input = readFencing(source, options.headers);
    verdict = await run(input.token, input.options);
  } catch (e) {
    // fenceIn throws its refusal with the verdict (so the caller's transaction rolls back):
    // answered as that verdict, the same reply a gate call that returns it gets
    const refused = refusalOf(e);
    if (refused !== null) return verdictReply(refused, input, options);
    const reply = errorReply(e, key, options);
    if (reply === null) throw e;
    return reply;
  }
  // Not a verdict: the server's bug, thrown (INVALID_ARGUMENT), never a problem reply blaming the client.
  return verdictReply(verdict, input, options);
}

/** The verdict a thrown `fenceIn` refusal carries (its code is the verdict's, or DUPLICATE_OPERATION), else null. */
function refusalOf(e) {
  if (e === null || typeof e !== 'object' || e.name !== 'FencegateError') return null;
  const v = e.verdict;
  if (v === null || typeof v !== 'object') return null;
  if (e.code === 'DUPLICATE_OPERATION' ? v.outcome === 'duplicate' : v.ok === false && v.code === e.code) return v;
  return null;
}

/**
 * Runs one fenced operation for a Fetch `Request` and answers with a
 * `Response`: see {@link fenceReply}.
 * @example return fence(request, key, (token, o) => gate.write(key, token, await request.text(), o));
 */
export async function fence(request, key, run, options = {}) {
  return toResponse(await fenceReply(request, key, run, options));
}
