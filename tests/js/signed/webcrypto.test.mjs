// Issue 14 item 4: on the default build (no Ed25519 in the .wasm), an async
// Gate verifies Ed25519 signed tokens through the host's WebCrypto: Rust parses
// the token and hands over key, signing input and signature; JS verifies; Rust
// decides with that answer. Every verdict equals the Ed25519 build's (Wasm
// verifier) for the same tokens and gate. Tokens are minted with the Ed25519
// build (FENCEGATE_FEATURES=ed25519 FENCEGATE_OUT=build/pkg-ed25519 bash scripts/build.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import * as plain from '../../../pkg/node.mjs';

const variantUrl = new URL('../../../build/pkg-ed25519/node.mjs', import.meta.url);
const built = existsSync(variantUrl);
const ed = built ? await import(variantUrl.href) : null;
const skip = !built && 'build/pkg-ed25519 not built';

// RFC 8032 §7.1, tests 1 and 2.
const hex = (s) => Uint8Array.from(s.match(/../g).map((b) => parseInt(b, 16)));
const SEED = hex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60');
const PUBLIC = hex('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
const OTHER_SEED = hex('4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb');
const HMAC = new Uint8Array(32).fill(9);

/** `[verdict, mark after]` of each token written in turn, on a fresh Gate over a MemoryHostStore. */
async function run(lib, options, tokens) {
  const gate = new lib.Gate(new lib.MemoryHostStore(), options);
  const out = [];
  for (const t of tokens) {
    const v = await gate.write('orders', t, 'x');
    out.push([v, await gate.mark('orders')]);
  }
  gate.free();
  return out;
}

function flip(token, part, at = 3) {
  const parts = token.split('.');
  const s = parts[part];
  parts[part] = s.slice(0, at) + (s[at] === 'A' ? 'B' : 'A') + s.slice(at + 1);
  return parts.join('.');
}

test('the default build has no Ed25519 in Wasm; an async Gate accepts an Ed25519 public key anyway (WebCrypto)', () => {
  assert.deepEqual(plain.features(), []);
  const g = new plain.Gate(new plain.MemoryHostStore(), { keys: { e1: { ed25519: PUBLIC } } });
  g.addKey('e2', { ed25519: PUBLIC });
  g.free();
  // A MemoryGate is synchronous: WebCrypto cannot serve it, so it still refuses.
  assert.throws(() => new plain.MemoryGate({ keys: { e1: { ed25519: PUBLIC } } }), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => new plain.Gate(new plain.MemoryHostStore(), { keys: { e1: { ed25519: PUBLIC.slice(1) } } }), { code: 'INVALID_ARGUMENT' });
});

test('WebCrypto verdicts equal the Wasm verifier: good, tampered, wrong key, unknown and retired key, wrong scope, algorithm confusion', { skip }, async () => {
  const mint = (claims, key) => ed.mintToken({ scope: 'orders', leaseId: 'L', generation: 2, ...claims }, key);
  const good5 = mint({ epoch: 5 }, { kid: 'e1', ed25519Seed: SEED });
  const good7 = mint({ epoch: 7 }, { kid: 'e1', ed25519Seed: SEED });
  const tokens = [
    good5,
    flip(good7, 2), // signature changed
    flip(good7, 1, 12), // claims changed
    mint({ epoch: 7 }, { kid: 'e1', ed25519Seed: OTHER_SEED }), // another key under the same id
    mint({ epoch: 7 }, { kid: 'e9', ed25519Seed: SEED }), // unknown key id
    mint({ epoch: 7 }, { kid: 'gone', ed25519Seed: SEED }), // retired key id
    mint({ epoch: 7, scope: 'billing' }, { kid: 'e1', ed25519Seed: SEED }), // genuine, other scope
    mint({ epoch: 7 }, { kid: 'e1', hmac: HMAC }), // HMAC token naming the Ed25519 key
    'fg1.not-a-token',
    7,
    good7,
  ];
  const options = { requireSigned: true, keys: { e1: { ed25519: PUBLIC } }, retired: ['gone'], scope: 'orders' };
  const viaWebCrypto = await run(plain, options, tokens);
  const viaWasm = await run(ed, options, tokens);
  assert.deepEqual(viaWebCrypto, viaWasm);
  const codes = viaWebCrypto.map(([v, mark]) => [v.outcome, v.code, mark]);
  assert.deepEqual(codes, [
    ['advance', null, 5],
    ['reject', 'BAD_SIGNATURE', 5],
    ['reject', 'BAD_SIGNATURE', 5],
    ['reject', 'BAD_SIGNATURE', 5],
    ['reject', 'UNKNOWN_KEY', 5],
    ['reject', 'KEY_RETIRED', 5],
    ['reject', 'WRONG_SCOPE', 5],
    ['reject', 'BAD_SIGNATURE', 5],
    ['reject', 'MALFORMED_TOKEN', 5],
    ['reject', 'UNSIGNED_TOKEN', 5],
    ['advance', null, 7],
  ]);
  assert.deepEqual(viaWebCrypto[0][0].claims, { alg: 'ed25519', kid: 'e1', scope: 'orders', epoch: 5, leaseId: 'L', generation: 2 });
  assert.equal(viaWebCrypto[6][0].token, 7); // WRONG_SCOPE names the genuine token's epoch
});

test('WebCrypto keys follow rotation: a retired Ed25519 key id is KEY_RETIRED, a key added later verifies', { skip }, async () => {
  const token = (kid, epoch) => ed.mintToken({ scope: 'orders', epoch }, { kid, ed25519Seed: SEED });
  const results = [];
  for (const lib of [plain, ed]) {
    const g = new lib.Gate(new lib.MemoryHostStore(), { keys: { e1: { ed25519: PUBLIC } } });
    const a = await g.write('orders', token('e1', 3), 'a');
    g.retireKey('e1');
    const b = await g.write('orders', token('e1', 4), 'b');
    g.addKey('e2', { ed25519: PUBLIC });
    const c = await g.write('orders', token('e2', 4), 'c');
    results.push([a.outcome, b.code, c.outcome, (await g.read('orders')).value]);
    g.free();
  }
  assert.deepEqual(results[0], ['advance', 'KEY_RETIRED', 'advance', 'c']);
  assert.deepEqual(results[0], results[1]);
});
