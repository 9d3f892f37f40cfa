// pkg/index.d.ts mirrors what Rust defines. ErrorCode and Outcome are rendered
// from Rust (src/typescript.rs, docs/decisions/generated-types.md); the record
// shapes are written by hand, and these tests compare each with its Rust
// definition and, where the binding exports it, with the built package, so a
// field or a format version added on either side alone fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { errorCodes, Issuer, Gate, MemoryHostStore, reconcile } from '../../../pkg/node.mjs';

const read = (path) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
const dts = read('pkg/index.d.ts').replace(/\/\*[\s\S]*?\*\//g, '');
const errorRs = read('src/error.rs');
const issuerRs = read('src/issuer.rs');

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

function rustCodeNames() {
  const body = block(errorRs, 'pub const fn as_str(self)');
  return new Map([...body.matchAll(/Code::(\w+)\s*=>\s*"([A-Z_]+)"/g)].map((m) => [m[1], m[2]]));
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

test('the issuer result codes in index.d.ts are the codes of Rust IssuerResult::code', () => {
  const names = rustCodeNames();
  const body = block(issuerRs, 'pub fn code(&self) -> Option<Code>');
  const rust = [...body.matchAll(/Some\(Code::(\w+)\)/g)].map((m) => names.get(m[1]));
  assert.deepEqual(rust, ['LEASE_HELD', 'LEASE_EXPIRED', 'LEASE_NOT_HELD', 'REQUEST_ID_REUSED']);
  // The unsuccessful members of IssuerResult (`ok: false; code: '…'`).
  const declared = [...dts.matchAll(/ok: false;\s*code: '([A-Z_]+)';\s*scope: string;/g)].map((m) => m[1]);
  assert.deepEqual(declared.sort(), [...rust].sort());
});

// ── Issue 12: object shapes. Each interface below is compared member by member
// (names and order) with the Rust definition the binding serializes or reads:
// a serde struct's fields (snake_case → camelCase under `rename_all =
// "camelCase"`), or the `serialize_field` calls of a hand-written Serialize.
// The built package's answers are compared with the same lists, so neither
// the declaration, the Rust type nor the binding can gain or lose a field alone.

const reconcileRs = read('src/reconcile.rs');
const signedRs = read('src/signed.rs');
const wasmIssuerRs = read('src/wasm/issuer.rs');

const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

/** The fields of Rust `pub struct <name>` in `source`, as they cross to JS. */
function rustFields(source, name) {
  const head = `pub struct ${name} {`;
  const at = source.indexOf(head);
  assert.ok(at >= 0, `Rust declares struct ${name}`);
  const attrs = source.slice(source.lastIndexOf('\n\n', at), at);
  const body = block(source, head).replace(/\/\/.*$/gm, '');
  const fields = [...body.matchAll(/^\s*pub (\w+):/gm)].map((m) => m[1]);
  assert.ok(fields.length > 0, `parsed the fields of ${name}`);
  // `StepOptions` crosses as arguments (not serde): its JS names are camelCase too.
  return /rename_all = "camelCase"/.test(attrs) || name === 'StepOptions' ? fields.map(camel) : fields;
}

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

/** The `serialize_field("…")` names of each match arm of `ScopedResult`'s Serialize, after the common ones. */
function scopedResultFields() {
  const body = block(issuerRs, "impl Serialize for ScopedResult<'_> {");
  const common = [...body.slice(0, body.indexOf('match self.result')).matchAll(/serialize_field\("(\w+)"/g)].map((m) => m[1]);
  const arms = new Map();
  // Tokens in order: `matches!(self.result, IssuerResult::V` (the fields after it are V's only),
  // a variant (a pattern: `A | B =>` is one arm), `=>`, and `serialize_field("name"`.
  let group = [];
  let only = null;
  let arrow = true;
  const match = body.slice(body.indexOf('match self.result'));
  for (const m of match.matchAll(/matches!\(self\.result, IssuerResult::(\w+)|IssuerResult::(\w+)|=>|serialize_field\("(\w+)"/g)) {
    if (m[1] !== undefined) only = m[1];
    else if (m[2] !== undefined) {
      if (arrow) [group, only, arrow] = [[], null, false];
      group.push(m[2]);
      arms.set(m[2], []);
    } else if (m[0] === '=>') arrow = true;
    else for (const v of group) if (only === null || only === v) arms.get(v).push(m[3]);
  }
  return { common, arms };
}

test('issuer results in index.d.ts have the fields Rust serializes (ScopedResult), and the package answers them', async () => {
  const { common, arms } = scopedResultFields();
  assert.deepEqual(common, ['ok', 'code', 'scope']);
  assert.deepEqual([...arms.keys()].sort(), ['Expired', 'Granted', 'Held', 'NotHeld', 'Raised', 'Released', 'Renewed', 'RequestIdReused']);
  const grant = arms.get('Granted').filter((f) => f !== 'replayed');
  const expected = {
    IssuerGrant: grant,
    LeaseHeld: arms.get('Held'),
    LeaseExpired: arms.get('Expired'),
    LeaseNotHeld: arms.get('NotHeld'),
    RequestIdReused: arms.get('RequestIdReused'),
    IssuerReleased: arms.get('Released'),
    IssuerRaised: arms.get('Raised'),
  };
  assert.deepEqual(arms.get('Renewed'), grant);
  assert.deepEqual(arms.get('Granted'), [...grant, 'replayed']); // acquire: IssuerGrant & { replayed }
  for (const [name, fields] of Object.entries(expected)) assert.deepEqual(dtsMembers(name), [...common, ...fields], name);

  // The built package answers exactly these members, in this order.
  const issuer = new Issuer();
  const T = 1000;
  const g = await issuer.acquire({ scope: 's', holder: 'A', ttlMs: 10, now: T, requestId: 'r' });
  const seen = {
    acquire: [g, [...common, ...arms.get('Granted')]],
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
});

test('issuer records, fence records and signed-token claims in index.d.ts have the fields of their Rust types', () => {
  assert.deepEqual(dtsMembers('IssuerRecord'), rustFields(issuerRs, 'IssuerRecord'));
  assert.deepEqual(dtsMembers('IssuerLeaseRecord'), rustFields(issuerRs, 'LeaseRecord'));
  assert.deepEqual(dtsMembers('FenceRecord'), rustFields(reconcileRs, 'FenceRecord'));
  // Claims: the same names (the declaration orders them as the token text does).
  assert.deepEqual(dtsMembers('TokenClaims').sort(), rustFields(signedRs, 'Claims').map(camel).sort());
});

test('the per-operation options of the Issuer in index.d.ts are what the binding reads (StepOptions)', () => {
  const rust = rustFields(wasmIssuerRs, 'StepOptions');
  // The binding takes exactly these, in this order, after (state, scope, op), and the Issuer passes them so.
  const sig = wasmIssuerRs.slice(wasmIssuerRs.indexOf('pub fn issuer_step('), wasmIssuerRs.indexOf(') -> Result<JsValue, JsValue> {', wasmIssuerRs.indexOf('pub fn issuer_step(')));
  assert.deepEqual([...sig.matchAll(/^\s*(\w+):/gm)].map((m) => camel(m[1])), ['state', 'scope', 'op', ...rust]);
  const call = read('pkg/lib/issuer.mjs').match(/wasm\.__issuerStep\(text, scope, o\.op, ([^;]*)\);/);
  assert.ok(call, 'issuer.mjs calls __issuerStep');
  assert.deepEqual([...call[1].matchAll(/o\.(\w+)/g)].map((m) => m[1]), rust);
  // `bigint` and `random` are the Issuer's own (its epochs option, its CSPRNG); `scope` and `revoke` pick the step.
  const own = new Set(['bigint', 'random']);
  const select = new Set(['scope', 'revoke']);
  const args = ['AcquireArgs', 'RenewArgs', 'ReleaseArgs', 'RaiseArgs'].map(dtsMembers);
  const declared = new Set(args.flat().filter((m) => !select.has(m)));
  assert.deepEqual([...declared].sort(), rust.filter((f) => !own.has(f)).sort());
});

test('the reconcile report in index.d.ts has the fields of the Rust plan (src/reconcile.rs), and reconcile() answers them', async () => {
  const pairs = {
    ReconcileIssuer: 'IssuerSummary',
    ReconcileLease: 'LeaseSummary',
    ReconcileConflict: 'Conflict',
    ReconcileError: 'KeyError',
    ReconcileRevoked: 'Revoked',
  };
  for (const [ts, rs] of Object.entries(pairs)) assert.deepEqual(dtsMembers(ts), rustFields(reconcileRs, rs), ts);
  const change = ['scope', 'target'];
  const step = rustFields(reconcileRs, 'ResourceStep');
  assert.deepEqual(dtsMembers('ReconcileIssuerChange'), [...change, ...rustFields(reconcileRs, 'IssuerChange')]);
  assert.deepEqual(dtsMembers('ReconcileEstablish'), [...change, ...step.filter((f) => f !== 'floor')]);
  assert.deepEqual(dtsMembers('ReconcileQuarantine'), [...change, ...step.filter((f) => f !== 'holder')]);
  // A scope's report: the plan's findings (its steps become `changes`), with what was read.
  const plan = rustFields(reconcileRs, 'ScopePlan');
  assert.deepEqual(plan, ['issuer', 'conflicts', 'errors', 'raise', 'resources']);
  assert.deepEqual(dtsMembers('ReconcileScope'), ['scope', 'issuer', 'keys', 'conflicts', 'errors']);

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
