// fencegate/hono: Hono middleware over fencegate/http. `fencing({ gate, key })`
// reads and validates the fencing headers before the handler (a missing or
// malformed token, or a bad op-id/holder header, is answered at once with a
// problem body and the key's mark); `fenced(c, run)` runs the fenced operation
// inside the handler and answers with the status and body of docs/http.md.
// Hono is an optional peer dependency: this module does not import it.
import { readFencing, verdictReply, errorReply, tokenProblemReply, toResponse } from './http.mjs';
import { invalid, fencingOptions } from '../lib/options.mjs';
import { FencegateError } from '../lib/errors.mjs';

/**
 * Middleware: sets `c.var.fencing` = `{ key, token, header, problem, options }`
 * (see `readFencing`) and calls the handler; answers token problems itself.
 * `key(c)` names the resource key (e.g. `(c) => c.req.param('key')`);
 * `gate` (MemoryGate or Gate) supplies the mark for those answers.
 */
export function fencing(fencing) {
  const { gate, key, options } = fencingOptions(fencing, 'the context');
  return async function fencingMiddleware(c, next) {
    const k = key(c);
    let input;
    try {
      input = readFencing(c.req.raw.headers, options.headers);
      if (input.problem !== null) return toResponse(tokenProblemReply(k, input, await gate.mark(k), options));
    } catch (e) {
      const reply = errorReply(e, k, options);
      if (reply === null) throw e;
      return toResponse(reply);
    }
    c.set('fencing', { key: k, ...input, reply: options });
    await next();
  };
}

/**
 * Runs the fenced operation inside a handler behind `fencing()`:
 * `run(token, options)` calls the gate (e.g.
 * `(token, o) => gate.write(key, token, value, o)`) and its verdict, or a
 * FencegateError it throws, becomes the Response. Other errors are rethrown
 * (Hono's error handler sees them).
 */
export async function fenced(c, run) {
  let f;
  try {
    f = c.get('fencing');
  } catch {
    f = undefined; // not a Hono context: said below
  }
  if (f === undefined || f === null || typeof f !== 'object') {
    throw invalid('fenced(c, run) needs the fencing() middleware on this route', { option: 'c' });
  }
  if (typeof run !== 'function') throw invalid('fenced(c, run): run must be a function (token, options) => verdict', { option: 'run' });
  let verdict;
  try {
    verdict = await run(f.token, f.options);
  } catch (e) {
    const reply = errorReply(e, f.key, f.reply);
    if (reply === null) throw e;
    return toResponse(reply);
  }
  // A result that is not a verdict is the handler's bug: INVALID_ARGUMENT thrown to Hono's error handler.
  return toResponse(verdictReply(verdict, f, f.reply));
}
