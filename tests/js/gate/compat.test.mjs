// docs/compatibility.md (issue 18): the fixtures of every persisted format,
// read from the doc, decode to exact values. They are never edited, only added
// to; a version that fails here breaks the compatibility policy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { docBlocks } from '../../doc-blocks.mjs';
import { decodeState, verifyToken, Issuer } from '../../../pkg/node.mjs';

const [resource, issuer, token] = docBlocks('docs/compatibility.md', { lang: 'text', section: 'Fixtures' }).map((b) => b.code.trim().split('\n'));

test('resource state fixtures v1, v2, v3, v4 decode exactly', () => {
  assert.deepEqual(resource.map((s) => decodeState(s)), [
    { mark: 0 },
    { mark: 41 },
    { mark: 18446744073709551615n },
    { mark: 41, holder: 'node-a', opIds: ['r1'] },
    { mark: 7 },
    { mark: 41, quarantine: 41 },
    { mark: 41, holder: 'node-a', opIds: ['r1'] },
    { mark: 41, holder: 'node-a', opIds: ['r1'], quarantine: 41 },
  ]);
});

test('issuer state fixtures v1 load with their epoch and lease', async () => {
  const got = [];
  for (const state of issuer) {
    const iss = new Issuer({ load: (k) => (k === 'issuer:s' ? { state, version: 1 } : null), commit: () => false });
    got.push(await iss.current('s'));
  }
  assert.deepEqual(got, [
    { scope: 's', epoch: 41, lease: null },
    { scope: 's', epoch: 41, lease: { leaseId: 's#41', holder: 'a', expiresAt: 1700000030000, requestId: 'r-1' } },
  ]);
});

test('the signed token fixture verifies with the same claims', () => {
  const secret = new Uint8Array(32).map((_, i) => i);
  assert.deepEqual(verifyToken(token[0], { keys: { 'k-2026-01': secret }, scope: 'orders' }), {
    alg: 'hmac-sha256', kid: 'k-2026-01', scope: 'orders', epoch: 42, leaseId: 'L-7', generation: 1,
  });
});
