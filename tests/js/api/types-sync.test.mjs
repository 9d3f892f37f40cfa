// pkg/index.d.ts mirrors what Rust defines. The lists (ErrorCode, Outcome, the
// persisted-state unions) are rendered from Rust and the records declared beside
// their Rust types (src/typescript.rs, docs/decisions/generated-types.md; its
// cargo test fails while index.d.ts differs). These tests compare the published
// declarations with what the built package answers, so a field, a code or a
// format version the package gains or loses without its declaration fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { errorCodes, Issuer, Gate, MemoryHostStore, reconcile, mintToken, verifyToken } from '../../../pkg/node.mjs';

const read = (path) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
const dts = read('pkg/index.d.ts').replace(/\/\*[\s\S]*?\*\//g, '');

/** The text of `export type <name> = …;` in index.d.ts. */
function typeAlias(name) {
  const m = dts.match(new RegExp(`export type ${name} =([^;]*);`));
  assert.ok(m, `index.d.ts declares type ${name}`);
  return m[1];
}

/** The string literals of a union type in index.d.ts, in order. */
function stringUnion(name) {
  return [...typeAlias(name).matchAll(/'([^']*)'/g)].map((m) => m[1]);
}

/** The body of the first `{ … }` block after `head` in `source` (braces balanced). */
function block(source, head) {
  const at = source.indexOf(head);
  assert.ok(at >= 0, `found ${JSON.stringify(head)}`);
  const open = source.indexOf('{', at + head.length - 1);
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    if (source[i] === '{') depth++;
    else if (source[i] === '}' && --depth === 0) return source.slice(open + 1, i);
  }
  throw new Error(`unbalanced block after ${head}`);
}

// ErrorCode and Outcome are rendered from Rust into index.d.ts (src/typescript.rs, whose
// cargo test fails while they differ): here, the built binding answers the same lists.
test('ErrorCode in index.d.ts is what the built binding answers (errorCodes(), in order)', () => {
  assert.deepEqual(stringUnion('ErrorCode'), errorCodes());
  assert.equal(new Set(errorCodes()).size, errorCodes().length);
});

test('RejectCode in index.d.ts names only Rust codes, without repeats', () => {
  const rejects = stringUnion('RejectCode');
  const codes = new Set(errorCodes());
  assert.deepEqual(rejects.filter((c) => !codes.has(c)), []);
  assert.equal(new Set(rejects).size, rejects.length);
  // Thrown-only codes never come back as a verdict's code.
  for (const thrown of ['STORE_ERROR', 'COMMIT_CONFLICT', 'COMMIT_UNKNOWN', 'INVALID_ARGUMENT', 'NOT_INITIALIZED', 'CORRUPT_STATE']) {
    assert.ok(!rejects.includes(thrown), thrown);
  }
});

test('Outcome in index.d.ts names the outcomes the built package answers', async () => {
  const gate = new Gate(new MemoryHostStore());
  const seen = [];
  for (const [token, opId] of [[2, undefined], [2, undefined], [1, undefined], [2, 'op'], [2, 'op']]) seen.push((await gate.write('k', token, 'v', opId === undefined ? undefined : { opId })).outcome);
  assert.deepEqual(seen, ['advance', 'accept', 'reject', 'accept', 'duplicate']);
  assert.deepEqual(stringUnion('Outcome'), ['advance', 'accept', 'reject', 'duplicate']);
});

/** The `v: N` of each interface in a union of persisted-state interfaces. */
function declaredVersions(union) {
  const members = typeAlias(union).split('|').map((s) => s.trim());
  return members.map((name) => {
    const m = dts.match(new RegExp(`export interface ${name}\\b[^{]*\\{\\s*v: (\\d+);`));
    assert.ok(m, `${name} declares its version first`);
    return Number(m[1]);
  });
}

// The unions are rendered from the versions the Rust decoders read (src/typescript.rs);
// each member interface declares the version its name says.
test('PersistedState and PersistedIssuerState: each member interface declares the version its name says', () => {
  assert.deepEqual(declaredVersions('PersistedState'), [1, 2, 3, 4]);
  assert.deepEqual(declaredVersions('PersistedIssuerState'), [1, 2]);
  for (const union of ['PersistedState', 'PersistedIssuerState']) {
    const members = typeAlias(union).split('|').map((m) => Number(m.trim().match(/V(\d+)$/)[1]));
    assert.deepEqual(declaredVersions(union), members);
  }
});

// Object shapes: each interface is compared member by member (names and order)
// with the objects the built package answers.

/** The member names of `export interface <name>` in index.d.ts, in order. */
function dtsMembers(name) {
  const body = block(dts, `export interface ${name} {`).replace(/\/\/.*$/gm, '');
  // members at depth 0 only
  let depth = 0;
  let flat = '';
  for (const ch of body) {
    if (ch === '{' || ch === '(') depth++;
    if (depth === 0) flat += ch;
    if (ch === '}' || ch === ')') depth--;
  }
  return [...flat.matchAll(/^\s*(\w+)\??:/gm)].map((m) => m[1]);
}

test('issuer results and records in index.d.ts have the members the package answers, and the unsuccessful results their codes', async () => {
  const issuer = new Issuer();
  const T = 1000;
  const g = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 10, now: T, requestId: 'r' });
  const seen = {
    acquire: [g, [...dtsMembers('IssuerGrant'), 'replayed']],
    held: [await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 10, now: T }), dtsMembers('LeaseHeld')],
    reused: [await issuer.acquire({ scope: 's', holder: 'B', ttlMs: 10, now: T, requestId: 'r' }), dtsMembers('RequestIdReused')],
    renew: [await issuer.renew({ scope: 's', leaseId: g.leaseId, holder: 'A', ttlMs: 10, now: T }), dtsMembers('IssuerGrant')],
    notHeld: [await issuer.renew({ scope: 's', leaseId: g.leaseId, holder: 'B', ttlMs: 10, now: T }), dtsMembers('LeaseNotHeld')],
    current: [await issuer.current('s'), dtsMembers('IssuerRecord')],
    lease: [(await issuer.current('s')).lease, dtsMembers('IssuerLeaseRecord')],
    release: [await issuer.release({ scope: 's', leaseId: g.leaseId, holder: 'A' }), dtsMembers('IssuerReleased')],
    expired: [await issuer.renew({ scope: 's', leaseId: g.leaseId, holder: 'A', ttlMs: 10, now: T }), dtsMembers('LeaseExpired')],
    raise: [await issuer.raise({ scope: 's', atLeast: 5, now: T }), dtsMembers('IssuerRaised')],
  };
  for (const [name, [value, members]] of Object.entries(seen)) assert.deepEqual(Object.keys(value), members, name);
  for (const name of ['IssuerGrant', 'LeaseHeld', 'LeaseExpired', 'LeaseNotHeld', 'RequestIdReused', 'IssuerReleased', 'IssuerRaised']) {
    assert.deepEqual(dtsMembers(name).slice(0, 3), ['ok', 'code', 'scope'], name);
  }
  // The unsuccessful members of IssuerResult (`ok: false; code: '…'`) are the codes the package answers.
  const declared = [...dts.matchAll(/ok: false;\s*code: '([A-Z_]+)';\s*scope: string;/g)].map((m) => m[1]);
  const answered = [seen.held[0], seen.reused[0], seen.notHeld[0], seen.expired[0]].map((r) => r.code);
  assert.deepEqual(declared.sort(), answered.sort());
  assert.deepEqual(answered, ['LEASE_EXPIRED', 'LEASE_HELD', 'LEASE_NOT_HELD', 'REQUEST_ID_REUSED']);
});

test('signed-token claims in index.d.ts have the members verifyToken answers', () => {
  const K = new Uint8Array(32).fill(3);
  const text = mintToken({ scope: 'orders', epoch: 5, leaseId: 'l-1', generation: 2 }, { kid: 'k1', hmac: K });
  const claims = verifyToken(text, { keys: { k1: K }, scope: 'orders' });
  assert.deepEqual(Object.keys(claims).sort(), dtsMembers('TokenClaims').sort());
});

test('the per-operation options of the Issuer in index.d.ts are the names it accepts (an unknown one is INVALID_ARGUMENT)', async () => {
  const issuer = new Issuer(new MemoryHostStore(), { clock: () => 0 }); // `now` left out: the clock's
  const g = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 10_000 });
  const base = {
    AcquireArgs: ['acquire', { scope: 's2', holder: 'A', ttlMs: 10 }],
    RenewArgs: ['renew', { scope: 's', leaseId: g.leaseId, holder: 'A', ttlMs: 10_000 }],
    ReleaseArgs: ['release', { scope: 'nobody', leaseId: 'x', holder: 'A' }],
    RaiseArgs: ['raise', { scope: 's3', atLeast: 1 }],
  };
  for (const [name, [op, args]] of Object.entries(base)) {
    for (const member of dtsMembers(name)) {
      if (member in args) continue;
      await issuer[op]({ ...args, [member]: undefined }); // a declared name, left at its default
    }
    await assert.rejects(issuer[op]({ ...args, notAnOption: undefined }), { code: 'INVALID_ARGUMENT' }, name);
  }
});

test('the reconcile report in index.d.ts has the members reconcile() answers', async () => {
  assert.deepEqual(dtsMembers('ReconcileScope'), ['scope', 'issuer', 'keys', 'conflicts', 'errors']);
  assert.deepEqual(dtsMembers('ReconcileEstablish').slice(0, 2), ['scope', 'target']);
  // The package's reports have these members: a restored issuer (epoch 2, live lease of A, k at 3 for B, j at 1).
  const store = new MemoryHostStore();
  const issuer = new Issuer(store);
  const gate = new Gate(store);
  await issuer.raise({ scope: 's', atLeast: 1, now: 0 });
  await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 100, now: 0 });
  await gate.write('k', 3, 'v', { holder: 'B' });
  await gate.write('j', 1, 'v');
  await gate.write('c', 2, 'v', { holder: 'B' });
  const dry = await reconcile({ issuer, gate, scopes: { s: ['k', 'j', 'c'] }, now: 1, dryRun: true });
  const sc = dry.scopes[0];
  assert.deepEqual(Object.keys(sc), dtsMembers('ReconcileScope'));
  assert.deepEqual(Object.keys(sc.issuer), dtsMembers('ReconcileIssuer'));
  assert.deepEqual(Object.keys(sc.issuer.lease), dtsMembers('ReconcileLease'));
  assert.deepEqual(Object.keys(sc.conflicts[0]), dtsMembers('ReconcileConflict'));
  assert.deepEqual(Object.keys(sc.keys[0]), dtsMembers('FenceRecord'));
  assert.deepEqual(dry.changes.map((c) => Object.keys(c)), [dtsMembers('ReconcileIssuerChange'), dtsMembers('ReconcileQuarantine'), dtsMembers('ReconcileQuarantine')]);
  assert.deepEqual(Object.keys(dry.changes[0].revoked), dtsMembers('ReconcileRevoked'));
  // A live lease keeps working: keys below it are established for its holder.
  await issuer.acquire({ scope: 't', holder: 'A', ttlMs: 100, now: 0 });
  await gate.write('t1', 1, 'v'); // the lease's epoch is 1: nothing below it
  const live = await reconcile({ issuer, gate, scopes: { t: ['t1', 'none'] }, now: 1 });
  assert.deepEqual(live.changes.map((c) => Object.keys(c)), [dtsMembers('ReconcileEstablish')]);
  // An unreadable record is an error of its key.
  store.commit('bad', null, { v: 9 }, { kind: 'none' });
  const bad = await reconcile({ issuer, gate, scopes: { t: ['bad'] }, now: 1, dryRun: true });
  assert.deepEqual(Object.keys(bad.scopes[0].errors[0]), dtsMembers('ReconcileError'));
});
