/**
 * fencegate/hono — Hono middleware (Hono ≥ 4, optional peer dependency):
 * `fencing({ gate, key })` validates the fencing headers before the handler;
 * `fenced(c, run)` runs the fenced operation and answers (docs/http.md).
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Epoch } from 'fencegate';
import type { FenceOptions, FencedRun, FencingInput } from './http.js';

/** `c.var.fencing`: the validated input and the resource key. */
export interface Fencing extends FencingInput {
  key: string;
  /** The middleware's reply options. */
  reply: FenceOptions;
}

/** The Hono environment the middleware adds: `c.var.fencing`. */
export interface FencingEnv {
  Variables: { fencing: Fencing };
}

/** Options of {@link fencing}. */
export interface FencingOptions extends FenceOptions {
  /** The gate whose mark goes into token-problem answers (a MemoryGate or Gate). */
  gate: { mark(key: string): Epoch | Promise<Epoch> };
  /** The resource key of a request, e.g. `(c) => c.req.param('key')`. */
  key: (c: Context) => string;
}

/**
 * Middleware: answers a missing token (428), a malformed one (400) or a bad
 * op-id/holder header (400) with a problem body; else sets `c.var.fencing`.
 * @throws FencegateError INVALID_ARGUMENT for missing options, a missing gate or key function,
 *   an unknown option or header name, or a mistyped option.
 */
export function fencing(options: FencingOptions): MiddlewareHandler<FencingEnv>;

/** Inside a handler behind {@link fencing}: runs the gate call and answers (see fencegate/http). */
export function fenced(c: Context, run: FencedRun): Promise<Response>;
