// Shared by fencegate/s3 and fencegate/r2: a compare-and-set host store on an
// object store whose only concurrency control is a conditional PUT on the
// object's ETag.
//
// The fenced resource is one object at the user's key (`prefix + key`). Its
// body is a fenced object (docs/stores.md "Objects: S3 and R2"):
//
//   fencegate-object:1 <state bytes> <v|-> <commit id>\n<state text>\n<value bytes>
//
// `v`: a value follows (the user's bytes, possibly empty); `-`: none (an
// establish on a new key, or a fenced delete: the tombstone that keeps the
// fence). The commit id is 22 random base64url characters, new per commit.
// The record's version is the object's ETag. A commit is one PUT with
// `If-Match: <loaded ETag>` (`If-None-Match: *` for a new key): a lost
// precondition answers false and the gate loads, decides again and retries.
//
// Why the state is in the body and not in the object's metadata: S3's and
// R2's ETag is a hash of the body only. A change of the metadata alone (an
// establish, a write of the same bytes, a second tombstone) keeps the ETag, so
// an `If-Match` taken before it still holds after it and a stale writer's PUT
// would land over a higher mark. With the state (and a fresh commit id) in
// the body every commit gets a new ETag, and an ETag that still matches means
// the very body, state included, that the decision was made from.
//
// Values: by default the user's bytes (a string is stored as its UTF-8 bytes;
// Uint8Array, any ArrayBufferView, ArrayBuffer), read back as a Uint8Array
// (`readAs: 'text'`: a string); no value codec applies. With `encode`/`decode`
// (a codec, e.g. `valueCodec`) values are JS values stored as the codec's text.
import { encodeWith, loadedRecord, storeOptions } from './support.mjs';
import { invalid } from '../lib/options.mjs';

const MAGIC = 'fencegate-object:1 ';
/** The longest first line a fenced object has (magic, length, flag, id, newline). */
const MAX_HEADER = MAGIC.length + 10 + 1 + 1 + 1 + 22 + 1;
/** The largest state text a fenced object may carry (a state far above any the gate writes). */
export const MAX_STATE_BYTES = 1 << 20;
/** Object keys: at most this many UTF-8 bytes, prefix included (S3's and R2's limit). */
export const MAX_OBJECT_KEY_BYTES = 1024;

const encoder = new TextEncoder();
const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Whether `s` is well-formed UTF-16 (no lone surrogate), so its UTF-8 bytes say exactly the same. */
function noLoneSurrogates(s) {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?:^|[^\ud800-\udbff])[\udc00-\udfff]/.test(s);
}

const cut = (s) => (s.length > 40 ? s.slice(0, 40) + '…' : s);

/**
 * The object key of resource key `key` under `prefix`, checked before anything
 * is sent: a well-formed string (the resource key not empty) without control characters, without
 * a `.` or `..` path segment (servers and tools that map keys to paths resolve
 * them), at most 1024 UTF-8 bytes with the prefix. Else INVALID_ARGUMENT with
 * `reason` (KEY_NOT_A_STRING, KEY_EMPTY, KEY_NOT_WELL_FORMED,
 * KEY_CONTROL_CHARACTER, KEY_DOT_SEGMENT, KEY_TOO_LONG) and `key` (cut).
 */
export function objectKeyOf(prefix, key) {
  if (typeof key !== 'string') throw invalid('an object key must be a string', { reason: 'KEY_NOT_A_STRING', key });
  const full = prefix + key;
  const refuse = (reason, why) => invalid(`object key ${JSON.stringify(cut(full))}: ${why}`, { reason, key: cut(key) });
  if (key.length === 0) throw refuse('KEY_EMPTY', 'the resource key must not be empty');
  if (!noLoneSurrogates(full)) throw refuse('KEY_NOT_WELL_FORMED', 'must be well-formed Unicode (no lone surrogates): it is sent as UTF-8');
  if (/[\u0000-\u001f\u007f]/.test(full)) throw refuse('KEY_CONTROL_CHARACTER', 'must not contain control characters');
  if (full.split('/').some((s) => s === '.' || s === '..')) throw refuse('KEY_DOT_SEGMENT', "must not have a '.' or '..' path segment");
  if (full.length > MAX_OBJECT_KEY_BYTES / 3) {
    const bytes = encoder.encode(full).length;
    if (bytes > MAX_OBJECT_KEY_BYTES) throw Object.assign(refuse('KEY_TOO_LONG', `is ${bytes} UTF-8 bytes; at most ${MAX_OBJECT_KEY_BYTES}`), { keyBytes: bytes });
  }
  return full;
}

function randomId() {
  const b = new Uint8Array(16);
  if (globalThis.crypto && typeof globalThis.crypto.getRandomValues === 'function') globalThis.crypto.getRandomValues(b);
  else for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let s = '';
  let bits = 0;
  let n = 0;
  for (const x of b) {
    n = (n << 8) | x;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      s += abc[(n >> bits) & 63];
    }
  }
  return s + abc[(n << (6 - bits)) & 63]; // 128 bits: 21 full characters and one of 2 bits
}

/**
 * The body of a fenced object: state text `state`, value bytes `value` (null:
 * none) and commit id `id`, as one Uint8Array.
 */
export function encodeObjectBody(state, value, id = randomId()) {
  const s = encoder.encode(state);
  const head = encoder.encode(`${MAGIC}${s.length} ${value === null ? '-' : 'v'} ${id}\n`);
  const out = new Uint8Array(head.length + s.length + 1 + (value === null ? 0 : value.length));
  out.set(head, 0);
  out.set(s, head.length);
  out[head.length + s.length] = 10;
  if (value !== null) out.set(value, head.length + s.length + 1);
  return out;
}

/**
 * `{ state, value, commitId }` of a fenced object's body (`value`: a
 * Uint8Array view of `bytes`, or null for none), or null when `bytes` is not a
 * fenced object (a plain PUT, a damaged or foreign object).
 */
export function decodeObjectBody(bytes) {
  if (!(bytes instanceof Uint8Array)) return null;
  const end = bytes.subarray(0, MAX_HEADER).indexOf(10);
  if (end < 0) return null;
  let head;
  try {
    head = fatal.decode(bytes.subarray(0, end));
  } catch {
    return null;
  }
  const m = /^fencegate-object:1 (0|[1-9][0-9]{0,9}) ([v-]) ([A-Za-z0-9_-]{22})$/.exec(head);
  if (m === null) return null;
  const n = Number(m[1]);
  const at = end + 1;
  if (n > MAX_STATE_BYTES || at + n + 1 > bytes.length || bytes[at + n] !== 10) return null;
  let state;
  try {
    state = fatal.decode(bytes.subarray(at, at + n));
  } catch {
    return null;
  }
  const rest = at + n + 1;
  if (m[2] === '-' && rest !== bytes.length) return null;
  return { state, value: m[2] === '-' ? null : bytes.subarray(rest), commitId: m[3] };
}

const tagOf = (v) => Object.prototype.toString.call(v);

/** The bytes of a value in bytes mode (no copy of a Uint8Array), or null when it is not bytes. */
function rawBytes(value) {
  if (typeof value === 'string') return encoder.encode(value);
  if (value instanceof Uint8Array) return value;
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (tagOf(value) === '[object ArrayBuffer]') return new Uint8Array(value);
  return null;
}

const identity = (b) => b;
const utf8 = (b) => fatal.decode(b);

/**
 * The options every object store takes (checked): `prefix`, `readAs`,
 * `contentType`, `metadata`, `maxBytes`, a codec (`encode`/`decode`). `limits`:
 * `{ metadataBytes, maxBytes }` of the service.
 */
export const OBJECT_OPTIONS = {
  prefix: 'string',
  readAs: 'string',
  contentType: 'string',
  metadata: 'object',
  maxBytes: 'number',
  encode: 'function',
  decode: 'function',
  name: null,
};

/**
 * The shared part of S3Store and R2Store. A subclass provides
 * `_get(objectKey, ifMatch)` → `{ bytes, etag } | null` (null: no object, or
 * `ifMatch` given and the object's ETag is another) and
 * `_put(objectKey, body, expected, commitId)` → the new ETag, or null when the
 * precondition failed (`expected`: the ETag to match, null: the object must
 * not exist); errors that may have written carry `commitUnknown: true`.
 */
export class ObjectStore {
  #prefix;
  #codec;
  #readAs;
  #maxBytes;
  /** Metadata written on every PUT (the user's, checked). */
  _metadata;
  _contentType;

  constructor(what, options, limits, extra = {}) {
    const o = storeOptions(options, what, { ...OBJECT_OPTIONS, ...extra });
    this.#prefix = o.prefix ?? '';
    if (this.#prefix !== '' && !noLoneSurrogates(this.#prefix)) throw invalid('prefix must be well-formed Unicode', { option: 'prefix' });
    const readAs = o.readAs ?? 'bytes';
    if (readAs !== 'bytes' && readAs !== 'text') throw invalid(`readAs must be 'bytes' or 'text', got ${JSON.stringify(readAs)}`, { option: 'readAs' });
    if ((o.encode === undefined) !== (o.decode === undefined)) {
      throw invalid('encode and decode come as a pair of functions (a codec): pass both, or neither for bytes', {
        option: o.encode === undefined ? 'encode' : 'decode',
      });
    }
    if (o.encode !== undefined && o.readAs !== undefined) {
      throw invalid('readAs is for byte values; with a codec (encode/decode) values are read back by decode', { option: 'readAs' });
    }
    this.#codec = o.encode === undefined ? null : { encode: o.encode, decode: o.decode };
    this.#readAs = readAs;
    const maxBytes = o.maxBytes ?? limits.maxBytes;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1 || maxBytes > limits.maxBytes) {
      throw invalid(`maxBytes must be an integer from 1 to ${limits.maxBytes} (the service's largest single PUT)`, { option: 'maxBytes', maxBytes });
    }
    this.#maxBytes = maxBytes;
    this._contentType = o.contentType ?? 'application/octet-stream';
    if (!/^[\x20-\x7e]+$/.test(this._contentType)) throw invalid('contentType must be printable ASCII', { option: 'contentType' });
    this._metadata = metadataOf(o.metadata, limits.metadataBytes);
  }

  /** The object key of resource key `key` (`prefix + key`); INVALID_ARGUMENT (with `reason`) for a key the store refuses. */
  objectKey(key) {
    return objectKeyOf(this.#prefix, key);
  }

  /**
   * Checks a value before anything is sent (the gate calls this first): bytes
   * mode refuses anything but a string, an ArrayBufferView or an ArrayBuffer
   * (reason NOT_BYTES: a stream or Blob cannot be sent again after a lost
   * compare-and-set), a string with lone surrogates, and a value over
   * `maxBytes` (reason OBJECT_TOO_LARGE); codec mode answers the codec's text.
   * Returns the text the gate passes as `change.encoded` (bytes mode: '').
   */
  encodeValue(value) {
    if (this.#codec !== null) {
      const text = encodeWith(this.#codec.encode, value);
      if (!noLoneSurrogates(text)) throw invalid("value: the store's encode returned text with lone surrogates (not UTF-8)");
      if (text.length > this.#maxBytes) this.#sizeOf(encoder.encode(text).length);
      return text;
    }
    if (typeof value === 'string') {
      if (!noLoneSurrogates(value)) throw invalid('value: a string value must be well-formed Unicode (no lone surrogates): it is stored as UTF-8', { reason: 'NOT_UTF8' });
      if (value.length > this.#maxBytes / 3) this.#sizeOf(encoder.encode(value).length);
      return '';
    }
    const b = rawBytes(value);
    if (b === null) {
      throw invalid(
        'value: an object store keeps bytes: a string, a Uint8Array (any ArrayBufferView) or an ArrayBuffer; ' +
          'a stream or Blob is refused (a lost compare-and-set sends the body again); pass encode/decode to store JS values',
        { reason: 'NOT_BYTES' },
      );
    }
    this.#sizeOf(b.length);
    return '';
  }

  #sizeOf(bytes) {
    if (bytes > this.#maxBytes) {
      throw invalid(`value: ${bytes} bytes is over this store's maxBytes (${this.#maxBytes}); multipart uploads are not used`, {
        reason: 'OBJECT_TOO_LARGE',
        bytes,
        maxBytes: this.#maxBytes,
      });
    }
  }

  /** The value bytes of a `set` change. */
  #valueBytes(change) {
    if (this.#codec !== null) {
      const text = typeof change.encoded === 'string' ? change.encoded : this.encodeValue(change.value);
      return encoder.encode(text);
    }
    this.encodeValue(change.value); // checked again: commit may be called without the gate
    return rawBytes(change.value);
  }

  /** The record `{ state, version, value }` of a loaded object; a body that is not a fenced object has no state (CORRUPT_STATE). */
  _record(bytes, etag) {
    const body = decodeObjectBody(bytes);
    if (body === null) return { state: undefined, version: etag, value: undefined };
    const decode = this.#codec !== null ? (b) => this.#codec.decode(utf8(b)) : this.#readAs === 'text' ? utf8 : identity;
    return loadedRecord(body.state, etag, body.value, decode);
  }

  /** `{ state, version, value }` of `key` (version: the object's ETag), or null when there is no object. */
  async load(key) {
    const got = await this._get(this.objectKey(key), null);
    return got === null ? null : this._record(got.bytes, got.etag);
  }

  /** Writes state and change in one conditional PUT when the object's ETag is still `expectedVersion` (null: no object); true when it did. */
  async commit(key, expectedVersion, nextState, change) {
    const expected = expectedVersion === null || expectedVersion === undefined ? null : String(expectedVersion);
    return (await this.#write(key, expected, JSON.stringify(nextState), change)) !== null;
  }

  /**
   * The gate's state-cache commit (docs/stores.md "commitFrom"): the same one
   * conditional PUT on `expected.version` (the ETag; null: no object). The ETag
   * hashes the body, state text and commit id included, so a matching ETag is
   * the very record `expected.state` was read from. `{ version }`: the new ETag;
   * false: the precondition failed.
   */
  async commitFrom(key, expected, nextText, change) {
    const etag = await this.#write(key, expected === null ? null : String(expected.version), nextText, change);
    if (etag === null) return false;
    if (typeof etag !== 'string' || etag === '') {
      // committed, but the version it now has is not known: the gate must not cache a guess
      throw Object.assign(new Error('the PUT succeeded but its response carries no ETag'), { commitUnknown: true });
    }
    return { version: etag };
  }

  /** One conditional PUT of `stateText` and the change; the new ETag, or null when the precondition failed. */
  async #write(key, expected, stateText, change) {
    const objectKey = this.objectKey(key);
    let value;
    if (change.kind === 'set') value = this.#valueBytes(change);
    else if (change.kind === 'delete') value = null;
    else if (expected === null) value = null;
    else {
      // no data change (establish, quarantine): the body keeps the value of the version the decision was made on
      const got = await this._get(objectKey, expected);
      if (got === null) return null;
      const body = decodeObjectBody(got.bytes);
      if (body === null) return null;
      value = body.value;
    }
    const id = randomId();
    const body = encodeObjectBody(stateText, value, id);
    this.#sizeOf(body.length);
    const etag = await this._put(objectKey, body, expected, id);
    return etag === null ? null : etag ?? '';
  }
}

/** The user's metadata checked: names `[a-z0-9-]`, printable ASCII values, at most `limit` bytes in all; INVALID_ARGUMENT (reason METADATA_TOO_LARGE when over). */
function metadataOf(metadata, limit) {
  if (metadata === undefined) return undefined;
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) throw invalid('metadata must be an object of strings', { option: 'metadata' });
  const out = {};
  let bytes = 0;
  for (const [name, v] of Object.entries(metadata)) {
    if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) throw invalid(`metadata name ${JSON.stringify(cut(name))} must be lowercase letters, digits and '-'`, { option: 'metadata', name: cut(name) });
    if (typeof v !== 'string' || !/^[\x20-\x7e]*$/.test(v)) throw invalid(`metadata ${name} must be a printable ASCII string`, { option: 'metadata', name });
    bytes += name.length + v.length;
    out[name] = v;
  }
  if (bytes > limit) {
    throw invalid(`metadata is ${bytes} bytes (names and values); the service keeps at most ${limit}`, { option: 'metadata', reason: 'METADATA_TOO_LARGE', bytes, limit });
  }
  return out;
}
