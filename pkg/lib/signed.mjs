// Signed, scoped fence tokens and gate policies (docs/decisions/signed-tokens-verification.md).
// The checks live in
// Rust (src/signed.rs, src/policy.rs); this file validates option shapes and
// shapes results.
import { bounded } from './verdict.mjs';
import { readClaims } from './exchange.mjs';
import * as wasm from '../dist/fencegate.js';
import { ready, TABLES } from './runtime.mjs';
import { invalid, notReady, wellFormed, describe, describeKind, listOf, checkOptions, messageOf, plainObject, utf8Length } from './common.mjs';
import { FencegateError } from './errors.mjs';

// Mode and algorithm names and the longest token text come from Rust
// (`TABLES`, read at instantiation).

function isBytes(v) {
  return v instanceof Uint8Array;
}

function checkText(value, what) {
  if (!wellFormed(value)) throw invalid(`${what} must be a well-formed string`, { [what]: value });
}

/** A scope: a non-empty well-formed string of at most `maxKeyBytes` UTF-8 bytes (the rule of resource keys). */
function checkScope(value) {
  checkText(value, 'scope');
  if (value.length === 0) throw invalid('scope must not be empty', { scope: value });
  const max = TABLES.maxKeyBytes;
  if (utf8Length(value, max) > max) throw invalid(`scope is at most ${max} UTF-8 bytes`, { scopeBytes: utf8Length(value, max) });
}

/** Adds `keys` ({ kid: secret | {hmac} | {ed25519} }) and `retired` ([kid]) to a RawPolicy. */
/** Returns whether a key the host verifies (`ed25519-host`) was added. */
function addKeys(raw, keys, retired, host = false) {
  // Retired ids first, so a key id listed in both is refused (INVALID_ARGUMENT).
  if (retired !== undefined) {
    // Every id is checked (holes of a sparse array included) before the first is retired.
    const ids = listOf(retired, 'retired', (kid) => {
      if (typeof kid !== 'string') throw invalid('a retired key id must be a string', { kid });
    });
    for (const kid of ids) raw.retire(kid);
  }
  if (keys !== undefined) {
    let plain = false;
    try {
      plain = plainObject(keys);
    } catch {
      // a revoked Proxy
    }
    // A Map's entries are not members: `Object.keys` would see no key at all.
    if (!plain) throw invalid(`keys must be a plain object { keyId: key }, got ${describeKind(keys)}`, { keys });
    let hostKey = false;
    for (const kid of Object.keys(keys)) hostKey = addKey(raw, kid, keys[kid], host) === HOST_KEY || hostKey;
    return hostKey;
  }
  return false;
}

/**
 * `f()`, then the Wasm stack below is zeroed (`__wipeStack`), so no copy of
 * key material made while adding, using, retiring or dropping a key stays
 * there. The key bytes themselves are wiped in Rust when a key is dropped.
 */
function wipingStack(f) {
  try {
    return f();
  } finally {
    wasm.__wipeStack();
  }
}

/** Adds one verification key (`secret | { hmac } | { ed25519 }`) to a RawPolicy. */
function addKey(raw, kid, k, host = false) {
  if (typeof kid !== 'string') throw invalid('a key id must be a string', { kid });
  let alg;
  let bytes;
  // `{ hmac }` / `{ ed25519 }`: any other member (`ed25519Seed`, `hamc`) is refused, naming `keys.<kid>.<name>`.
  if (!isBytes(k) && k !== null && typeof k === 'object') k = checkOptions(k, ['hmac', 'ed25519'], 'key', `keys.${kid}.`);
  if (isBytes(k)) [alg, bytes] = ['hmac-sha256', k];
  else if (k && typeof k === 'object' && isBytes(k.hmac)) [alg, bytes] = ['hmac-sha256', k.hmac];
  else if (k && typeof k === 'object' && isBytes(k.ed25519)) [alg, bytes] = [ed25519Kind(host), k.ed25519];
  else {
    throw invalid(`key ${kid}: an HMAC secret (Uint8Array, or { hmac: Uint8Array }) or { ed25519: publicKey Uint8Array }`, {
      kid,
    });
  }
  wipingStack(() => raw.addKey(kid, alg, bytes));
  return alg;
}

function needPolicy(p, what) {
  if (p === null) {
    throw invalid(`${what} needs a gate created with policy options (keys, requireSigned, scope or higherEpoch)`);
  }
}

/** Adds a key to a live gate's policy (key rotation without a new gate). @internal */
export function addPolicyKey(p, kid, key) {
  needPolicy(p, 'addKey');
  if (addKey(p.raw, kid, key, p.host) === HOST_KEY) p.hostKeys ??= new Map();
}

/** Retires a key id on a live gate's policy: KEY_RETIRED from now on. @internal */
export function retirePolicyKey(p, kid) {
  needPolicy(p, 'retireKey');
  if (typeof kid !== 'string') throw invalid('a key id must be a string', { kid });
  wipingStack(() => p.raw.retire(kid));
}

function higherEpochOf(h) {
  if (h === undefined || h === null) return { mode: 'adopt' };
  if (typeof h === 'string') h = { mode: h };
  if (typeof h !== 'object') throw invalid('higherEpoch must be an object { mode, maxJump, ceiling }', { higherEpoch: h });
  // A misspelled member (`mdoe`) must not silently keep the default mode: refused, naming `higherEpoch.mdoe`.
  h = checkOptions(h, ['mode', 'maxJump', 'ceiling'], 'gate', 'higherEpoch.');
  const mode = h.mode === undefined ? 'adopt' : h.mode;
  const modes = TABLES.higherEpochModes;
  if (typeof mode !== 'string' || !modes.includes(mode)) {
    const names = modes.map((m) => `'${m}'`);
    throw invalid(`higherEpoch.mode must be ${names.slice(0, -1).join(', ')} or ${names.at(-1)}, got ${describe(mode)}`, { mode });
  }
  if (mode === 'adopt-within' && h.maxJump === undefined) {
    throw invalid("higherEpoch.maxJump (epochs) is required for 'adopt-within'");
  }
  if (mode !== 'adopt-within' && h.maxJump !== undefined) {
    throw invalid("higherEpoch.maxJump applies only to 'adopt-within'");
  }
  if (mode !== 'reject-future' && h.ceiling !== undefined) {
    throw invalid("higherEpoch.ceiling applies only to 'reject-future'");
  }
  return { mode, maxJump: h.maxJump, ceiling: h.ceiling };
}

/**
 * Builds the policy part of gate options, or `null` when the options ask for
 * the plain fence check (no keys, no requireSigned, higherEpoch 'adopt').
 * Returns `{ raw, scopeOf, ceilingFn, mode, host, hostKeys }`. `host`: the
 * gate is asynchronous (`Gate`), so without Ed25519 in the build its Ed25519
 * keys are verified by the host's WebCrypto (`hostVerified`); `hostKeys`: the
 * imported WebCrypto keys by key id, null while the policy has no such key.
 * @internal used by gates
 */
export function policyFromOptions(options, host = false) {
  if (options === undefined || options === null) return null;
  const { requireSigned, keys, retired, scope, higherEpoch } = options;
  const plain =
    requireSigned === undefined && keys === undefined && retired === undefined &&
    scope === undefined && higherEpoch === undefined;
  if (plain) return null;
  if (requireSigned !== undefined && typeof requireSigned !== 'boolean') {
    throw invalid('requireSigned must be a boolean', { requireSigned });
  }
  if (requireSigned && (keys === undefined || Object.keys(keys ?? {}).length === 0)) {
    throw invalid('requireSigned needs at least one key in keys');
  }
  let scopeOf;
  if (scope === undefined) scopeOf = (key) => key;
  else if (typeof scope === 'function') {
    scopeOf = (key) => {
      let s;
      try {
        s = scope(key);
      } catch (e) {
        throw new FencegateError('STORE_ERROR', `the gate's scope(key) threw (nothing was read or written): ${messageOf(e)}`, { callback: 'scope', key, cause: e });
      }
      checkScope(s);
      return s;
    };
  } else {
    checkScope(scope);
    scopeOf = () => scope;
  }
  const h = higherEpochOf(higherEpoch);
  const raw = new wasm.RawPolicy(requireSigned === true, TABLES.higherEpochModes.indexOf(h.mode), h.maxJump);
  try {
    const hostKey = addKeys(raw, keys, retired, host);
    let ceilingFn = null;
    if (typeof h.ceiling === 'function') ceilingFn = h.ceiling;
    else if (h.ceiling !== undefined) raw.setCeiling(h.ceiling);
    return { raw, scopeOf, ceilingFn, mode: h.mode, host, hostKeys: hostKey ? new Map() : null };
  } catch (e) {
    wipingStack(() => raw.free());
    throw e;
  }
}

/**
 * The kind of an Ed25519 public key for `RawPolicy.addKey`: verified in Wasm
 * on the Ed25519 build; on the default build, by the host's WebCrypto for an
 * asynchronous gate (`host`), else refused (no verifier: INVALID_ARGUMENT).
 */
function ed25519Kind(host) {
  return host && !wasm.__features().includes('ed25519') ? HOST_KEY : 'ed25519-public';
}

/** The `addKey` kind of an Ed25519 public key that the host's WebCrypto verifies. */
const HOST_KEY = 'ed25519-host';

/** The WebCrypto key of an Ed25519 public key; INVALID_ARGUMENT when the runtime's Web Crypto has no Ed25519. */
async function importEd25519(publicKey) {
  try {
    return await globalThis.crypto.subtle.importKey('raw', publicKey, { name: 'Ed25519' }, false, ['verify']);
  } catch (e) {
    throw invalid(
      "this runtime's Web Crypto cannot verify Ed25519 (Node ≥ 20, workerd, Deno and recent browsers can): use the Ed25519 build (docs/signed-tokens.md)",
      { cause: e },
    );
  }
}

/**
 * For an asynchronous gate on a build without Ed25519: whether the host's
 * WebCrypto verifies `token`'s Ed25519 signature under the key it names. Rust
 * parses the token and hands over the key, signing input and signature
 * (`hostCheck`), or nothing when the token is malformed or names a retired,
 * unknown or non-Ed25519 key (the decision then refuses it exactly as the
 * Wasm verifier would). The decision takes the answer as the signature check
 * of that key and runs every other check itself. @internal used by Gate
 */
export async function hostVerified(p, token) {
  if (p.hostKeys === null || typeof token !== 'string') return false;
  const check = p.raw.hostCheck(bounded(token));
  if (check === undefined) return false;
  const [kid, publicKey, input, signature] = check;
  let key = p.hostKeys.get(kid);
  if (key === undefined) {
    key = importEd25519(publicKey);
    p.hostKeys.set(kid, key);
  }
  return globalThis.crypto.subtle.verify('Ed25519', await key, signature, input);
}

/**
 * Runs a MemoryGate policy's ceiling function (synchronously) and sets the
 * policy's ceiling to its value, validated. @internal used by MemoryGate
 */
export function refreshCeiling(p) {
  if (p.ceilingFn === null) return;
  let c;
  try {
    c = p.ceilingFn();
  } catch (e) {
    throw ceilingFailed(e);
  }
  if (c !== null && typeof c === 'object' && typeof c.then === 'function') {
    throw invalid('higherEpoch.ceiling() must return an epoch synchronously for a MemoryGate');
  }
  p.raw.setCeiling(c);
}

/**
 * A ceiling callback that threw (or whose promise rejected): STORE_ERROR with
 * `callback: 'ceiling'` and the `cause`, as a failing store callback or the
 * Issuer's clock is. It runs before the store is touched: nothing changed.
 */
function ceilingFailed(e) {
  return new FencegateError('STORE_ERROR', `higherEpoch.ceiling() threw (nothing was read or written): ${messageOf(e)}`, { callback: 'ceiling', cause: e });
}

/**
 * The value of a policy's ceiling function, awaited (host-store gates may read
 * the issuer's epoch asynchronously), checked; `undefined` when it has none.
 * @internal used by Gate
 */
export async function ceilingOf(p) {
  if (p.ceilingFn === null) return undefined;
  let c;
  try {
    c = await p.ceilingFn();
  } catch (e) {
    throw ceilingFailed(e);
  }
  p.raw.setCeiling(c); // validates now, before the store is touched
  return c;
}

/** Stands in for a freed policy's Wasm object: every use throws INVALID_ARGUMENT. */
const FREED = new Proxy({}, {
  get() {
    return () => {
      throw invalid('this gate was freed (free() or the end of its `using` block)');
    };
  },
});

/**
 * Frees a policy's Wasm object (its keys); a decision still under way (one
 * awaiting the ceiling) then throws INVALID_ARGUMENT. @internal
 */
export function freePolicy(p) {
  if (p === null || p.raw === FREED) return;
  wipingStack(() => p.raw.free());
  p.raw = FREED;
}

/** Sets (or clears with `null`) the ceiling of a reject-future policy. @internal */
export function setPolicyCeiling(p, ceiling) {
  if (p === null || p.mode !== 'reject-future') {
    throw invalid("setCeiling needs higherEpoch mode 'reject-future'");
  }
  p.ceilingFn = null;
  p.raw.setCeiling(ceiling);
}

function signingKey(key) {
  if (key === null || typeof key !== 'object') {
    throw invalid('key must be { kid, hmac: Uint8Array } or { kid, ed25519Seed: Uint8Array }');
  }
  key = checkOptions(key, ['kid', 'hmac', 'ed25519Seed'], 'signing key');
  if (typeof key.kid !== 'string') throw invalid('key.kid must be a string', { kid: key.kid });
  if (isBytes(key.hmac) && key.ed25519Seed === undefined) return ['hmac-sha256', key.hmac, key.kid];
  if (isBytes(key.ed25519Seed) && key.hmac === undefined) return ['ed25519-seed', key.ed25519Seed, key.kid];
  throw invalid('key must have exactly one of hmac (Uint8Array) or ed25519Seed (Uint8Array)');
}

/**
 * Mints a signed fence token (text form `fg1.<claims>.<signature>`). For the
 * issuer side: it needs the secret (HMAC) or the Ed25519 seed.
 */
export function mintToken(claims, key) {
  if (!ready) notReady();
  if (claims === null || typeof claims !== 'object') throw invalid('claims must be an object { scope, epoch, leaseId, generation }');
  claims = checkOptions(claims, ['scope', 'epoch', 'leaseId', 'generation'], 'claims');
  const { scope, epoch, leaseId = '', generation = 0 } = claims;
  checkScope(scope);
  checkText(leaseId, 'leaseId');
  const [alg, bytes, kid] = signingKey(key);
  return wipingStack(() => wasm.__mintToken(scope, epoch, leaseId, generation, kid, alg, bytes));
}

/**
 * Verifies a signed token's text against `keys` (and `retired`) and returns its
 * claims. `scope` is required: the scope the token must name, or `null` to skip
 * that check (inspection tools only).
 */
export function verifyToken(text, options) {
  if (!ready) notReady();
  if (options === null || typeof options !== 'object') throw invalid('options must be { keys, retired?, scope }');
  options = checkOptions(options, ['keys', 'retired', 'scope'], 'verifyToken');
  const { keys, retired, scope } = options;
  if (scope !== null) checkScope(scope);
  const raw = new wasm.RawPolicy(false, TABLES.higherEpochModes.indexOf('adopt'), undefined);
  try {
    addKeys(raw, keys, retired);
    raw.verify(bounded(text), scope === null ? undefined : scope);
    return readClaims();
  } finally {
    wipingStack(() => raw.free());
  }
}

/** The 32-byte Ed25519 public key for a 32-byte seed (Ed25519 builds only). */
export function ed25519PublicKey(seed) {
  if (!ready) notReady();
  if (!isBytes(seed)) throw invalid('seed must be a Uint8Array of 32 bytes');
  return wipingStack(() => wasm.__ed25519PublicKey(seed));
}

/** Optional algorithms compiled into this build: `['ed25519']` or `[]`. */
export function features() {
  if (!ready) notReady();
  return wasm.__features();
}
