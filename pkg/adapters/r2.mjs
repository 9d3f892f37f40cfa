// fencegate/r2 — a compare-and-set host store on a Cloudflare R2 bucket
// binding, in a Worker (workerd, Miniflare, wrangler dev).
//
// The same fenced objects as fencegate/s3 (object-store.mjs, docs/stores.md
// "Objects: S3 and R2"): the object at `prefix + key`, its body the state text,
// a commit id and the user's bytes; the version is the ETag. A commit is one
// `bucket.put(key, body, { onlyIf: { etagMatches } })` (a new key:
// `{ etagDoesNotMatch: '*' }`); R2 answers null when the condition fails: a
// lost compare-and-set (false), and the gate loads and decides again.
// An error thrown by the binding may have written (`commitUnknown`), except
// R2's refusal of the request's metadata (code 10012, seen in Miniflare):
// nothing was written, STORE_ERROR. Other R2 refusals are reported as
// COMMIT_UNKNOWN, which is never wrong, only more cautious.
import { ObjectStore } from './object-store.mjs';
import { invalid } from '../lib/options.mjs';

export { decodeObjectBody, encodeObjectBody } from './object-store.mjs';

/** R2's limits: the largest single `put` (5 GiB less 5 MiB) and custom metadata (2048 bytes of names and values, as Miniflare enforces it). */
export const R2_LIMITS = Object.freeze({ maxBytes: 5 * 2 ** 30 - 5 * 2 ** 20, metadataBytes: 2048 });

/** R2 error codes (the number at the end of the message) after which nothing was written: metadata too large. */
const DEFINITE = /\((10012)\)\s*$/;

/**
 * A compare-and-set host store on an R2 bucket binding (`env.BUCKET`).
 * Options: `prefix`, `readAs`, `contentType`, `metadata`, `maxBytes`, `encode`/`decode`.
 */
export class R2Store extends ObjectStore {
  #bucket;

  constructor(bucket, options) {
    if (bucket === null || typeof bucket !== 'object' || typeof bucket.put !== 'function' || typeof bucket.get !== 'function') {
      throw invalid('R2Store needs an R2 bucket binding (env.MY_BUCKET)', { bucket: bucket === null ? 'null' : typeof bucket });
    }
    super('R2Store', options, R2_LIMITS);
    this.#bucket = bucket;
  }

  async _get(objectKey, ifMatch) {
    const obj = await this.#bucket.get(objectKey, ifMatch === null ? undefined : { onlyIf: { etagMatches: ifMatch } });
    if (obj === null) return null;
    if (!('body' in obj)) return null; // the condition failed: R2 answers the object's metadata without a body
    return { bytes: new Uint8Array(await obj.arrayBuffer()), etag: obj.etag };
  }

  async _put(objectKey, body, expected) {
    let r;
    try {
      r = await this.#bucket.put(objectKey, body, {
        onlyIf: expected === null ? { etagDoesNotMatch: '*' } : { etagMatches: expected },
        httpMetadata: { contentType: this._contentType },
        ...(this._metadata === undefined ? {} : { customMetadata: this._metadata }),
      });
    } catch (e) {
      if (e !== null && typeof e === 'object' && !DEFINITE.test(String(e.message))) e.commitUnknown = true;
      throw e;
    }
    if (r === null) return null;
    return typeof r.etag === 'string' ? r.etag : '';
  }
}
