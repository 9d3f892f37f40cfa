// A fenced key-value HTTP API on Node: values live in SQLite, each key's
// high-water mark lives in the same row and changes in the same transaction
// (fencegate/sqlite), and an issuer endpoint grants leases with epochs.
//
//   POST   /leases/<scope>          {"holder","ttlMs","requestId"?} → a lease and its epoch (409 LEASE_HELD)
//   POST   /leases/<scope>/renew    {"leaseId","holder","ttlMs"}    → same epoch, new expiry (409 LEASE_EXPIRED / LEASE_NOT_HELD)
//   POST   /leases/<scope>/release  {"leaseId","holder"}            → {"released": true|false} (409 LEASE_NOT_HELD)
//   PUT    /kv/<key>                body = the value (JSON);  header Fencing-Token
//   POST   /kv/<key>/establish      raise the mark, no data change (a new owner's barrier)
//   DELETE /kv/<key>                fenced delete: clears the value, keeps the mark
//   GET    /kv/<key>                {"key","mark","value"}
//
// Fenced answers (fencegate/http, docs/http.md): 200 applied {"key","outcome","code",
// "token","markBefore","mark"}; refusals as RFC 9457 problem bodies (409 STALE_TOKEN,
// 428 MISSING_TOKEN, 400 MALFORMED_TOKEN, 503 + Retry-After when SQLite fails); epochs
// are decimal text. Fencing-Op-Id and Fencing-Holder headers become opId and holder.
// Leases and epochs say who owns a key, not who may call: put authentication and
// authorization in front of this service (DESIGN R9).
import http from 'node:http';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { Gate, Issuer, FencegateError } from 'fencegate';
import { SqliteStore } from 'fencegate/sqlite';
import { fenceReply } from 'fencegate/http';

const MAX_BODY = 1 << 20;

class HttpError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function send(res, status, body, headers = { 'content-type': 'application/json' }) {
  const text = JSON.stringify(body, (_, v) => (typeof v === 'bigint' ? String(v) : v));
  res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req) {
  let size = 0;
  const chunks = [];
  for await (const c of req) {
    size += c.length;
    if (size > MAX_BODY) throw new HttpError(413, 'TOO_LARGE', 'body over 1 MiB');
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function readJson(req) {
  const text = await readBody(req);
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'BAD_JSON', 'the body must be JSON');
  }
}

/**
 * The service's request handler over an open better-sqlite3 Database. The
 * resource's rows (table "kv") and the issuer's rows (table "leases") live in
 * the same file; every write to a value goes through the gate (DESIGN R13).
 */
export function createHandler(db, { gate, issuer } = {}) {
  gate ??= new Gate(new SqliteStore(db, { table: 'kv' }));
  issuer ??= new Issuer(new SqliteStore(db, { table: 'leases' }), { clock: () => Date.now() });

  async function kv(req, res, key, action) {
    if (req.method === 'GET' && action === undefined) {
      const { mark, value } = await gate.read(key);
      return send(res, 200, { key, mark: String(mark), value: value ?? null });
    }
    let run;
    if (req.method === 'PUT' && action === undefined) {
      const value = await readJson(req);
      run = (token, o) => gate.write(key, token, value, o);
    } else if (req.method === 'POST' && action === 'establish') run = (token, o) => gate.establish(key, token, o);
    else if (req.method === 'DELETE' && action === undefined) run = (token, o) => gate.delete(key, token, o);
    else throw new HttpError(404, 'NOT_FOUND', 'no such route');
    if (!req.readableEnded) await readBody(req); // a refusal never leaves a request stream unread
    // the Fencing-Token header, strict decimal (no sign, leading zero, space, fraction, exponent)
    const reply = await fenceReply(req.headers, key, run);
    return send(res, reply.status, reply.body, reply.headers);
  }

  async function leases(req, res, scope, action) {
    if (req.method !== 'POST') throw new HttpError(404, 'NOT_FOUND', 'no such route');
    const b = await readJson(req);
    if (b === null || typeof b !== 'object') throw new HttpError(400, 'BAD_JSON', 'the body must be a JSON object');
    let r;
    if (action === undefined) r = await issuer.acquire({ scope, holder: b.holder, ttlMs: b.ttlMs, requestId: b.requestId });
    else if (action === 'renew') r = await issuer.renew({ scope, leaseId: b.leaseId, holder: b.holder, ttlMs: b.ttlMs });
    else if (action === 'release') r = await issuer.release({ scope, leaseId: b.leaseId, holder: b.holder });
    else throw new HttpError(404, 'NOT_FOUND', 'no such route');
    // LEASE_NOT_HELD carries no epoch: it says nothing about the lease.
    return send(res, r.ok ? 200 : 409, r.epoch === undefined ? r : { ...r, epoch: String(r.epoch) });
  }

  return async function handle(req, res) {
    try {
      const [, kind, encoded, action, extra] = new URL(req.url, 'http://service').pathname.split('/');
      if (!encoded || extra !== undefined) throw new HttpError(404, 'NOT_FOUND', 'no such route');
      let name;
      try {
        name = decodeURIComponent(encoded);
      } catch {
        throw new HttpError(400, 'BAD_KEY', 'the key is not valid percent-encoding');
      }
      if (kind === 'kv') return await kv(req, res, name, action);
      if (kind === 'leases') return await leases(req, res, name, action);
      throw new HttpError(404, 'NOT_FOUND', 'no such route');
    } catch (e) {
      if (e instanceof HttpError) return send(res, e.status, { code: e.code, message: e.message });
      // INVALID_ARGUMENT (a bad holder/ttlMs) is the caller's fault; store errors are ours
      const status = e instanceof FencegateError && e.code === 'INVALID_ARGUMENT' ? 400 : 500;
      return send(res, status, { code: e instanceof FencegateError ? e.code : 'INTERNAL', message: e.message });
    }
  };
}

// `node server.mjs [db-file]`: listens on PORT (default 8080, 0 = any) on HOST (default 127.0.0.1).
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const db = new Database(process.argv[2] ?? 'fenced.db', { timeout: 5000 });
  db.pragma('journal_mode = WAL');
  const server = http.createServer(createHandler(db));
  server.listen(Number(process.env.PORT ?? 8080), process.env.HOST ?? '127.0.0.1', () => {
    const { address, port } = server.address();
    console.log(`listening on http://${address}:${port}`);
  });
  const stop = () => server.close(() => db.close());
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
