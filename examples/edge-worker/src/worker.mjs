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

export class FencedResource {
  constructor(ctx) {
    this.gate = new Gate(durableObjectStore(ctx.storage));
  }

  async fetch(request) {
    const url = new URL(request.url);
    const [, , encoded, action] = url.pathname.split('/');
    const key = decodeURIComponent(encoded);
    if (request.method === 'GET' && action === undefined) {
      const { mark, value } = await this.gate.read(key);
      return json({ key, mark: String(mark), value: value ?? null });
    }
    const header = request.headers.get(TOKEN_HEADER);
    let token;
    try {
      token = parseToken(header); // strict decimal: no sign, leading zero, space, fraction, exponent
    } catch (e) {
      if (!(e instanceof FencegateError)) throw e;
      const mark = String(await this.gate.mark(key));
      return json({ key, outcome: 'reject', code: e.code, token: header, markBefore: mark, mark }, 400);
    }
    let v;
    if (request.method === 'PUT' && action === undefined) v = await this.gate.write(key, token, await request.text());
    else if (request.method === 'POST' && action === 'establish') v = await this.gate.establish(key, token);
    else if (request.method === 'DELETE' && action === undefined) v = await this.gate.delete(key, token);
    else return json({ code: 'NOT_FOUND' }, 404);
    return json(
      { key, outcome: v.outcome, code: v.code, token: String(v.token), markBefore: String(v.markBefore), mark: String(v.markAfter) },
      v.ok ? 200 : 409,
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
