// Freeing a gate, retiring a key and a one-off mint wipe the key material from
// Wasm memory (issue 12: the `zeroize` crate). The test reads the module's
// linear memory: the material is found while the key is in use, and nowhere
// after. An HMAC key is kept as the two SHA-256 states after its padded key
// block (key ⊕ 0x36…, key ⊕ 0x5c…), so those are what is searched for, next to
// the raw secret (the copy the host handed in).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { Gate, MemoryGate, MemoryHostStore, mintToken, verifyToken } from '../../../pkg/node.mjs';
import { initSync } from '../../../pkg/dist/fencegate.js';

/** The Wasm exports of the instance pkg/node.mjs uses (initSync answers them once instantiated). */
const memoryOf = (init) => () => new Uint8Array(init().memory.buffer);
const memory = memoryOf(() => initSync());

/** How many times `needle` occurs in `haystack`. */
function occurrences(haystack, needle) {
  let n = 0;
  for (let i = haystack.indexOf(needle[0]); i !== -1 && i <= haystack.length - needle.length; i = haystack.indexOf(needle[0], i + 1)) {
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) n++;
  }
  return n;
}

// SHA-256 (FIPS 180-4) compression of one block from the initial state: the
// state an HMAC key keeps for its inner and outer pad.
const K = Uint32Array.from(
  '428a2f98 71374491 b5c0fbcf e9b5dba5 3956c25b 59f111f1 923f82a4 ab1c5ed5 d807aa98 12835b01 243185be 550c7dc3 72be5d74 80deb1fe 9bdc06a7 c19bf174 e49b69c1 efbe4786 0fc19dc6 240ca1cc 2de92c6f 4a7484aa 5cb0a9dc 76f988da 983e5152 a831c66d b00327c8 bf597fc7 c6e00bf3 d5a79147 06ca6351 14292967 27b70a85 2e1b2138 4d2c6dfc 53380d13 650a7354 766a0abb 81c2c92e 92722c85 a2bfe8a1 a81a664b c24b8b70 c76c51a3 d192e819 d6990624 f40e3585 106aa070 19a4c116 1e376c08 2748774c 34b0bcb5 391c0cb3 4ed8aa4a 5b9cca4f 682e6ff3 748f82ee 78a5636f 84c87814 8cc70208 90befffa a4506ceb bef9a3f7 c67178f2'
    .split(' ')
    .map((h) => parseInt(h, 16)),
);
const IV = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const rotr = (x, n) => (x >>> n) | (x << (32 - n));

/** The SHA-256 state after one 64-byte block, as its 8 words in Wasm (little-endian) byte order. */
function stateAfter(block) {
  const w = new Uint32Array(64);
  for (let t = 0; t < 16; t++) w[t] = (block[4 * t] << 24) | (block[4 * t + 1] << 16) | (block[4 * t + 2] << 8) | block[4 * t + 3];
  for (let t = 16; t < 64; t++) {
    const s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >>> 3);
    const s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >>> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  let [a, b, c, d, e, f, g, h] = IV;
  for (let t = 0; t < 64; t++) {
    const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t]) | 0;
    const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    [h, g, f, e, d, c, b, a] = [g, f, e, (d + t1) | 0, c, b, a, (t1 + t2) | 0];
  }
  const out = new Uint32Array([a, b, c, d, e, f, g, h].map((v, i) => v + IV[i]));
  return new Uint8Array(out.buffer); // Wasm is little-endian, like every JS host this runs on
}

/** What an HMAC-SHA256 key leaves in memory: its inner and outer pad states. */
function hmacStates(secret) {
  const pad = (byte) => {
    const block = new Uint8Array(64).fill(byte);
    secret.forEach((b, i) => (block[i] ^= b));
    return stateAfter(block);
  };
  return [pad(0x36), pad(0x5c)];
}

/** A 40-byte secret no other test uses (distinct per `seed`). */
function secretFor(seed) {
  return Uint8Array.from({ length: 40 }, (_, i) => (seed * 73 + i * 151 + 17) & 0xff);
}

/** Occurrences of the raw secret and of each pad state. */
function found(mem, secret) {
  return [secret, ...hmacStates(secret)].map((needle) => occurrences(mem(), needle));
}

test('the SHA-256 block function is SHA-256 (FIPS 180-4 example: "abc", one padded block)', () => {
  const block = new Uint8Array(64);
  block.set([0x61, 0x62, 0x63, 0x80]);
  block[63] = 24;
  const words = new Uint32Array(stateAfter(block).buffer);
  const hex = [...words].map((v) => v.toString(16).padStart(8, '0')).join('');
  assert.equal(hex, 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
});

test('Gate.free() wipes its HMAC keys from Wasm memory, also after the keys verified tokens', async () => {
  const secret = secretFor(1);
  const gate = new Gate(new MemoryHostStore(), { keys: { k1: secret } });
  // In use: each pad state once (the key); the raw copy handed in is already wiped.
  assert.deepEqual(found(memory, secret), [0, 1, 1]);
  const token = mintToken({ scope: 'orders', epoch: 7 }, { kid: 'k1', hmac: secret });
  const verdict = await gate.write('orders', token, 'v');
  assert.deepEqual([verdict.outcome, verdict.markAfter, verdict.claims.kid], ['advance', 7, 'k1']);
  gate.free();
  assert.deepEqual(found(memory, secret), [0, 0, 0]);
});

test('MemoryGate.free() wipes its HMAC keys from Wasm memory', () => {
  const secret = secretFor(2);
  const gate = new MemoryGate({ keys: { k1: secret } });
  assert.deepEqual(found(memory, secret), [0, 1, 1]);
  const verdict = gate.write('orders', mintToken({ scope: 'orders', epoch: 3 }, { kid: 'k1', hmac: secret }), 'v');
  assert.deepEqual([verdict.outcome, verdict.markAfter], ['advance', 3]);
  gate.free();
  assert.deepEqual(found(memory, secret), [0, 0, 0]);
});

test('retireKey wipes the retired key only; addKey leaves one copy', () => {
  const old = secretFor(3);
  const current = secretFor(4);
  const gate = new Gate(new MemoryHostStore(), { keys: { old } });
  gate.addKey('current', current);
  assert.deepEqual(found(memory, old), [0, 1, 1]);
  assert.deepEqual(found(memory, current), [0, 1, 1]);
  gate.retireKey('old');
  assert.deepEqual(found(memory, old), [0, 0, 0]);
  assert.deepEqual(found(memory, current), [0, 1, 1]);
  gate.free();
  assert.deepEqual(found(memory, current), [0, 0, 0]);
});

test('a refused key (its id already taken) leaves nothing in Wasm memory', () => {
  const first = secretFor(5);
  const second = secretFor(6);
  const gate = new MemoryGate({ keys: { k1: first } });
  assert.throws(() => gate.addKey('k1', second), { code: 'INVALID_ARGUMENT' });
  assert.deepEqual(found(memory, second), [0, 0, 0]);
  gate.free();
  assert.deepEqual(found(memory, first), [0, 0, 0]);
});

test('mintToken and verifyToken leave neither the secret nor its pad states in Wasm memory', () => {
  const secret = secretFor(7);
  const token = mintToken({ scope: 'orders', epoch: 7 }, { kid: 'k1', hmac: secret });
  assert.match(token, /^fg1\./);
  assert.deepEqual(found(memory, secret), [0, 0, 0]);
  assert.equal(verifyToken(token, { keys: { k1: secret }, scope: 'orders' }).epoch, 7);
  assert.deepEqual(found(memory, secret), [0, 0, 0]);
});

const ed25519Url = new URL('../../../build/pkg-ed25519/node.mjs', import.meta.url);
const ed25519Built = existsSync(ed25519Url);

test('Ed25519 build: mintToken and ed25519PublicKey leave no copy of the seed', { skip: !ed25519Built && 'build/pkg-ed25519 not built' }, async () => {
  const fg = await import(ed25519Url.href);
  const glue = await import(new URL('../../../build/pkg-ed25519/dist/fencegate.js', import.meta.url).href);
  const mem = memoryOf(() => glue.initSync());
  const seed = Uint8Array.from({ length: 32 }, (_, i) => (i * 29 + 101) & 0xff);
  const token = fg.mintToken({ scope: 'orders', epoch: 9 }, { kid: 'ed-1', ed25519Seed: seed });
  assert.equal(occurrences(mem(), seed), 0);
  const publicKey = fg.ed25519PublicKey(seed);
  assert.equal(occurrences(mem(), seed), 0);
  assert.equal(fg.verifyToken(token, { keys: { 'ed-1': { ed25519: publicKey } }, scope: 'orders' }).epoch, 9);
});
