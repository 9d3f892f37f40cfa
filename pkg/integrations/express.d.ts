/**
 * fencegate/express — Express 5 middleware (optional peer dependency):
 * `fencing({ gate, key })` validates the fencing headers before the handler;
 * `fenced(res, run)` runs the fenced operation and sends the answer (docs/http.md).
 * Request and response are typed structurally, so @types/express is not needed.
 */
import type { Epoch } from 'fencegate';
import type { FenceOptions, FencedRun, FencingInput } from './http.js';

/** `res.locals.fencing`: the validated input and the resource key. */
export interface Fencing extends FencingInput {
  key: string;
  reply: FenceOptions;
}

/** The parts of Express's `Request` used. */
export interface RequestLike {
  headers: Record<string, string | string[] | undefined>;
}

/** The parts of Express's `Response` used. */
export interface ResponseLike {
  locals: Record<string, any>;
  status(code: number): unknown;
  setHeader(name: string, value: string): unknown;
  end(body: string): unknown;
}

/** Options of {@link fencing}. */
export interface FencingOptions<Req extends RequestLike = any> extends FenceOptions {
  /** The gate whose mark goes into token-problem answers (a MemoryGate or Gate). */
  gate: { mark(key: string): Epoch | Promise<Epoch> };
  /** The resource key of a request, e.g. `(req) => req.params.key`. */
  key: (req: Req) => string;
}

/**
 * Middleware: answers a missing token (428), a malformed one (400) or a bad
 * op-id/holder header (400) with a problem body; else sets
 * `res.locals.fencing` and calls `next()`.
 * @throws FencegateError INVALID_ARGUMENT for missing options, a missing gate or key function,
 *   an unknown option or header name, or a mistyped option.
 */
export function fencing<Req extends RequestLike = any>(
  options: FencingOptions<Req>,
): (req: Req, res: ResponseLike, next: (err?: unknown) => void) => Promise<void>;

/** Inside a handler behind {@link fencing}: runs the gate call and sends the answer (see fencegate/http). */
export function fenced(res: ResponseLike, run: FencedRun): Promise<void>;
