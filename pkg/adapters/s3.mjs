// fencegate/s3 — a compare-and-set host store on an S3-compatible object store
// through the AWS SDK for JavaScript v3 (`@aws-sdk/client-s3`), passed in.
//
// The fenced resource is the object at `prefix + key` in `bucket`; its body
// is a fenced object (state text, commit id, then the user's bytes:
// object-store.mjs, docs/stores.md "Objects: S3 and R2"). The version is the
// ETag. A commit is one PutObject with `If-Match: <ETag>` (a new key:
// `If-None-Match: *`):
//   412 PreconditionFailed                       lost compare-and-set: false
//   409 ConditionalRequestConflict               another conditional write was in flight: false
//                                                (S3: "fetch the object's ETag and retry": the gate loads and decides again)
//   404 NoSuchKey on If-Match                    the object was deleted since the load: false
//   any other 4xx                                refused by the service, nothing written: the error (STORE_ERROR)
//   5xx, a timeout, a lost connection, no reply  may have written: `commitUnknown` (COMMIT_UNKNOWN)
// The SDK sends a request again after a 5xx or a network error (its retry
// strategy, 3 attempts by default), also when the first attempt's PUT landed
// and only its reply was lost; the resend then fails its precondition against
// its own write. So a 412/409/404 after more than one attempt
// (`$metadata.attempts`) is checked: the store reads the object, and its own
// commit id there means the PUT landed (true); anything else is
// `commitUnknown` (an earlier attempt may have landed and been overwritten).
//
// The client: an `S3` (aggregated client: `putObject`, `getObject`), or an
// `S3Client` with `commands: { GetObjectCommand, PutObjectCommand }`. This
// module imports no SDK code.
import { ObjectStore, decodeObjectBody } from './object-store.mjs';
import { invalid } from '../lib/options.mjs';

export { decodeObjectBody, encodeObjectBody } from './object-store.mjs';

/** S3's limits: the largest single PUT (5 GiB) and user metadata (2 KB, names and values). */
export const S3_LIMITS = Object.freeze({ maxBytes: 5 * 2 ** 30, metadataBytes: 2048 });

const statusOf = (e) => (e !== null && typeof e === 'object' && e.$metadata ? e.$metadata.httpStatusCode : undefined);
const attemptsOf = (e) => (e !== null && typeof e === 'object' && e.$metadata && Number.isSafeInteger(e.$metadata.attempts) ? e.$metadata.attempts : 1);

function unknown(e) {
  if (e !== null && typeof e === 'object') {
    e.commitUnknown = true;
    return e;
  }
  return Object.assign(new Error(String(e)), { commitUnknown: true, cause: e });
}

/**
 * A compare-and-set host store on an S3-compatible bucket. `client`: an `S3`
 * or an `S3Client` (then `options.commands`); `options.bucket` (required),
 * `prefix`, `readAs`, `contentType`, `metadata`, `maxBytes`, `encode`/`decode`.
 */
export class S3Store extends ObjectStore {
  #send;
  #bucket;

  constructor(client, options) {
    const o = options === undefined ? {} : options;
    if (o === null || typeof o !== 'object' || Array.isArray(o)) throw invalid('S3Store options must be an object', { options });
    const { bucket, commands, ...rest } = o;
    super('S3Store', rest, S3_LIMITS);
    if (typeof bucket !== 'string' || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
      throw invalid('S3Store needs options.bucket: an S3 bucket name (3 to 63 lowercase letters, digits, dots and hyphens)', { option: 'bucket' });
    }
    this.#bucket = bucket;
    this.#send = senderOf(client, commands);
  }

  /** The bucket. */
  get bucket() {
    return this.#bucket;
  }

  async _get(objectKey, ifMatch) {
    let r;
    try {
      r = await this.#send('get', { Bucket: this.#bucket, Key: objectKey, ...(ifMatch === null ? {} : { IfMatch: ifMatch }) });
    } catch (e) {
      const status = statusOf(e);
      if (status === 404 && (e.name === 'NoSuchKey' || e.Code === 'NoSuchKey' || e.name === 'NotFound')) return null;
      if (status === 412 && ifMatch !== null) return null;
      throw e;
    }
    const bytes = r.Body === undefined || r.Body === null ? new Uint8Array(0) : await r.Body.transformToByteArray();
    return { bytes, etag: r.ETag };
  }

  async _put(objectKey, body, expected, commitId) {
    const input = {
      Bucket: this.#bucket,
      Key: objectKey,
      Body: body,
      ContentLength: body.length,
      ContentType: this._contentType,
      ...(this._metadata === undefined ? {} : { Metadata: this._metadata }),
      ...(expected === null ? { IfNoneMatch: '*' } : { IfMatch: expected }),
    };
    let r;
    try {
      r = await this.#send('put', input);
    } catch (e) {
      const status = statusOf(e);
      const lost = status === 412 || status === 409 || (status === 404 && expected !== null && e.name !== 'NoSuchBucket');
      if (lost) {
        if (attemptsOf(e) <= 1) return null;
        return this.#resent(objectKey, commitId, e);
      }
      if (typeof status === 'number' && status >= 400 && status < 500) throw e; // the service refused it: nothing written
      throw unknown(e);
    }
    return typeof r.ETag === 'string' ? r.ETag : '';
  }

  /** A lost precondition after the SDK sent the PUT more than once: its own commit id in the object means an attempt landed. */
  async #resent(objectKey, commitId, e) {
    let got;
    try {
      got = await this._get(objectKey, null);
    } catch (cause) {
      throw unknown(Object.assign(new Error(`the PUT was sent ${attemptsOf(e)} times and lost its precondition; reading the object to tell failed`), { cause }));
    }
    const body = got === null ? null : decodeObjectBody(got.bytes);
    if (body !== null && body.commitId === commitId) return got.etag;
    throw unknown(
      Object.assign(new Error(`the PUT was sent ${attemptsOf(e)} times (the SDK's retries) and lost its precondition: an earlier attempt may have landed and been overwritten`), {
        cause: e,
      }),
    );
  }
}

/** `send(kind, input)` for an `S3` (putObject/getObject) or an `S3Client` with the two command classes. */
function senderOf(client, commands) {
  if (client !== null && typeof client === 'object' && typeof client.putObject === 'function' && typeof client.getObject === 'function' && commands === undefined) {
    return (kind, input) => (kind === 'put' ? client.putObject(input) : client.getObject(input));
  }
  if (client !== null && typeof client === 'object' && typeof client.send === 'function') {
    if (commands === null || typeof commands !== 'object' || typeof commands.GetObjectCommand !== 'function' || typeof commands.PutObjectCommand !== 'function') {
      throw invalid('S3Store with an S3Client needs options.commands: { GetObjectCommand, PutObjectCommand } from @aws-sdk/client-s3 (or pass an S3)', {
        option: 'commands',
      });
    }
    const { GetObjectCommand, PutObjectCommand } = commands;
    return (kind, input) => client.send(kind === 'put' ? new PutObjectCommand(input) : new GetObjectCommand(input));
  }
  throw invalid('S3Store needs an @aws-sdk/client-s3 client: an S3, or an S3Client with options.commands', {
    client: client === null ? 'null' : typeof client,
  });
}
