// Properties 4 and 5 (issue 19): a mutated signed-token text is never accepted;
// issuer epochs strictly increase across successful acquires under any clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MemoryGate, Issuer, MemoryHostStore, mintToken, verifyToken, FencegateError } from '../../../pkg/node.mjs';
import { params } from './config.mjs';

const HMAC = new Uint8Array(32).map((_, i) => i * 7 + 1);
const OTHER = new Uint8Array(32).fill(3);
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ \u00e9';

const mutationArb = fc.array(
  fc.record({ op: fc.constantFrom('delete', 'insert', 'replace', 'swap', 'case', 'truncate', 'append'), at: fc.nat(), ch: fc.constantFrom(...ALPHABET) }),
  { minLength: 1, maxLength: 3 },
);

function mutate(text, mutations) {
  let t = text;
  for (const { op, at, ch } of mutations) {
    const i = at % Math.max(t.length, 1);
    if (op === 'delete') t = t.slice(0, i) + t.slice(i + 1);
    else if (op === 'insert') t = t.slice(0, i) + ch + t.slice(i);
    else if (op === 'replace') t = t.slice(0, i) + ch + t.slice(i + 1);
    else if (op === 'swap') t = t.slice(0, i) + t.slice(i + 1, i + 2) + t.slice(i, i + 1) + t.slice(i + 2);
    else if (op === 'case') t = t.slice(0, i) + (t[i] === t[i]?.toUpperCase() ? t[i]?.toLowerCase() : t[i]?.toUpperCase()) + t.slice(i + 1);
    else if (op === 'truncate') t = t.slice(0, i);
    else t += ch;
  }
  return t;
}

test('property 4: a mutated signed token is never accepted (verifyToken, and a requireSigned gate)', () => {
  fc.assert(
    fc.property(
      fc.record({ scope: fc.constantFrom('orders', 'k', 's/1'), epoch: fc.oneof(fc.integer({ min: 1, max: 2 ** 53 - 1 }), fc.bigInt({ min: 1n, max: 2n ** 64n - 1n })), leaseId: fc.constantFrom('', 'lease-1', 'L'), generation: fc.nat(5) }),
      mutationArb,
      (claims, mutations) => {
        const token = mintToken(claims, { kid: 'k1', hmac: HMAC });
        const mutated = mutate(token, mutations);
        if (mutated === token) return;
        const keys = { k1: HMAC, k2: OTHER };
        assert.throws(
          () => verifyToken(mutated, { keys, scope: claims.scope }),
          (e) => e instanceof FencegateError && ['MALFORMED_TOKEN', 'MISSING_TOKEN', 'BAD_SIGNATURE', 'UNKNOWN_KEY', 'WRONG_SCOPE', 'KEY_RETIRED'].includes(e.code),
        );
        const gate = new MemoryGate({ requireSigned: true, keys, scope: claims.scope });
        const v = gate.write('key', mutated, 'x');
        assert.deepEqual([v.ok, v.outcome, v.markAfter, gate.mark('key'), gate.value('key')], [false, 'reject', 0, 0, undefined]);
        // The unmutated token is accepted by the same gate.
        assert.equal(gate.write('key', token, 'x').outcome, 'advance');
      },
    ),
    params(5000),
  );
});

const issuerStepArb = fc.record({
  op: fc.constantFrom('acquire', 'acquire', 'acquire', 'renew', 'release', 'raise'),
  holder: fc.constantFrom('a', 'b', 'c'),
  // Any clock: forwards, backwards, far away, 0.
  now: fc.oneof(fc.nat(1000), fc.constantFrom(0, 2 ** 53 - 1, 2 ** 40), fc.integer({ min: 0, max: 2 ** 53 - 1 })),
  ttlMs: fc.oneof(fc.nat(500), fc.constantFrom(0, 1, 2 ** 53 - 1)),
  requestId: fc.constantFrom(undefined, 'r1', 'r2'),
  atLeast: fc.integer({ min: 1, max: 40 }),
});

test('property 5: issuer epochs strictly increase across successful acquires, under any clock', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(issuerStepArb, { minLength: 1, maxLength: 25 }), async (steps) => {
      const issuer = new Issuer(new MemoryHostStore());
      let last = 0; // the largest epoch handed out or raised to
      let lastGrant = 0;
      const leases = [];
      for (const s of steps) {
        let r;
        try {
          if (s.op === 'acquire') r = await issuer.acquire({ scope: 's', holder: s.holder, ttlMs: s.ttlMs, now: s.now, requestId: s.requestId });
          // renew/release take the holder (issue 20): the step's holder, which may or may not be the lease's.
          else if (s.op === 'renew') r = await issuer.renew({ scope: 's', leaseId: leases.at(-1) ?? 'none', holder: s.holder, ttlMs: s.ttlMs, now: s.now });
          else if (s.op === 'release') r = await issuer.release({ scope: 's', leaseId: leases.at(-1) ?? 'none', holder: s.holder });
          else r = await issuer.raise({ scope: 's', atLeast: s.atLeast, now: s.now, revoke: s.holder === 'c' });
        } catch (e) {
          // Only documented refusals (an expiry beyond 2^53−1 ms is INVALID_ARGUMENT).
          assert.ok(e instanceof FencegateError && e.code === 'INVALID_ARGUMENT', `${e?.code}: ${e?.message}`);
          continue;
        }
        if (s.op === 'acquire' && r.ok) {
          if (r.replayed) {
            assert.ok(r.epoch <= lastGrant, 'a replay returns an epoch already granted');
          } else {
            assert.ok(r.epoch > last, `acquire granted ${r.epoch} after ${last}`);
            last = r.epoch;
            lastGrant = r.epoch;
            leases.push(r.leaseId);
          }
        }
        if (s.op === 'raise' && r.ok) {
          assert.ok(r.epoch >= r.epochBefore && r.epoch >= s.atLeast);
          last = Math.max(last, r.epoch);
        }
        const cur = await issuer.current('s');
        assert.equal(cur.epoch, last, 'the stored epoch is the last one handed out or raised to');
      }
    }),
    params(1000),
  );
});
