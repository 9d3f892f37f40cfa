// Benchmark (a command, not a test): median ns per fenced write through the
// public JS API (MemoryGate.write) for number and bigint tokens, against a
// plain-JS gate with the same validation and comparison, in the same run; and
// the .wasm size raw and gzipped. Run: npm run bench (after scripts/build.sh);
// `--json` adds one final line of JSON with the figures and ratios (issue 14
// item 4 targets: number ≤ 1.3×, bigint ≤ 1.6× the plain-JS gate, op id ≤ 1.5×
// the plain fenced write). `--against DIR` adds another build's MemoryGate to the same rounds.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { pathToFileURL } from 'node:url';
import { join, resolve } from 'node:path';
import { MemoryGate } from '../pkg/node.mjs';

// `--against DIR`: another build's package directory (e.g. an earlier commit's pkg/),
// measured in the same process and the same rounds, for a before/after table.
const againstAt = process.argv.indexOf('--against');
const OtherGate = againstAt > 0 ? (await import(pathToFileURL(join(resolve(process.argv[againstAt + 1]), 'node.mjs')).href)).MemoryGate : null;

const MAX_U64 = 2n ** 64n - 1n;

/** The baseline: the same rules written by hand in JS (R4 validation, R2 comparison). */
class PlainGate {
  marks = new Map();
  values = new Map();
  write(key, token, value) {
    // Numbers and bigints compare exactly with each other in JS, so no conversion.
    let t;
    if (typeof token === 'number') {
      if (!Number.isSafeInteger(token) || token < 1) return { ok: false, code: 'MALFORMED_TOKEN' };
      t = token;
    } else if (typeof token === 'bigint') {
      if (token < 1n || token > MAX_U64) return { ok: false, code: 'MALFORMED_TOKEN' };
      t = token <= 9007199254740991n ? Number(token) : token;
    } else {
      return { ok: false, code: token == null ? 'MISSING_TOKEN' : 'MALFORMED_TOKEN' };
    }
    const mark = this.marks.get(key) ?? 0;
    if (t < mark) return { key, ok: false, outcome: 'reject', code: 'STALE_TOKEN', token, markBefore: mark, markAfter: mark };
    this.marks.set(key, t);
    this.values.set(key, value);
    return { key, ok: true, outcome: t > mark ? 'advance' : 'accept', code: null, token, markBefore: mark, markAfter: t };
  }
}

const KEYS = Array.from({ length: 16 }, (_, i) => `orders/${i}`);
const OPS = 20000;
const ROUNDS = 31;

const OP_IDS = Array.from({ length: OPS }, (_, i) => ({ opId: `op-${i}` }));

function run(gate, tokens, withOpIds = false) {
  let sink = 0;
  const t0 = process.hrtime.bigint();
  if (withOpIds) {
    for (let i = 0; i < OPS; i++) {
      const v = gate.write(KEYS[i & 15], tokens[i], i, OP_IDS[i]);
      if (v.ok) sink++;
    }
  } else {
    for (let i = 0; i < OPS; i++) {
      const v = gate.write(KEYS[i & 15], tokens[i], i);
      if (v.ok) sink++;
    }
  }
  const ns = Number(process.hrtime.bigint() - t0) / OPS;
  if (sink === -1) console.log(sink);
  return ns;
}

// Tokens rise slowly with a mix of advance, accept and stale (about 1 in 8).
const numTokens = Array.from({ length: OPS }, (_, i) => Math.floor(i / 4) + 1 - (i % 8 === 7 ? 3 : 0) || 1);
const bigTokens = numTokens.map((t) => BigInt(t) + 2n ** 60n);

let audited = 0;
const cases = [
  ['fencegate number', () => new MemoryGate(), numTokens],
  ['plain JS number', () => new PlainGate(), numTokens],
  ['fencegate bigint', () => new MemoryGate(), bigTokens],
  ['plain JS bigint', () => new PlainGate(), bigTokens],
  // Issue 6: the same writes with an operation id each, and with an audit callback.
  ['number + opId', () => new MemoryGate(), numTokens, true],
  ['number + onVerdict', () => new MemoryGate({ onVerdict: () => { audited++; } }), numTokens],
];
const OTHER = [['fencegate number', 'other number'], ['fencegate bigint', 'other bigint'], ['number + opId', 'other + opId']];
if (OtherGate !== null) {
  cases.push(['other number', () => new OtherGate(), numTokens], ['other bigint', () => new OtherGate(), bigTokens], ['other + opId', () => new OtherGate(), numTokens, true]);
}
const samples = Object.fromEntries(cases.map(([n]) => [n, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, make, tokens, withOpIds] of cases) {
    const gate = make();
    samples[name].push(run(gate, tokens, withOpIds));
    gate.free?.();
  }
}
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
const med = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v.slice(3))]));
console.log(`median ns per write (${OPS} writes x ${ROUNDS - 3} rounds, 16 keys, Node ${process.version})`);
for (const [name] of cases) console.log(`  ${name.padEnd(18)} ${med[name].toFixed(1).padStart(8)} ns`);
console.log(`  ratio number  fencegate/plain = ${(med['fencegate number'] / med['plain JS number']).toFixed(2)}x`);
console.log(`  ratio bigint  fencegate/plain = ${(med['fencegate bigint'] / med['plain JS bigint']).toFixed(2)}x`);
console.log(`  operation ids: ${med['number + opId'].toFixed(1)} ns, ${(med['number + opId'] / med['fencegate number']).toFixed(2)}x the plain fenced write`);
console.log(`  audit callback: ${med['number + onVerdict'].toFixed(1)} ns, ${(med['number + onVerdict'] / med['fencegate number']).toFixed(2)}x the plain fenced write (${audited} records)`);
const against = {};
if (OtherGate !== null) {
  console.log(`against ${process.argv[againstAt + 1]} (same rounds; this / other):`);
  for (const [mine, other] of OTHER) {
    against[mine] = { thisNs: med[mine], otherNs: med[other], ratio: med[mine] / med[other] };
    console.log(`  ${mine.padEnd(18)} ${med[mine].toFixed(1).padStart(8)} ns vs ${med[other].toFixed(1).padStart(8)} ns = ${(med[mine] / med[other]).toFixed(3)}`);
  }
}
const wasm = readFileSync(new URL('../pkg/dist/fencegate_bg.wasm', import.meta.url));
const gzip = gzipSync(wasm, { level: 9 }).length;
console.log(`wasm size: ${wasm.length} bytes raw, ${gzip} bytes gzip -9`);
if (process.argv.includes('--json')) {
  const r2 = (x) => Math.round(x * 100) / 100;
  console.log(JSON.stringify({
    bench: 'decision',
    node: process.version,
    ns: Object.fromEntries(Object.entries(med).map(([k, v]) => [k, r2(v)])),
    ratios: {
      number: r2(med['fencegate number'] / med['plain JS number']),
      bigint: r2(med['fencegate bigint'] / med['plain JS bigint']),
      opId: r2(med['number + opId'] / med['fencegate number']),
      onVerdict: r2(med['number + onVerdict'] / med['fencegate number']),
    },
    wasm: { raw: wasm.length, gzip },
    ...(OtherGate === null ? {} : { against }),
  }));
}
