// Benchmark (a command, not a test): what the persisted-state codec costs per
// decision (issue 12 item 4). Median ns per operation through the public API,
// over the in-memory host store (which keeps each state as JSON text, like
// the SQL and Redis adapters), so every decision decodes one stored text and
// encodes the next one:
//   gate v1          Gate.write, number tokens, no ids: state format v1
//   gate v4 opId     Gate.write with an operation id, window 64: format v4
//                    with up to 64 ids (the full decoder and encoder)
//   gate v4 holder   Gate.establish with a holder: a small format-4 state
//   decodeState v4   decodeState() of a 64-id format-4 text (no store)
//   issuer           Issuer.acquire + release (the issuer record, v2)
// and the .wasm size raw and gzip -9. Run after scripts/build.sh:
//   node bench/state-codec.mjs [--json] [--baseline DIR]
// --baseline DIR also loads another built package (a copy of pkg/ with its
// dist/, e.g. from the commit before a change) and runs both in the same
// rounds, interleaved, reporting each figure and the ratio this/baseline.
// With --json the last line is one JSON object of the figures.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const argv = process.argv.slice(2);
const baselineDir = argv.includes('--baseline') ? argv[argv.indexOf('--baseline') + 1] : null;
const packages = { this: new URL('../pkg/', import.meta.url) };
if (baselineDir) packages.baseline = pathToFileURL(path.resolve(baselineDir) + '/');
const apis = {};
for (const [name, dir] of Object.entries(packages)) apis[name] = await import(new URL('node.mjs', dir));

const KEYS = Array.from({ length: 16 }, (_, i) => `orders/${i}`);
const OPS = 4000;
const ROUNDS = 21;

async function timed(fn) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < OPS; i++) await fn(i);
  return Number(process.hrtime.bigint() - t0) / OPS;
}

function v4text() {
  const ops = Array.from({ length: 64 }, (_, i) => `["op-${i}","${i === 0 ? 40 : 41}"]`).join(',');
  return `{"v":4,"mark":"41","holder":"node-a","ops":[${ops}],"evicted":null,"quarantine":null}`;
}

const casesOf = ({ Gate, Issuer, MemoryHostStore, decodeState }) => ({
  'gate v1': () => {
    const g = new Gate(new MemoryHostStore());
    return (i) => g.write(KEYS[i & 15], 1 + (i >> 3), i);
  },
  'gate v4 opId': () => {
    const g = new Gate(new MemoryHostStore());
    return (i) => g.write(KEYS[i & 15], 1 + (i >> 10), i, { opId: `op-${i}` });
  },
  'gate v4 holder': () => {
    const g = new Gate(new MemoryHostStore());
    return (i) => g.establish(KEYS[i & 15], 1 + (i >> 4), { holder: 'node-a' });
  },
  'decodeState v4': () => {
    const text = v4text();
    return () => decodeState(text);
  },
  issuer: () => {
    const issuer = new Issuer(new MemoryHostStore());
    let now = 1;
    return async (i) => {
      const r = await issuer.acquire({ scope: KEYS[i & 15], holder: 'A', ttlMs: 10_000, now: (now += 1) });
      await issuer.release({ scope: KEYS[i & 15], leaseId: r.leaseId, holder: 'A' });
    };
  },
});

const samples = {};
for (const [pkg, api] of Object.entries(apis)) {
  for (const [name, make] of Object.entries(casesOf(api))) samples[`${pkg}: ${name}`] = { make, xs: [] };
}
for (let round = 0; round < ROUNDS; round++) {
  for (const s of Object.values(samples)) {
    const ns = await timed(s.make());
    if (round >= 3) s.xs.push(ns);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const figures = Object.fromEntries(Object.entries(samples).map(([k, s]) => [k, Math.round(median(s.xs))]));
const wasm = {};
for (const [pkg, dir] of Object.entries(packages)) {
  const bytes = readFileSync(new URL('dist/fencegate_bg.wasm', dir));
  wasm[pkg] = { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
}
const ratios = {};
if (baselineDir) {
  for (const name of Object.keys(casesOf(apis.this))) {
    ratios[name] = Number((figures[`this: ${name}`] / figures[`baseline: ${name}`]).toFixed(2));
  }
}

console.log(`median ns per operation (${OPS} x ${ROUNDS - 3} rounds, 16 keys, Node ${process.version})`);
for (const [k, v] of Object.entries(figures)) console.log(`  ${k.padEnd(26)} ${String(v).padStart(8)} ns`);
for (const [k, v] of Object.entries(ratios)) console.log(`  ratio this/baseline ${k.padEnd(16)} ${v.toFixed(2)}x`);
for (const [k, v] of Object.entries(wasm)) console.log(`wasm size (${k}): ${v.raw} bytes raw, ${v.gzip} bytes gzip -9`);
if (argv.includes('--json')) console.log(JSON.stringify({ bench: 'state-codec', nsPerOp: figures, ratios, wasm }));
