// Loads the WebAssembly module once per realm. Entry files call initSync()
// (Node, workerd) or core.init() calls initAsync() (browsers).
import glueInit, { initSync as glueInitSync, __setErrorClass, __codes, __marksPtr } from '../dist/fencegate.js';
import { FencegateError } from './errors.mjs';

/**
 * The Web Crypto object whose CSPRNG draws the random part of lease ids:
 * `globalThis.crypto` (browsers, workerd, Deno, Bun, Node ≥ 19). Node 18 has
 * no global one, so the Node entries pass `node:crypto`'s `webcrypto`.
 */
let webCrypto = globalThis.crypto;

/** Uses `c` when the realm has no global Web Crypto (Node 18). */
export function setWebCrypto(c) {
  if (typeof webCrypto?.getRandomValues !== 'function') webCrypto = c;
}

/** `n` bytes from the host's CSPRNG (`crypto.getRandomValues`). */
export function randomBytes(n) {
  if (typeof webCrypto?.getRandomValues !== 'function') {
    throw new FencegateError('NOT_INITIALIZED', 'this runtime has no crypto.getRandomValues (Web Crypto): the Issuer draws its lease ids from it');
  }
  return webCrypto.getRandomValues(new Uint8Array(n));
}

/** True once the module is instantiated; live binding read by core.mjs. */
export let ready = false;
/** Code strings indexed like the Rust `Code` discriminants. */
export let CODES = [];

let memory = null;
let marksPtr = 0;
let marks = new Float64Array(0);

/**
 * `[markBefore, markAfter]` of the last gate verdict (−1 = above 2^53−1), a
 * view over Wasm memory; re-made when memory growth detached the old buffer.
 */
export function lastMarks() {
  if (marks.length === 0) marks = new Float64Array(memory.buffer, marksPtr, 2);
  return marks;
}

function attach(exports) {
  memory = exports.memory;
  marksPtr = __marksPtr();
  __setErrorClass(FencegateError);
  CODES = __codes();
  ready = true;
}

/** Instantiates from a `WebAssembly.Module` or the `.wasm` bytes. */
export function initSync(module) {
  if (ready) return;
  attach(glueInitSync({ module }));
}

/** Instantiates from a URL, Response, bytes or Module (default: the packaged `.wasm` beside the glue). */
export async function initAsync(input) {
  if (ready) return;
  attach(await glueInit(input === undefined ? undefined : { module_or_path: input }));
}
