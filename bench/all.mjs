// `npm run bench:all` (scripts/bench-all.sh): every benchmark of issue 14's report in one run,
// gathered into one table. Each part is its own script, run here with `--json`; its last
// output line is its figures. Speed is measured only here and in bench/, never by tests.
//
//   stores     bench/stores.mjs      raw / hand-written fencing / fencegate writes/s on SQLite,
//                                    Redis, PostgreSQL (needs FENCEGATE_REDIS_URL, FENCEGATE_PG_URL:
//                                    scripts/bench-all.sh starts the servers)
//   decision   bench/decision.mjs    MemoryGate vs a plain-JS gate; op id vs plain fenced write
//   signed     bench/signed.mjs      HMAC-signed write vs the HMAC computation alone
//   coldstart  bench/coldstart.mjs   import → first verdict in fresh Node processes
//   size       pkg/dist and build/pkg-ed25519/dist .wasm (and the issuer side's), raw and gzip -9
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const root = new URL('../', import.meta.url);

/** Runs `node bench/NAME.mjs --json`, echoing its output; returns its last line as JSON (null: it failed). */
function part(name) {
  process.stdout.write(`\n## ${name}\n`);
  const r = spawnSync(process.execPath, [`bench/${name}.mjs`, '--json'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 });
  const lines = (r.stdout ?? '').trimEnd().split('\n');
  process.stdout.write(lines.slice(0, -1).join('\n') + '\n');
  if (r.status !== 0) {
    console.log(`(bench/${name}.mjs exited ${r.status})`);
    return null;
  }
  try {
    return JSON.parse(lines.at(-1));
  } catch {
    console.log(`(bench/${name}.mjs printed no JSON line)`);
    return null;
  }
}

function size(path) {
  const file = new URL(path, root);
  if (!existsSync(file)) return null;
  const bytes = readFileSync(file);
  return { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
}

const stores = part('stores');
const decision = part('decision');
const signed = part('signed');
const coldstart = part('coldstart');
const wasm = size('pkg/dist/fencegate_bg.wasm');
const ed = size('build/pkg-ed25519/dist/fencegate_bg.wasm');
const issuerSide = size('pkg/dist/fencegate_issuer_bg.wasm');

const f2 = (x) => (typeof x === 'number' ? x.toFixed(2) : '–');
const n0 = (x) => (typeof x === 'number' ? String(Math.round(x)) : '–');
const row = (cells, widths) => '  ' + cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('');

console.log(`\n# fencegate, all figures of one run (Node ${process.version})`);
console.log('\nfenced writes per second (medians of interleaved rounds), target ≥ 0.9× raw (Redis, PostgreSQL), ≥ 0.85× (SQLite), ≥ 0.95× hand-written');
const w = [10, 9, 9, 11, 7, 7, 15, 7];
console.log(row(['store', 'raw', 'hand', 'fencegate', '×raw', '×hand', 'no cache', '×raw'], w));
for (const name of ['sqlite', 'redis', 'postgres', 'etcd']) {
  const r = stores?.stores?.[name];
  if (!r) {
    console.log(row([name, '–', '–', '–', '–', '–', '–', '–'], w));
    continue;
  }
  console.log(
    row([name, n0(r.raw), n0(r.hand), n0(r.fencegate), f2(r.fencegate / r.raw), f2(r.fencegate / r.hand), n0(r.fencegateNoCache), f2(r.fencegateNoCache / r.raw)], w),
  );
}
const ratios = decision?.ratios ?? {};
console.log('\nin process (medians)');
console.log(`  MemoryGate number / plain-JS gate      ${f2(ratios.number)}×   (target ≤ 1.3×)`);
console.log(`  MemoryGate bigint / plain-JS gate      ${f2(ratios.bigint)}×   (target ≤ 1.6×)`);
console.log(`  write with op id / plain fenced write  ${f2(ratios.opId)}×   (target ≤ 1.5×)`);
console.log(`  HMAC-signed write / HMAC-SHA256 alone  ${f2(signed?.ratios?.signedOverHmac)}×   (target ≤ 1.5×)`);
console.log('\nsize (gzip -9)');
console.log(`  default .wasm  ${wasm ? `${wasm.raw} B raw, ${wasm.gzip} B gzip` : 'not built'}   (target ≤ 45,000 B gzip)`);
console.log(`  issuer side    ${issuerSide ? `${issuerSide.raw} B raw, ${issuerSide.gzip} B gzip` : 'not built'}   (fencegate_issuer_bg.wasm: loaded only by an Issuer or reconcile)`);
console.log(
  `  Ed25519 .wasm  ${ed ? `${ed.raw} B raw, ${ed.gzip} B gzip, +${ed.gzip - (wasm?.gzip ?? 0)} B over the default` : 'not built (FENCEGATE_FEATURES=ed25519 FENCEGATE_OUT=build/pkg-ed25519 bash scripts/build.sh)'}   (target ≤ +12,000 B)`,
);
console.log('\ncold start (median, fresh processes)');
for (const [kind, f] of Object.entries(coldstart ?? {})) {
  if (f && typeof f === 'object' && 'coldStartMs' in f) {
    console.log(`  ${kind.padEnd(6)} +${f.coldStartMs} ms over Node alone (${f.nodeMs} ms); import → first verdict ${f.importToVerdictMs} ms   (target ≤ 5 ms)`);
  }
}
