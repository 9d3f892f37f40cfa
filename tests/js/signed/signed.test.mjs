// Signed, scoped fence tokens and gate policies through the built package (issue 5).
// Run: node --test tests/js/signed/ (after scripts/build.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryGate, mintToken, verifyToken, errorCodes, FencegateError } from '../../../pkg/node.mjs';
import { caught } from '../../helpers.mjs';

const K1 = new Uint8Array(32).fill(1);
const K2 = new Uint8Array(32).fill(2);
const EVIL = new Uint8Array(32).fill(9);

const mint = (scope, epoch, kid = 'k1', hmac = K1, extra = {}) =>
  mintToken({ scope, epoch, leaseId: 'lease-1', generation: 1, ...extra }, { kid, hmac });

function signedGate(extra = {}) {
  return new MemoryGate({ requireSigned: true, keys: { k1: K1 }, ...extra });
}

/** Asserts a rejection that changed nothing. */
function refused(gate, verdict, key, code, mark, value) {
  assert.equal(verdict.ok, false);
  assert.equal(verdict.outcome, 'reject');
  assert.equal(verdict.code, code);
  assert.equal(verdict.markBefore, mark);
  assert.equal(verdict.markAfter, mark);
  assert.equal(gate.mark(key), mark);
  assert.equal(gate.value(key), value);
}

test('new codes are at the end of errorCodes()', () => {
  assert.deepEqual(errorCodes().slice(15, 20), [
    'UNKNOWN_KEY',
    'KEY_RETIRED',
    'UNSIGNED_TOKEN',
    'EPOCH_JUMP_TOO_LARGE',
    'FUTURE_EPOCH',
  ]);
  assert.equal(errorCodes()[11], 'BAD_SIGNATURE');
  assert.equal(errorCodes()[12], 'WRONG_SCOPE');
});

test('mint and verify round trip, text form is fg1 and header-safe', () => {
  const t = mint('orders', 42);
  assert.match(t, /^fg1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  assert.deepEqual(verifyToken(t, { keys: { k1: K1 }, scope: 'orders' }), {
    alg: 'hmac-sha256',
    kid: 'k1',
    scope: 'orders',
    epoch: 42,
    leaseId: 'lease-1',
    generation: 1,
  });
  // Epochs above 2^53 round-trip exactly as bigints.
  const big = mint('orders', 2n ** 64n - 1n);
  assert.equal(verifyToken(big, { keys: { k1: K1 }, scope: null }).epoch, 2n ** 64n - 1n);
  // Deterministic: same claims, same key, same text.
  assert.equal(mint('orders', 42), t);
});

test('verifyToken codes', () => {
  const t = mint('orders', 7);
  const keys = { k1: K1 };
  assert.equal(caught(() => verifyToken(t, { keys, scope: 'invoices' })).code, 'WRONG_SCOPE');
  const ws = caught(() => verifyToken(t, { keys, scope: 'invoices' }));
  assert.equal(ws instanceof FencegateError, true);
  assert.deepEqual([ws.expected, ws.scope], ['invoices', 'orders']);
  assert.equal(caught(() => verifyToken(t, { keys: { k1: K2 }, scope: 'orders' })).code, 'BAD_SIGNATURE');
  const uk = caught(() => verifyToken(t, { keys: { k2: K2 }, scope: 'orders' }));
  assert.deepEqual([uk.code, uk.kid], ['UNKNOWN_KEY', 'k1']);
  assert.equal(caught(() => verifyToken(t, { keys: { k2: K2 }, retired: ['k1'], scope: 'orders' })).code, 'KEY_RETIRED');
  assert.equal(caught(() => verifyToken('fg1.x.y', { keys, scope: 'orders' })).code, 'MALFORMED_TOKEN');
  assert.equal(caught(() => verifyToken(7, { keys, scope: 'orders' })).code, 'MALFORMED_TOKEN');
  assert.equal(caught(() => verifyToken(undefined, { keys, scope: 'orders' })).code, 'MISSING_TOKEN');
  // Configuration errors throw INVALID_ARGUMENT.
  assert.equal(caught(() => verifyToken(t, { keys: { k1: new Uint8Array(31) }, scope: 'orders' })).code, 'INVALID_ARGUMENT');
  assert.equal(caught(() => verifyToken(t, { keys: { k1: 'secret' }, scope: 'orders' })).code, 'INVALID_ARGUMENT');
  assert.equal(caught(() => verifyToken(t, { keys: { 'bad id': K1 }, scope: 'orders' })).code, 'INVALID_ARGUMENT');
  assert.equal(caught(() => verifyToken(t, { keys: { k1: K1 }, retired: ['k1'], scope: 'orders' })).code, 'INVALID_ARGUMENT');
  assert.equal(caught(() => verifyToken(t, { keys, scope: '\uD800' })).code, 'INVALID_ARGUMENT');
});

test('mintToken argument errors', () => {
  for (const [claims, key] of [
    [{ scope: 'a', epoch: 0 }, { kid: 'k1', hmac: K1 }],
    [{ scope: 'a', epoch: 1.5 }, { kid: 'k1', hmac: K1 }],
    [{ scope: 'a', epoch: '7' }, { kid: 'k1', hmac: K1 }],
    [{ scope: '', epoch: 1 }, { kid: 'k1', hmac: K1 }],
    [{ scope: 'a'.repeat(513), epoch: 1 }, { kid: 'k1', hmac: K1 }],
    [{ scope: 'a', epoch: 1, leaseId: 'l'.repeat(129) }, { kid: 'k1', hmac: K1 }],
    [{ scope: 'a', epoch: 1, generation: -1 }, { kid: 'k1', hmac: K1 }],
    [{ scope: 'a', epoch: 1 }, { kid: 'k 1', hmac: K1 }],
    [{ scope: 'a', epoch: 1 }, { kid: 'k1', hmac: new Uint8Array(8) }],
    [{ scope: 'a', epoch: 1 }, { kid: 'k1' }],
    [{ scope: 'a', epoch: 1 }, { kid: 'k1', hmac: K1, ed25519Seed: K1 }],
  ]) {
    assert.equal(caught(() => mintToken(claims, key)).code, 'INVALID_ARGUMENT', JSON.stringify(claims));
  }
  // Defaults: leaseId '' and generation 0.
  const c = verifyToken(mintToken({ scope: 'a', epoch: 3 }, { kid: 'k1', hmac: K1 }), { keys: { k1: K1 }, scope: 'a' });
  assert.deepEqual([c.leaseId, c.generation], ['', 0]);
});

test('forged huge number under requireSigned is refused, mark unchanged', () => {
  const g = signedGate();
  const v = g.write('orders', mint('orders', 10), 'v10');
  assert.deepEqual(
    { outcome: v.outcome, code: v.code, token: v.token, markBefore: v.markBefore, markAfter: v.markAfter },
    { outcome: 'advance', code: null, token: 10, markBefore: 0, markAfter: 10 },
  );
  assert.deepEqual(v.claims, { alg: 'hmac-sha256', kid: 'k1', scope: 'orders', epoch: 10, leaseId: 'lease-1', generation: 1 });
  for (const forged of [2 ** 53 - 1, 2n ** 63n, 11]) {
    const r = g.write('orders', forged, 'evil');
    refused(g, r, 'orders', 'UNSIGNED_TOKEN', 10, 'v10');
    assert.equal(r.token, null);
    assert.equal(r.claims, null);
    refused(g, g.establish('orders', forged), 'orders', 'UNSIGNED_TOKEN', 10, 'v10');
  }
  // A signed-looking token minted with a key the gate does not trust.
  const evil = mint('orders', 2n ** 63n, 'k1', EVIL);
  refused(g, g.write('orders', evil, 'evil'), 'orders', 'BAD_SIGNATURE', 10, 'v10');
  refused(g, g.establish('orders', evil), 'orders', 'BAD_SIGNATURE', 10, 'v10');
  refused(g, g.write('orders', mint('orders', 2n ** 63n, 'k9', EVIL), 'evil'), 'orders', 'UNKNOWN_KEY', 10, 'v10');
  // Missing and junk tokens keep their codes.
  refused(g, g.write('orders', undefined, 'evil'), 'orders', 'MISSING_TOKEN', 10, 'v10');
  refused(g, g.write('orders', null, 'evil'), 'orders', 'MISSING_TOKEN', 10, 'v10');
  refused(g, g.write('orders', {}, 'evil'), 'orders', 'MALFORMED_TOKEN', 10, 'v10');
  refused(g, g.write('orders', '99', 'evil'), 'orders', 'MALFORMED_TOKEN', 10, 'v10');
  refused(g, g.write('orders', '', 'evil'), 'orders', 'MALFORMED_TOKEN', 10, 'v10');
  // The rightful owner goes on.
  assert.equal(g.write('orders', mint('orders', 10), 'v10b').outcome, 'accept');
  assert.equal(g.write('orders', mint('orders', 11), 'v11').outcome, 'advance');
  refused(g, g.write('orders', mint('orders', 10), 'late'), 'orders', 'STALE_TOKEN', 11, 'v11');
  assert.deepEqual(g.state('orders'), { v: 4, mark: '11', holder: 'lease-1', ops: [], evicted: null, quarantine: null });
});

test('a token for scope A at a gate for scope B is WRONG_SCOPE (fixed scope and per-key scope)', () => {
  const fixed = signedGate({ scope: 'B' });
  fixed.write('k', mint('B', 3), 'b3');
  const a = fixed.write('k', mint('A', 4), 'a4');
  refused(fixed, a, 'k', 'WRONG_SCOPE', 3, 'b3');
  assert.equal(a.token, 4); // genuine token, reported epoch
  // Default scope: the resource key itself; a token replayed against another key is refused.
  const g = signedGate();
  const tA = mint('res-a', 5);
  assert.equal(g.write('res-a', tA, 'a').outcome, 'advance');
  const r = g.write('res-b', tA, 'replayed');
  assert.deepEqual([r.code, r.markAfter, g.mark('res-b'), g.value('res-b'), g.keys()], ['WRONG_SCOPE', 0, 0, undefined, ['res-a']]);
  // Scope from a function of the key.
  const fn = signedGate({ scope: (key) => `table:${key.split('/')[0]}` });
  assert.equal(fn.write('users/1', mint('table:users', 2), 'x').outcome, 'advance');
  assert.equal(fn.write('orders/1', mint('table:users', 2), 'x').code, 'WRONG_SCOPE');
});

test('key rotation: old key id still configured works, retired is refused', () => {
  const tOld = mint('s', 5, 'k-2026-01', K1);
  const tNew = mint('s', 6, 'k-2026-02', K2);
  const both = new MemoryGate({ requireSigned: true, keys: { 'k-2026-01': K1, 'k-2026-02': K2 } });
  assert.equal(both.write('s', tOld, 'old').outcome, 'advance');
  assert.equal(both.write('s', tNew, 'new').outcome, 'advance');
  assert.equal(both.write('s', tOld, 'late').code, 'STALE_TOKEN');

  const rotated = new MemoryGate({ requireSigned: true, keys: { 'k-2026-02': K2 }, retired: ['k-2026-01'] });
  const r = rotated.write('s', tOld, 'old');
  refused(rotated, r, 's', 'KEY_RETIRED', 0, undefined);
  assert.equal(rotated.keys().length, 0);
  assert.equal(rotated.write('s', tNew, 'new').outcome, 'advance');
  refused(rotated, rotated.write('s', mint('s', 7, 'k-2026-01', K1), 'x'), 's', 'KEY_RETIRED', 6, 'new');
  // A key id that was simply removed is unknown.
  const removed = new MemoryGate({ requireSigned: true, keys: { 'k-2026-02': K2 } });
  refused(removed, removed.write('s', tOld, 'old'), 's', 'UNKNOWN_KEY', 0, undefined);
  // Same id, another secret: a bad signature.
  const swapped = new MemoryGate({ requireSigned: true, keys: { 'k-2026-01': K2 } });
  refused(swapped, swapped.write('s', tOld, 'old'), 's', 'BAD_SIGNATURE', 0, undefined);
});

/** Every text that differs from `t` in one bit of one character. */
function bitFlips(t, from = 0, to = t.length) {
  const out = [];
  for (let i = from; i < to; i++) {
    for (let b = 0; b < 7; b++) {
      const c = String.fromCharCode(t.charCodeAt(i) ^ (1 << b));
      out.push(t.slice(0, i) + c + t.slice(i + 1));
    }
  }
  return out;
}

test('a bit-flipped signature is BAD_SIGNATURE or MALFORMED_TOKEN, never accepted', () => {
  const g = signedGate();
  g.write('s', mint('s', 3), 'v3');
  const t = mint('s', 4);
  const sigStart = t.lastIndexOf('.') + 1;
  const counts = {};
  for (const f of bitFlips(t, sigStart)) {
    const r = g.write('s', f, 'evil');
    counts[r.code] = (counts[r.code] ?? 0) + 1;
    assert.ok(r.code === 'BAD_SIGNATURE' || r.code === 'MALFORMED_TOKEN', `${f}: ${r.code}`);
    assert.deepEqual([g.mark('s'), g.value('s')], [3, 'v3']);
  }
  assert.ok(counts.BAD_SIGNATURE > 100, JSON.stringify(counts));
  // A flip in the claims (scope, epoch, lease id, generation, key id) is refused too.
  for (const f of bitFlips(t, 0, sigStart - 1)) {
    const r = g.write('s', f, 'evil');
    assert.ok(['BAD_SIGNATURE', 'MALFORMED_TOKEN', 'UNKNOWN_KEY'].includes(r.code), `${f}: ${r.code}`);
  }
  assert.deepEqual([g.mark('s'), g.value('s')], [3, 'v3']);
  // The exact first-bit flip of the last signature character's neighbour: BAD_SIGNATURE.
  const flipped = t.slice(0, -2) + (t.at(-2) === 'A' ? 'B' : 'A') + t.at(-1);
  refused(g, g.write('s', flipped, 'evil'), 's', 'BAD_SIGNATURE', 3, 'v3');
});

test('truncated, overlong and non-canonical texts are MALFORMED_TOKEN', () => {
  const g = signedGate();
  const t = mint('s', 4);
  const [, c, s] = t.split('.');
  const std = (b64url) => b64url.replaceAll('-', '+').replaceAll('_', '/');
  const cases = [
    t.slice(0, -1),
    t.slice(0, t.lastIndexOf('.')),
    `${t}A`,
    `${t}=`,
    `${t}.`,
    ` ${t}`,
    `${t}\n`,
    `fg2.${c}.${s}`,
    `FG1.${c}.${s}`,
    `fg1.${c}==.${s}`,
    `fg1.${c}.${s}=`,
    `fg1.${std(c)}.${std(s)}`,
    'x'.repeat(5000),
    `fg1.${'A'.repeat(4000)}.${s}`,
  ];
  // Non-canonical trailing bits: the 43-character signature has 2 unused bits.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const last = alphabet.indexOf(s.at(-1));
  for (const bits of [1, 2, 3]) cases.push(`fg1.${c}.${s.slice(0, -1)}${alphabet[(last & ~3) | ((last & 3) ^ bits)]}`);
  for (const bad of cases) {
    if (std(c) === c && std(s) === s && bad === `fg1.${std(c)}.${std(s)}`) continue;
    refused(g, g.write('s', bad, 'evil'), 's', 'MALFORMED_TOKEN', 0, undefined);
  }
  assert.equal(g.write('s', t, 'ok').outcome, 'advance');
});

test('adopt-within: mark+maxJump accepted, +1 refused (maxJump 1000, mark 10)', () => {
  const g = signedGate({ higherEpoch: { mode: 'adopt-within', maxJump: 1000 } });
  assert.equal(g.write('s', mint('s', 10), 'v10').outcome, 'advance');
  refused(g, g.write('s', mint('s', 5000), 'far'), 's', 'EPOCH_JUMP_TOO_LARGE', 10, 'v10');
  refused(g, g.write('s', mint('s', 1011), 'far'), 's', 'EPOCH_JUMP_TOO_LARGE', 10, 'v10');
  refused(g, g.establish('s', mint('s', 1011)), 's', 'EPOCH_JUMP_TOO_LARGE', 10, 'v10');
  const v = g.write('s', mint('s', 1010), 'v1010');
  assert.deepEqual([v.outcome, v.markBefore, v.markAfter, g.value('s')], ['advance', 10, 1010, 'v1010']);
  // Unsigned gates can use the policy too (bounds the damage of a forged number).
  const plain = new MemoryGate({ higherEpoch: { mode: 'adopt-within', maxJump: 1000n } });
  assert.equal(plain.write('p', 1000, 'a').outcome, 'advance');
  refused(plain, plain.write('p', 2001, 'b'), 'p', 'EPOCH_JUMP_TOO_LARGE', 1000, 'a');
  refused(plain, plain.write('p', 2n ** 63n, 'b'), 'p', 'EPOCH_JUMP_TOO_LARGE', 1000, 'a');
  assert.equal(plain.write('p', 2000, 'c').outcome, 'advance');
  // From mark 0, the limit counts too.
  refused(plain, plain.write('q', 1001, 'x'), 'q', 'EPOCH_JUMP_TOO_LARGE', 0, undefined);
});

test('reject-future: establish raises the ceiling, writes only accept; host ceiling bounds both', () => {
  const g = signedGate({ higherEpoch: { mode: 'reject-future' } });
  refused(g, g.write('s', mint('s', 1), 'v1'), 's', 'FUTURE_EPOCH', 0, undefined);
  assert.equal(g.establish('s', mint('s', 4)).outcome, 'advance');
  assert.equal(g.write('s', mint('s', 4), 'v4').outcome, 'accept');
  refused(g, g.write('s', mint('s', 5), 'v5'), 's', 'FUTURE_EPOCH', 4, 'v4');
  refused(g, g.write('s', mint('s', 3), 'v3'), 's', 'STALE_TOKEN', 4, 'v4');

  let issuerEpoch = 7;
  const h = new MemoryGate({ higherEpoch: { mode: 'reject-future', ceiling: () => issuerEpoch } });
  assert.equal(h.write('s', 7, 'v7').outcome, 'advance');
  refused(h, h.write('s', 2 ** 53 - 1, 'evil'), 's', 'FUTURE_EPOCH', 7, 'v7');
  refused(h, h.establish('s', 8), 's', 'FUTURE_EPOCH', 7, 'v7');
  issuerEpoch = 8n;
  assert.equal(h.establish('s', 8).outcome, 'advance');
  h.setCeiling(20);
  assert.equal(h.write('s', 20, 'v20').outcome, 'advance');
  refused(h, h.write('s', 21, 'v21'), 's', 'FUTURE_EPOCH', 20, 'v20');
  // A throwing ceiling callback is STORE_ERROR with its cause (as a failing store callback is) and changes nothing.
  const t = new MemoryGate({ higherEpoch: { mode: 'reject-future', ceiling: () => { throw new Error('issuer down'); } } });
  const e = caught(() => t.write('s', 1, 'x'));
  assert.deepEqual([e.code, e.callback, e.cause.message], ['STORE_ERROR', 'ceiling', 'issuer down']);
  assert.match(e.message, /issuer down/);
  assert.deepEqual([t.mark('s'), t.keys()], [0, []]);
  const bad = new MemoryGate({ higherEpoch: { mode: 'reject-future', ceiling: () => 'seven' } });
  assert.equal(caught(() => bad.write('s', 1, 'x')).code, 'INVALID_ARGUMENT');
  assert.equal(caught(() => new MemoryGate().setCeiling(3)).code, 'INVALID_ARGUMENT');
});

test('without requireSigned a gate with keys takes both forms (migration)', () => {
  const g = new MemoryGate({ keys: { k1: K1 } });
  assert.equal(g.write('s', 3, 'plain').outcome, 'advance');
  assert.equal(g.write('s', mint('s', 4), 'signed').outcome, 'advance');
  assert.equal(g.write('s', mint('s', 5, 'k1', EVIL), 'forged').code, 'BAD_SIGNATURE');
  assert.equal(g.mark('s'), 4);
  // A plain gate still refuses strings: text goes through parseToken.
  const plain = new MemoryGate();
  assert.equal(plain.write('s', mint('s', 4), 'x').code, 'MALFORMED_TOKEN');
});

test('same-epoch strict applies on the policy path', () => {
  const g = signedGate({ sameEpoch: 'strict' });
  assert.equal(g.write('s', mint('s', 2), 'a').outcome, 'advance');
  refused(g, g.write('s', mint('s', 2), 'b'), 's', 'SAME_EPOCH_REJECTED', 2, 'a');
  assert.equal(g.establish('s', mint('s', 2)).outcome, 'accept');
});

test('bad gate options throw INVALID_ARGUMENT', () => {
  for (const o of [
    { requireSigned: true },
    { requireSigned: true, keys: {} },
    { requireSigned: 'yes', keys: { k1: K1 } },
    { keys: { k1: K1 }, scope: 5 },
    { keys: { k1: K1 }, scope: '' },
    { higherEpoch: { mode: 'adopt-within' } },
    { higherEpoch: { mode: 'adopt-within', maxJump: -1 } },
    { higherEpoch: { mode: 'adopt-within', maxJump: 1.5 } },
    { higherEpoch: { mode: 'adopt', maxJump: 5 } },
    { higherEpoch: { mode: 'adopt', ceiling: 5 } },
    { higherEpoch: { mode: 'sometimes' } },
    { higherEpoch: { mode: 'reject-future', ceiling: -1 } },
    { keys: { k1: { ed25519: new Uint8Array(31) } } },
    { keys: [K1] },
  ]) {
    const e = caught(() => new MemoryGate(o));
    assert.equal(e.code, 'INVALID_ARGUMENT', JSON.stringify(o, (k, v) => (typeof v === 'bigint' ? String(v) : v)));
  }
});

test('live key rotation on a MemoryGate keeps marks and values', () => {
  const K2 = new Uint8Array(32).fill(2);
  const g = new MemoryGate({ requireSigned: true, keys: { k1: K1 } });
  assert.equal(g.write('s', mint('s', 5), 'v5').outcome, 'advance');
  const t6 = mint('s', 6, 'k2', K2);
  refused(g, g.write('s', t6, 'v6'), 's', 'UNKNOWN_KEY', 5, 'v5');
  g.addKey('k2', K2);
  assert.equal(g.write('s', t6, 'v6').outcome, 'advance');
  assert.equal(g.write('s', mint('s', 6), 'k1 still works').outcome, 'accept');
  g.retireKey('k1');
  refused(g, g.write('s', mint('s', 7), 'late'), 's', 'KEY_RETIRED', 6, 'k1 still works');
  assert.equal(caught(() => g.addKey('k1', K1)).code, 'INVALID_ARGUMENT');
  assert.equal(caught(() => g.addKey('k2', K2)).code, 'INVALID_ARGUMENT');
  assert.equal(caught(() => g.addKey('k3', 'secret')).code, 'INVALID_ARGUMENT');
  assert.equal(caught(() => new MemoryGate().addKey('k1', K1)).code, 'INVALID_ARGUMENT');
  assert.equal(caught(() => new MemoryGate().retireKey('k1')).code, 'INVALID_ARGUMENT');
  assert.deepEqual([g.mark('s'), g.value('s')], [6, 'k1 still works']);
});

test('a huge string token is refused (cut before it enters Wasm)', () => {
  const g = signedGate();
  g.write('s', mint('s', 3), 'v3');
  const huge = 'fg1.' + 'A'.repeat(64 * 1024 * 1024);
  refused(g, g.write('s', huge, 'evil'), 's', 'MALFORMED_TOKEN', 3, 'v3');
  assert.equal(caught(() => verifyToken(huge, { keys: { k1: K1 }, scope: 's' })).code, 'MALFORMED_TOKEN');
  // The longest valid text still verifies.
  const longest = mintToken(
    { scope: 's'.repeat(512), epoch: 2n ** 64n - 1n, leaseId: 'l'.repeat(128), generation: 2n ** 64n - 1n },
    { kid: 'k'.repeat(64), hmac: K1 },
  );
  assert.equal(longest.length, 1015); // 1,058 with an Ed25519 signature
  assert.equal(verifyToken(longest, { keys: { ['k'.repeat(64)]: K1 }, scope: null }).leaseId.length, 128);
});
