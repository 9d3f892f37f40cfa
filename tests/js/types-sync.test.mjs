// The hand-written pkg/index.d.ts mirrors lists that Rust defines. These tests
// compare each mirrored list with its Rust definition, read from the Rust
// source and, where the binding exports it, from the built package, so a code,
// an outcome or a format version added on either side alone fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { errorCodes } from '../../pkg/node.mjs';

const read = (path) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const dts = read('pkg/index.d.ts').replace(/\/\*[\s\S]*?\*\//g, '');
const errorRs = read('src/error.rs');
const decisionRs = read('src/decision.rs');
const stateRs = read('src/state.rs');
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

/** Rust `Code` variants with their discriminants, in declaration order. */
function rustCodeVariants() {
  const body = block(errorRs, 'pub enum Code {').replace(/\/\/.*$/gm, '');
  return [...body.matchAll(/(\w+)\s*=\s*(\d+)\s*,/g)].map((m) => [m[1], Number(m[2])]);
}

/** `Code::Variant => "NAME"` arms of `Code::as_str`. */
function rustCodeNames() {
  const body = block(errorRs, 'pub const fn as_str(self)');
  return new Map([...body.matchAll(/Code::(\w+)\s*=>\s*"([A-Z_]+)"/g)].map((m) => [m[1], m[2]]));
}

test('ErrorCode in index.d.ts is exactly the Rust Code list, in discriminant order', () => {
  const variants = rustCodeVariants();
  const names = rustCodeNames();
  assert.ok(variants.length >= 26, 'parsed the Rust enum');
  // Discriminants are 0..n−1 in declaration order (the hot-path status is 2 + index).
  assert.deepEqual(variants.map(([, d]) => d), variants.map((_, i) => i));
  // Every variant has exactly one name, and no name is used twice.
  assert.deepEqual([...names.keys()].sort(), variants.map(([v]) => v).sort());
  const rust = variants.map(([v]) => names.get(v));
  assert.equal(new Set(rust).size, rust.length);
  // Code::ALL lists every variant in order.
  const all = [...block(errorRs, 'pub const ALL: [Code;').matchAll(/Code::(\w+)/g)].map((m) => m[1]);
  assert.deepEqual(all, variants.map(([v]) => v));
  assert.match(errorRs, new RegExp(`pub const ALL: \\[Code; ${variants.length}\\]`));
  // The built binding answers the same list, and the declaration names it.
  assert.deepEqual(errorCodes(), rust);
  assert.deepEqual(stringUnion('ErrorCode'), rust);
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

test('Outcome in index.d.ts is exactly the Rust Outcome::as_str names', () => {
  const body = block(decisionRs, 'pub const fn as_str(self)');
  const rust = [...body.matchAll(/=>\s*"([a-z]+)"/g)].map((m) => m[1]);
  assert.deepEqual(rust, ['advance', 'accept', 'reject', 'duplicate']);
  assert.deepEqual(stringUnion('Outcome'), rust);
  const variants = [...block(decisionRs, 'pub enum Outcome {').replace(/\/\/.*$/gm, '').matchAll(/^\s{4}(\w+)/gm)].map((m) => m[1]);
  assert.equal(variants.length, rust.length, 'one name per Rust Outcome variant');
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

test('PersistedState versions in index.d.ts are the versions src/state.rs reads', () => {
  const arms = block(stateRs, 'let expected = match version {');
  const rust = [...arms.matchAll(/^\s*([\d |]+)\s*=>/gm)].flatMap((m) => m[1].split('|').map((s) => Number(s.trim())));
  assert.deepEqual(rust, [1, 2, 3, 4]);
  assert.match(stateRs, /this build reads versions 1 to 4/);
  assert.deepEqual(declaredVersions('PersistedState').sort(), rust);
});

test('PersistedIssuerState versions in index.d.ts are the versions src/issuer.rs reads', () => {
  const consts = new Map([...issuerRs.matchAll(/pub const (ISSUER_STATE_VERSION\w*): u64 = (\d+);/g)].map((m) => [m[1], Number(m[2])]));
  const arms = block(issuerRs, 'let fields = match v {');
  const rust = [...arms.matchAll(/^\s*(\w+)\s*=>/gm)].map((m) => m[1]).filter((n) => n !== 'other').map((n) => consts.get(n) ?? Number(n));
  assert.deepEqual(rust.sort(), [1, 2]);
  assert.match(issuerRs, /this build reads versions 1 and 2/);
  assert.deepEqual(declaredVersions('PersistedIssuerState').sort(), rust);
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
