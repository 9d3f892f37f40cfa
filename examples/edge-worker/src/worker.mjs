// A Cloudflare Worker that fences writes to resources kept in Durable Objects.
//
// Each resource key gets its own Durable Object (idFromName(key)); the object
// keeps the value and the fence state (high-water mark) in its storage and
// changes both in one storage transaction through fencegate's Gate (DESIGN R1).
// Both parts come ready-made from fencegate/durable-object.
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
import { FencedObject, fencedWorker } from 'fencegate/durable-object';

// The Durable Object class bound as RESOURCES in wrangler.jsonc: one fenced resource per object.
export class FencedResource extends FencedObject {}

// The Worker: `/resources/<key>…` goes to the object idFromName(key), which serialises that key's writes.
export default fencedWorker('RESOURCES');
