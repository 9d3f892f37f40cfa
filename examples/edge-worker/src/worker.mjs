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
// Answers: 200 applied (advance/accept), 409 STALE_TOKEN (token < mark),
// 400 MISSING_TOKEN / MALFORMED_TOKEN. Every fenced answer is JSON
// { key, outcome, code, token, markBefore, mark }; epochs are decimal text
// (exact up to 2^64−1). On 400, `token` is the header as received (null when absent).
//
// Signed tokens (optional): with the secret FENCE_KEYS set (JSON
// { "<key id>": "<base64url of a 32-byte HMAC secret>" }, `wrangler secret put
// FENCE_KEYS`), the objects accept only `fg1.…` tokens minted by the issuer for
// this resource key, so nobody can push a mark up with a made-up number (DESIGN
// R9); UNSIGNED_TOKEN, BAD_SIGNATURE, UNKNOWN_KEY, WRONG_SCOPE, … are 400.
import { Gate, parseToken, FencegateError } from 'fencegate';

const TOKEN_HEADER = 'Fencing-Token';

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
    this.signed = keys !== null;
    this.gate = new Gate(durableObjectStore(ctx.storage), this.signed ? { requireSigned: true, keys } : {});
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
    const header = request.headers.get(TOKEN_HEADER);
    let token;
    try {
      // fg1 text: the gate verifies it; else strict decimal (no sign, leading zero, space, fraction, exponent),
      // which a gate that requires signed tokens refuses as UNSIGNED_TOKEN
      token = this.signed && header?.startsWith('fg1.') ? header : parseToken(header);
    } catch (e) {
      if (!(e instanceof FencegateError)) throw e;
      const mark = String(await this.gate.mark(key));
      return json({ key, outcome: 'reject', code: e.code, token: header, markBefore: mark, mark }, 400);
    }
    let v;
    if (request.method === 'PUT' && action === undefined) v = await this.gate.write(key, token, body);
    else if (request.method === 'POST' && action === 'establish') v = await this.gate.establish(key, token);
    else if (request.method === 'DELETE' && action === undefined) v = await this.gate.delete(key, token);
    else return json({ code: 'NOT_FOUND' }, 404);
    return json(
      {
        key,
        outcome: v.outcome,
        code: v.code,
        token: v.token === null ? header : String(v.token),
        markBefore: String(v.markBefore),
        mark: String(v.markAfter),
      },
      v.ok ? 200 : v.code === 'STALE_TOKEN' ? 409 : 400,
    );
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
