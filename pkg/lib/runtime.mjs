// Loads the WebAssembly module once per realm. Entry files call initSync()
// (Node, workerd) or core.init() calls initAsync() (browsers).
import glueInit, { initSync as glueInitSync, __setErrorClass, __tables } from '../dist/fencegate.js';
import issuerGlueInit, { initSync as issuerGlueInitSync, __setErrorClass as __setIssuerErrorClass } from '../dist/fencegate_issuer.js';
import { FencegateError } from './errors.mjs';
import { attachExchange } from './exchange.mjs';

/**
 * The Web Crypto object whose CSPRNG draws the random part of lease ids:
 * `globalThis.crypto` (browsers, workerd, Deno, Bun, Node ≥ 19), looked up on
 * first use (on Node, reading `globalThis.crypto` loads its Web Crypto
 * implementation, cold start that a gate never needs: docs/decisions/cold-start.md).
 * Node 18 has no global one: the Node entries register `node:crypto`'s
 * `webcrypto` as the fallback, as a function called on first use.
 */
let webCrypto = null;
let fallbackCrypto = null;

/** Registers the Web Crypto to use when the realm has none (Node 18): an object, or a function returning it. */
export function setWebCrypto(c) {
  fallbackCrypto = c;
}

function hostCrypto() {
  const g = globalThis.crypto;
  if (typeof g?.getRandomValues === 'function') return g;
  const c = typeof fallbackCrypto === 'function' ? fallbackCrypto() : fallbackCrypto;
  return typeof c?.getRandomValues === 'function' ? c : null;
}

/** `n` bytes from the host's CSPRNG (`crypto.getRandomValues`). */
export function randomBytes(n) {
  webCrypto ??= hostCrypto();
  if (webCrypto === null) {
    throw new FencegateError('NOT_INITIALIZED', 'this runtime has no crypto.getRandomValues (Web Crypto): the Issuer draws its lease ids from it');
  }
  return webCrypto.getRandomValues(new Uint8Array(n));
}

/** True once the module is instantiated; live binding read by core.mjs. */
export let ready = false;
/** Code strings indexed like the Rust `Code` discriminants. */
export let CODES = [];
/**
 * The names and limits Rust defines (`__tables`, src/wasm/resource.rs): read once
 * at instantiation, so JS keeps no copy of them. `{ codes, outcomes,
 * duplicateStatus, higherEpochModes, algorithms, maxTokenText, maxKeyBytes,
 * maxWindow, defaultWindow, leaseKeyBytes, maxHolderBytes, maxOpIdBytes, maxRequestIdBytes,
 * maxLeaseIdBytes, layout }`.
 */
export let TABLES = null;

// Hot-path constants: JS literals, checked against Rust's at instantiation.
/** Status of a duplicate of an advance (+1: of an accept); 0 advance, 1 accept, 2 + code index reject. */
export const DUPLICATE = 256;
/** The outcome names verdict.mjs spells, by status class. */
const OUTCOMES = ['advance', 'accept', 'reject', 'duplicate'];
/**
 * The longest resource key, in UTF-8 bytes: the longest signed-token scope
 * (a key is its own default scope), and short enough for every shipped
 * store's index (PostgreSQL's btree refuses rows above about 2,700 bytes).
 */
export const MAX_KEY_BYTES = 512;
/** The first two codes (verdicts with them carry `token: null`). */
const TOKEN_CODES = ['MISSING_TOKEN', 'MALFORMED_TOKEN'];
/**
 * `__tables()` as read at build time from the same `.wasm` (the Node bundles:
 * scripts/build-node.mjs writes it in place of this `null`), else null and
 * read from Wasm at instantiation. The first `__tables()` call costs cold
 * start (its object-building code compiled and run once), code a verdict
 * never runs again (docs/decisions/cold-start.md). Either way it passes the
 * check below.
 */
const BUILD_TABLES = null;

function attach(exports) {
  __setErrorClass(FencegateError);
  const t = BUILD_TABLES ?? __tables();
  // The hot path spells these as literals: they must be Rust's.
  const same =
    t.duplicateStatus === DUPLICATE && t.maxKeyBytes === MAX_KEY_BYTES &&
    t.outcomes.join() === OUTCOMES.join() && t.codes.slice(0, 2).join() === TOKEN_CODES.join();
  if (!same) throw new Error('fencegate: pkg/lib does not match the Wasm build (its __tables differ)');
  attachExchange(exports, t);
  TABLES = t;
  CODES = t.codes;
  ready = true;
}

/** Instantiates from a `WebAssembly.Module` or the `.wasm` bytes. */
export function initSync(module) {
  if (ready) return;
  attach(glueInitSync({ module }));
}

/**
 * Instantiates from a URL, Response, bytes or Module (default: the packaged
 * `.wasm` beside the glue). `issuer`: where the issuer side is (the same
 * kinds; default: `fencegate_issuer_bg.wasm` beside its glue), loaded only
 * when an `Issuer` or `reconcile` is first used.
 */
export async function initAsync(input, issuer) {
  if (issuer !== undefined && !issuerReady) issuerInput = issuer;
  if (ready) return;
  attach(await glueInit(input === undefined ? undefined : { module_or_path: input }));
}

// The issuer side: a second WebAssembly module (`fencegate_issuer_bg.wasm`:
// `__issuerStep`, `__issuerDecode`, `__reconcilePlan`; docs/decisions/two-wasm-modules.md),
// so a resource that only gates never downloads, compiles or
// instantiates the issuer's code. Node and workerd register a synchronous source
// at import; the browser entry fetches it on first use.
let issuerSource = null;
let issuerInput;
let issuerLoading = null;
/** True once the issuer side is instantiated. */
export let issuerReady = false;

/** Registers how to get the issuer side synchronously: `() => WebAssembly.Module | bytes` (Node, workerd). */
export function setIssuerSource(source) {
  issuerSource = source;
}

function attachIssuer() {
  __setIssuerErrorClass(FencegateError);
  issuerReady = true;
}

function issuerFailed(e) {
  return new FencegateError('NOT_INITIALIZED', `the issuer side (fencegate_issuer_bg.wasm) could not be loaded: ${e?.message ?? e}`, { cause: e });
}

/**
 * Loads the issuer side if it is not loaded yet: null when it is ready on
 * return (always on Node and workerd), else a promise that settles when it is
 * (the browser's first Issuer or reconcile call). Rejects with NOT_INITIALIZED
 * when it cannot be loaded; a later call tries again.
 */
export function loadIssuerSide() {
  if (issuerReady) return null;
  if (issuerSource !== null) {
    try {
      issuerGlueInitSync({ module: issuerSource() });
    } catch (e) {
      throw issuerFailed(e);
    }
    attachIssuer();
    return null;
  }
  issuerLoading ??= issuerGlueInit(issuerInput === undefined ? undefined : { module_or_path: issuerInput }).then(attachIssuer, (e) => {
    issuerLoading = null;
    throw issuerFailed(e);
  });
  return issuerLoading;
}
