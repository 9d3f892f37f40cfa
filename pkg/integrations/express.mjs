// fencegate/express: Express 5 middleware over fencegate/http. `fencing({ gate, key })`
// reads and validates the fencing headers before the handler (a missing or
// malformed token, or a bad op-id/holder header, is answered at once with a
// problem body and the key's mark); `fenced(res, run)` runs the fenced
// operation inside the handler and sends the status and body of docs/http.md.
// Express is an optional peer dependency: this module does not import it.
import { readFencing, verdictReply, errorReply, tokenProblemReply } from './http.mjs';
import { invalid, fencingOptions } from '../lib/options.mjs';
import { FencegateError } from '../lib/errors.mjs';

function send(res, reply) {
  res.status(reply.status);
  for (const [name, value] of Object.entries(reply.headers)) res.setHeader(name, value);
  res.end(JSON.stringify(reply.body));
}

/**
 * Middleware: sets `res.locals.fencing` = `{ key, token, header, problem, options }`
 * (see `readFencing`) and calls `next()`; answers token problems itself.
 * `key(req)` names the resource key (e.g. `(req) => req.params.key`);
 * `gate` (MemoryGate or Gate) supplies the mark for those answers.
 */
export function fencing(fencing) {
  const { gate, key, options } = fencingOptions(fencing, 'the request');
  return async function fencingMiddleware(req, res, next) {
    const k = key(req);
    let input;
    try {
      input = readFencing(req.headers, options.headers);
      if (input.problem !== null) return send(res, tokenProblemReply(k, input, await gate.mark(k), options));
    } catch (e) {
      const reply = errorReply(e, k, options);
      if (reply === null) return next(e);
      return send(res, reply);
    }
    res.locals.fencing = { key: k, ...input, reply: options };
    next();
  };
}

/**
 * Runs the fenced operation inside a handler behind `fencing()` and sends the
 * answer: `run(token, options)` calls the gate (e.g.
 * `(token, o) => gate.write(req.params.key, token, req.body, o)`); its
 * verdict, or a FencegateError it throws, becomes the response. Other errors
 * reject the returned Promise (Express 5 passes them to its error handler).
 */
export async function fenced(res, run) {
  let f;
  try {
    f = res.locals?.fencing;
  } catch {
    f = undefined; // not a response: said below
  }
  if (f === undefined || f === null || typeof f !== 'object') {
    throw invalid('fenced(res, run) needs the fencing() middleware on this route', { option: 'res' });
  }
  if (typeof run !== 'function') throw invalid('fenced(res, run): run must be a function (token, options) => verdict', { option: 'run' });
  let reply;
  let verdict;
  try {
    verdict = await run(f.token, f.options);
  } catch (e) {
    reply = errorReply(e, f.key, f.reply);
    if (reply === null) throw e;
  }
  // A result that is not a verdict is the handler's bug: INVALID_ARGUMENT rejects (Express's error handler).
  if (reply === undefined) reply = verdictReply(verdict, f, f.reply);
  send(res, reply);
}
