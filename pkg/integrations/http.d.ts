/**
 * fencegate/http — fencing over HTTP with the Fetch API (Workers, Deno, Bun,
 * Vercel edge, Node ≥ 18): the token, op-id and holder headers, one fenced
 * operation per request, and RFC 9457 `application/problem+json` refusals.
 * Status mapping and its reasons: docs/http.md.
 */
import type { Epoch, ErrorCode, OperationOptions, Verdict } from 'fencegate';

/** `"Fencing-Token"`: the request header carrying the token (decimal epoch or signed `fg1.` text). */
export const TOKEN_HEADER: 'Fencing-Token';
/** `"Fencing-Op-Id"`: the request header carrying the operation id (`opId`). */
export const OP_ID_HEADER: 'Fencing-Op-Id';
/** `"Fencing-Holder"`: the request header naming the lease holder (`holder`). */
export const HOLDER_HEADER: 'Fencing-Holder';
/** `"application/problem+json"` (RFC 9457). */
export const PROBLEM_JSON: 'application/problem+json';
/** `"urn:fencegate:problem:"`: default prefix of problem `type` URIs (then the code in lower case, `_` → `-`). */
export const PROBLEM_TYPE_BASE: 'urn:fencegate:problem:';

/** Header names, when yours differ from the defaults. */
export interface HeaderNames {
  /** Default `Fencing-Token`. */
  token?: string;
  /** Default `Fencing-Op-Id`. */
  opId?: string;
  /** Default `Fencing-Holder`. */
  holder?: string;
}

/**
 * Options of the reply functions and middleware, checked at the call (INVALID_ARGUMENT): any other
 * name (here or in `headers`); a header name that is not an HTTP field name (RFC 9110 token
 * characters, not empty) or two members naming one header; a `retryAfter` that is not a whole
 * number of seconds 0..2^31−1.
 */
export interface FenceOptions {
  headers?: HeaderNames;
  /** Prefix of problem `type` URIs; default {@link PROBLEM_TYPE_BASE}. E.g. your docs URL. */
  typeBase?: string;
  /** Whole seconds (0..2^31−1; a fraction is INVALID_ARGUMENT) sent in `Retry-After` on 503 answers (STORE_ERROR, COMMIT_CONFLICT, COMMIT_UNKNOWN); default 1. */
  retryAfter?: number;
}

/**
 * Where headers come from, read by shape (never by class): an object with `get(name)` (a Fetch
 * `Headers` of any implementation, a `Map`; `null`/`undefined` = absent), an object with `headers`
 * (a `Request` of any implementation, Node's `IncomingMessage`), or Node's `req.headers` object
 * (names matched case-insensitively). A value that is not text is INVALID_ARGUMENT.
 */
export type HeaderSource =
  | Request
  | Headers
  | { get(name: string): string | null | undefined }
  | { headers: { get(name: string): string | null | undefined } | Record<string, string | string[] | number | undefined> }
  | Map<string, string | string[]>
  | Record<string, string | string[] | number | undefined>;

/** What {@link readFencing} found. */
export interface FencingInput {
  /**
   * What to hand the gate: the canonical epoch; signed `fg1.` text; `undefined`
   * when the header is absent (→ MISSING_TOKEN); the text as received when it is
   * not a canonical decimal (→ MALFORMED_TOKEN).
   */
  token: Epoch | string | undefined;
  /** The token header as received, or `null` when absent. */
  header: string | null;
  /** The token problem found while parsing, or `null`. */
  problem: 'MISSING_TOKEN' | 'MALFORMED_TOKEN' | null;
  /** `opId` / `holder` from their headers (absent headers → absent fields). */
  options: OperationOptions;
}

/**
 * Reads the fencing headers of a request.
 * @throws FencegateError INVALID_ARGUMENT (`header`, `value`) when the op-id header is not
 *   1..128 (holder: 1..256) visible ASCII characters without commas; INVALID_ARGUMENT (`option`)
 *   for an unknown name in `names`.
 */
export function readFencing(source: HeaderSource, names?: HeaderNames): FencingInput;

/** HTTP status for a code: 200 for `null`; 428 MISSING_TOKEN; 400 MALFORMED_TOKEN, INVALID_ARGUMENT;
 * 403 signed-token refusals; 409 STALE_TOKEN and the other state conflicts; 422 OP_ID_REUSED,
 * REQUEST_ID_REUSED; 503 STORE_ERROR, COMMIT_CONFLICT, COMMIT_UNKNOWN; 500 CORRUPT_STATE and anything else. */
export function statusFor(code: ErrorCode | null | undefined): number;

/** 200 body of an applied (advance/accept) or duplicate operation. Epochs are decimal text. */
export interface FencedBody {
  key: string;
  outcome: 'advance' | 'accept' | 'duplicate';
  code: null;
  /** The epoch used (decimal text). */
  token: string | null;
  markBefore: string;
  /** The mark after the operation. */
  mark: string;
  /** Duplicates only. */
  original?: 'advance' | 'accept';
}

/** RFC 9457 problem body of a refused operation (a verdict with a code). */
export interface RefusalProblem {
  /** `typeBase` + the code in lower case with `-` (e.g. `urn:fencegate:problem:stale-token`). */
  type: string;
  title: string;
  /** The HTTP status, as sent. */
  status: number;
  /** Human-readable, for this occurrence. */
  detail: string;
  /** The stable code. */
  code: ErrorCode;
  key: string;
  outcome: 'reject';
  /** The validated epoch (decimal), or the header as received (null when absent) when it was not one. */
  token: string | null;
  markBefore: string;
  /** The resource's high-water mark after the refusal (unchanged). */
  mark: string;
}

/** RFC 9457 problem body of a thrown FencegateError: the gate did not decide, so `mark` is null. */
export interface ErrorProblem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  key: string | null;
  mark: null;
}

/** A framework-neutral answer. `headers` names are lower case. */
export interface Reply<B = FencedBody | RefusalProblem | ErrorProblem> {
  status: number;
  headers: Record<string, string>;
  body: B;
}

/**
 * The reply to a verdict: 200 + {@link FencedBody}, or `statusFor(code)` + {@link RefusalProblem}.
 * @throws FencegateError INVALID_ARGUMENT (`returned`) when `verdict` is not a gate's verdict (undefined,
 *   an array, another result), saying what it is.
 */
export function verdictReply(verdict: Verdict, input?: FencingInput | null, options?: FenceOptions): Reply<FencedBody | RefusalProblem>;

/** The reply to a thrown FencegateError (503s carry `retry-after`); `null` for any other value. */
export function errorReply(error: unknown, key?: string | null, options?: FenceOptions): Reply<ErrorProblem> | null;

/** The reply to a token problem found before any gate ran (middleware), with the key's current mark. */
export function tokenProblemReply(key: string, input: FencingInput, mark: Epoch | 0, options?: FenceOptions): Reply<RefusalProblem>;

/** A Fetch `Response` carrying a reply (JSON text body). */
export function toResponse(reply: Reply): Response;

/**
 * Runs a fenced operation; `run` calls the gate with the token and the header options and must
 * return (or resolve to) its verdict. A signed token's lease id is the holder whatever `holder` says.
 */
export type FencedRun = (token: Epoch | string | undefined, options: OperationOptions) => Verdict | Promise<Verdict>;

/**
 * Reads the headers, runs `run(token, options)` and returns the reply. A
 * FencegateError (from the headers or the gate) becomes a problem reply; any
 * other error is rethrown.
 * @throws FencegateError INVALID_ARGUMENT (a rejected Promise) for an unknown or mistyped option, before the
 *   request is read or `run` is called; also when `run`'s result is not a verdict (`returned`:
 *   what it was; the operation may have been applied), instead of answering.
 */
export function fenceReply(source: HeaderSource, key: string, run: FencedRun, options?: FenceOptions): Promise<Reply>;

/** {@link fenceReply} answered as a Fetch `Response`. */
export function fence(request: Request, key: string, run: FencedRun, options?: FenceOptions): Promise<Response>;
