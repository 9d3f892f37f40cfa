// fencegate/durable-object: the Durable Object host stores
// (adapters/durable-object.mjs) and a ready-made fenced resource behind fetch
// that answers with fencegate/http's protocol (integrations/http.mjs). An entry
// file, like workerd.mjs: it joins a store adapter and an integration, so
// neither folder imports the other.
import { Gate } from './workerd.mjs';
import { DurableObjectStore } from './adapters/durable-object.mjs';
import { fence } from './integrations/http.mjs';
import { invalid } from './lib/options.mjs';

export { DurableObjectStore, DurableObjectSqlStore } from './adapters/durable-object.mjs';

const json = (body, status = 200) => Response.json(body, { status });

/**
 * The fenced HTTP protocol on one gate, for the resource `key`:
 *   PUT    body = the new value (text), header Fencing-Token → write
 *   POST   …/establish                                        → establish (no data change)
 *   DELETE                                                    → fenced delete (the mark stays)
 *   GET                                                       → { key, mark, value }
 * Headers, statuses and bodies are fencegate/http's (`fence`, docs/http.md):
 * 200 `{ key, outcome, code, token, markBefore, mark }` for advance/accept;
 * refusals as RFC 9457 problem bodies (409 STALE_TOKEN, 428 MISSING_TOKEN,
 * 400 MALFORMED_TOKEN, 403 signed-token refusals, …); Fencing-Op-Id and
 * Fencing-Holder go to the gate as opId and holder. `fg1.` header text goes to
 * the gate, which verifies it when it has `keys`. `options` (headers,
 * typeBase, retryAfter) are passed on to `fence`.
 */
export async function fencedFetch(gate, request, { key, action, ...options } = {}) {
  if (gate === null || typeof gate !== 'object' || typeof gate.write !== 'function') throw invalid('fencedFetch needs a Gate', { option: 'gate' });
  if (typeof key !== 'string') throw invalid('fencedFetch: key must be a string', { option: 'key' });
  if (request.method === 'GET' && action === undefined) {
    const { mark, value } = await gate.read(key);
    return json({ key, mark: String(mark), value: value ?? null });
  }
  let run;
  if (request.method === 'PUT' && action === undefined) {
    // read the whole body first: the check happens when the write has arrived (R1), and a
    // refusal never leaves a request stream unread
    const body = await request.text();
    run = (token, o) => gate.write(key, token, body, o);
  } else if (request.method === 'POST' && action === 'establish') {
    await request.arrayBuffer();
    run = (token, o) => gate.establish(key, token, o);
  } else if (request.method === 'DELETE' && action === undefined) {
    await request.arrayBuffer();
    run = (token, o) => gate.delete(key, token, o);
  } else {
    return json({ code: 'NOT_FOUND' }, 404);
  }
  return fence(request, key, run, options);
}

/** `/resources/<key>[/establish]` → `{ key, action }`, or the error Response (404 NOT_FOUND, 400 BAD_KEY). */
function route(request) {
  const parts = new URL(request.url).pathname.split('/');
  if (parts[1] !== 'resources' || !parts[2] || parts.length > 4) return json({ code: 'NOT_FOUND' }, 404);
  try {
    return { key: decodeURIComponent(parts[2]), action: parts[3] };
  } catch {
    return json({ code: 'BAD_KEY' }, 400);
  }
}

/** FENCE_KEYS (JSON { kid: base64url secret }) → gate options for signed tokens, or {}. */
function gateOptionsOf(env) {
  if (!env || !env.FENCE_KEYS) return {};
  const b64 = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  const keys = Object.fromEntries(Object.entries(JSON.parse(env.FENCE_KEYS)).map(([kid, secret]) => [kid, b64(secret)]));
  return { requireSigned: true, keys };
}

/**
 * A ready-made Durable Object class: one fenced resource per object, behind
 * fetch (`/resources/<key>[/establish]`, see `fencedFetch`). Export it from your
 * Worker and bind it; `fencedWorker(binding)` routes each key to its own object.
 * With the secret FENCE_KEYS set, only signed `fg1.` tokens are accepted
 * (the others are 403 UNSIGNED_TOKEN, BAD_SIGNATURE, UNKNOWN_KEY, WRONG_SCOPE, …).
 */
export class FencedObject {
  constructor(ctx, env) {
    const options = gateOptionsOf(env);
    this.store = new DurableObjectStore(ctx.storage);
    this.gate = new Gate(this.store, options);
  }

  async fetch(request) {
    const r = route(request);
    if (r instanceof Response) return r;
    return fencedFetch(this.gate, request, r);
  }
}

/** A Worker's default export that sends `/resources/<key>…` to the object `idFromName(key)` of `env[binding]`. */
export function fencedWorker(binding = 'FENCED') {
  if (typeof binding !== 'string') throw invalid('fencedWorker: binding must be the name of a Durable Object binding');
  return {
    fetch(request, env) {
      const r = route(request);
      if (r instanceof Response) return r;
      const ns = env[binding];
      // one Durable Object per resource key: it serialises that key's writes
      return ns.get(ns.idFromName(r.key)).fetch(request);
    },
  };
}
