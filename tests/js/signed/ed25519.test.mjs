// Ed25519 signed tokens, against the Ed25519 build of the package
// (FENCEGATE_FEATURES=ed25519 FENCEGATE_OUT=build/pkg-ed25519 bash scripts/build.sh).
// The default build is checked to refuse Ed25519 keys with INVALID_ARGUMENT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import * as plain from '../../../pkg/node.mjs';
import { caught } from '../../helpers.mjs';

const variantUrl = new URL('../../../build/pkg-ed25519/node.mjs', import.meta.url);
const built = existsSync(variantUrl);
const fg = built ? await import(variantUrl.href) : null;

// RFC 8032 §7.1, test 1.
const hex = (s) => Uint8Array.from(s.match(/../g).map((b) => parseInt(b, 16)));
const SEED = hex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60');
const PUBLIC = hex('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');

test('the default build has no Ed25519 and says so', () => {
  assert.deepEqual(plain.features(), []);
  assert.equal(caught(() => new plain.MemoryGate({ keys: { ed: { ed25519: PUBLIC } } })).code, 'INVALID_ARGUMENT');
  assert.equal(caught(() => plain.mintToken({ scope: 's', epoch: 1 }, { kid: 'ed', ed25519Seed: SEED })).code, 'INVALID_ARGUMENT');
  assert.equal(caught(() => plain.ed25519PublicKey(SEED)).code, 'INVALID_ARGUMENT');
});

test('Ed25519: a resource verifies with the public key only', { skip: !built && 'build/pkg-ed25519 not built' }, () => {
  assert.deepEqual(fg.features(), ['ed25519']);
  assert.deepEqual(fg.ed25519PublicKey(SEED), PUBLIC);
  const t = fg.mintToken({ scope: 'orders', epoch: 9, leaseId: 'L', generation: 2 }, { kid: 'ed-1', ed25519Seed: SEED });
  assert.match(t, /^fg1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{86}$/);
  const keys = { 'ed-1': { ed25519: PUBLIC } };
  assert.deepEqual(fg.verifyToken(t, { keys, scope: 'orders' }), {
    alg: 'ed25519', kid: 'ed-1', scope: 'orders', epoch: 9, leaseId: 'L', generation: 2,
  });
  const g = new fg.MemoryGate({ requireSigned: true, keys });
  assert.equal(g.write('orders', t, 'v9').outcome, 'advance');
  // Unsigned, forged, flipped, other-scope, algorithm confusion: all refused, mark 9.
  const flipped = t.slice(0, -2) + (t.at(-2) === 'A' ? 'B' : 'A') + t.at(-1);
  const otherSeed = new Uint8Array(32).fill(5);
  const forged = fg.mintToken({ scope: 'orders', epoch: 2n ** 63n }, { kid: 'ed-1', ed25519Seed: otherSeed });
  const confused = fg.mintToken({ scope: 'orders', epoch: 2n ** 63n }, { kid: 'ed-1', hmac: PUBLIC });
  const wrongScope = fg.mintToken({ scope: 'invoices', epoch: 10 }, { kid: 'ed-1', ed25519Seed: SEED });
  for (const [tok, code] of [
    [2n ** 63n, 'UNSIGNED_TOKEN'],
    [flipped, 'BAD_SIGNATURE'],
    [forged, 'BAD_SIGNATURE'],
    [confused, 'BAD_SIGNATURE'],
    [wrongScope, 'WRONG_SCOPE'],
  ]) {
    const v = g.write('orders', tok, 'evil');
    assert.deepEqual([v.code, v.markAfter, g.mark('orders'), g.value('orders')], [code, 9, 9, 'v9'], String(tok));
  }
  // Mixed rings: an HMAC key and an Ed25519 key side by side (rotation between algorithms).
  const mixed = new fg.MemoryGate({ requireSigned: true, keys: { h1: new Uint8Array(32).fill(1), 'ed-1': { ed25519: PUBLIC } } });
  assert.equal(mixed.write('orders', fg.mintToken({ scope: 'orders', epoch: 3 }, { kid: 'h1', hmac: new Uint8Array(32).fill(1) }), 'h').outcome, 'advance');
  assert.equal(mixed.write('orders', t, 'e').outcome, 'advance');
  assert.equal(caught(() => new fg.MemoryGate({ keys: { ed: { ed25519: new Uint8Array(31) } } })).code, 'INVALID_ARGUMENT');
});
