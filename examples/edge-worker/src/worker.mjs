// A Cloudflare Worker that fences writes to resources kept in Durable Objects.
//
// Each resource key gets its own Durable Object (idFromName(key)); the object
// keeps the value and the fence state (high-water mark) in its storage and
// changes both in one storage transaction through fencegate's Gate (DESIGN R1).
//
//   PUT    /resources/<key>            body = the new value (text); header Fencing-Token
//   POST   /resources/<key>/establish  raise the mark, no data change (a new owner's barrier)
//   DELETE /resources/<key>            fenced delete: clears the value, keeps the mark
//   GET    /resources/<key>            { key, mark, value }
//
// Answers (fencegate/http, docs/http.md): 200 applied (advance/accept) with
// { key, outcome, code, token, markBefore, mark }; refusals as RFC 9457 problem
// bodies { type, title, status, detail, code, key, outcome, token, markBefore, mark }:
// 409 STALE_TOKEN (token < mark), 428 MISSING_TOKEN, 400 MALFORMED_TOKEN. Epochs
// are decimal text (exact up to 2^64−1); `token` is the header as received
// (null when absent) when it is not a valid epoch. Fencing-Op-Id and
// Fencing-Holder headers are passed on as opId and holder.
//
// Signed tokens (optional): with the secret FENCE_KEYS set (JSON
// { "<key id>": "<base64url of a 32-byte HMAC secret>" }, `wrangler secret put
// FENCE_KEYS`), the objects accept only `fg1.…` tokens minted by the issuer for
// this resource key, so nobody can push a mark up with a made-up number (DESIGN
// R9); UNSIGNED_TOKEN, BAD_SIGNATURE, UNKNOWN_KEY, WRONG_SCOPE, … are 403.
import { Gate } from 'fencegate';
import { fence } from 'fencegate/http';

/** The Durable Object storage as a fencegate transaction store (docs/stores.md). */
function durableObjectStore(storage) {
  return {
    // everything fn returns is written in the same storage transaction, or nothing
    transaction: (key, fn) =>
      storage.transaction(async (txn) => {
        const out = fn((await txn.get(key + ':state')) ?? null);
        if (out === null) return;
        await txn.put(key + ':state', out.nextState);
        if (out.change.kind === 'set') await txn.put(key + ':value', out.change.value);
        if (out.change.kind === 'delete') await txn.delete(key + ':value');
      }),
    load: async (key) => {
      const m = await storage.get([key + ':state', key + ':value']);
      return m.has(key + ':state') ? { state: m.get(key + ':state'), version: null, value: m.get(key + ':value') } : null;
    },
  };
}

const json = (body, status = 200) => Response.json(body, { status });

/** FENCE_KEYS → { kid: Uint8Array }, or null when the secret is not set. */
function keysFrom(env) {
  if (!env.FENCE_KEYS) return null;
  const b64 = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  return Object.fromEntries(Object.entries(JSON.parse(env.FENCE_KEYS)).map(([kid, secret]) => [kid, b64(secret)]));
}

export class FencedResource {
  constructor(ctx, env) {
    const keys = keysFrom(env);
    this.gate = new Gate(durableObjectStore(ctx.storage), keys !== null ? { requireSigned: true, keys } : {});
  }

  async fetch(request) {
    const url = new URL(request.url);
    const [, , encoded, action] = url.pathname.split('/');
    const key = decodeURIComponent(encoded);
    if (request.method === 'GET' && action === undefined) {
      const { mark, value } = await this.gate.read(key);
      return json({ key, mark: String(mark), value: value ?? null });
    }
    // read the whole body first: the check happens when the write has arrived (R1), and a
    // refusal never leaves a request stream unread
    const body = await request.text();
    let run;
    if (request.method === 'PUT' && action === undefined) run = (token, o) => this.gate.write(key, token, body, o);
    else if (request.method === 'POST' && action === 'establish') run = (token, o) => this.gate.establish(key, token, o);
    else if (request.method === 'DELETE' && action === undefined) run = (token, o) => this.gate.delete(key, token, o);
    else return json({ code: 'NOT_FOUND' }, 404);
    // the Fencing-Token header: strict decimal (no sign, leading zero, space, fraction,
    // exponent) or fg1 text, which the gate verifies when it requires signed tokens
    return fence(request, key, run);
  }
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    const parts = pathname.split('/');
    if (parts[1] !== 'resources' || !parts[2] || parts.length > 4) return json({ code: 'NOT_FOUND' }, 404);
    let key;
    try {
      key = decodeURIComponent(parts[2]);
    } catch {
      return json({ code: 'BAD_KEY' }, 400);
    }
    // one Durable Object per resource key: it serialises that key's writes
    return env.RESOURCES.get(env.RESOURCES.idFromName(key)).fetch(request);
  },
};
