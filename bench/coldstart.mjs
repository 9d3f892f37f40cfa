// Benchmark (a command, not a test): cold start, from `import` to the first verdict in a
// fresh Node process, on top of Node's own start-up (issue 14, target ≤ 5 ms).
//
// It spawns `node -e` many times, alternating a baseline process (the same kind of
// script, without fencegate) with a process that imports the package, makes a
// MemoryGate and writes once; the figure is the median wall time of the second minus
// the median of the first. Each process also reports its own in-process time from just
// before the import to the first verdict (performance.now()), a less noisy view of the
// same cost. ESM (pkg/node.mjs) and CommonJS (pkg/node.cjs) are measured alike.
//
// Run: node bench/coldstart.mjs [--runs N] [--pkg DIR] [--json]   (after scripts/build.sh;
// --pkg measures another built copy of the package, e.g. build/pkg-ed25519)
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const json = args.includes('--json');
const runsAt = args.indexOf('--runs');
const RUNS = runsAt >= 0 ? Number(args[runsAt + 1]) : 41;
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error('--runs takes a positive integer');

const pkgAt = args.indexOf('--pkg');
const pkgDir = pkgAt >= 0 ? resolve(args[pkgAt + 1]) : fileURLToPath(new URL('../pkg', import.meta.url));
const esmUrl = pathToFileURL(join(pkgDir, 'node.mjs')).href;
const cjsPath = join(pkgDir, 'node.cjs');

// Every script prints the in-process milliseconds from before the import to the verdict.
const scripts = {
  esmBase: ['--input-type=module', '-e', 'const t0 = performance.now(); const v = { ok: true }; if (!v.ok) process.exit(1); console.log(performance.now() - t0);'],
  esm: [
    '--input-type=module',
    '-e',
    `const t0 = performance.now();
const { MemoryGate } = await import(${JSON.stringify(esmUrl)});
const v = new MemoryGate().write('orders/1', 1, 'v');
if (!v.ok || v.outcome !== 'advance') process.exit(1);
console.log(performance.now() - t0);`,
  ],
  cjsBase: ['-e', 'const t0 = performance.now(); const v = { ok: true }; if (!v.ok) process.exit(1); console.log(performance.now() - t0);'],
  cjs: [
    '-e',
    `const t0 = performance.now();
const { MemoryGate } = require(${JSON.stringify(cjsPath)});
const v = new MemoryGate().write('orders/1', 1, 'v');
if (!v.ok || v.outcome !== 'advance') process.exit(1);
console.log(performance.now() - t0);`,
  ],
};

function once(argv) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, argv, { encoding: 'utf8' });
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`coldstart: a child process failed (${r.status}): ${r.stderr}`);
  return { wall, inside: Number(r.stdout.trim()) };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const samples = Object.fromEntries(Object.keys(scripts).map((k) => [k, { wall: [], inside: [] }]));
for (const name of Object.keys(scripts)) once(scripts[name]); // warm the file cache
for (let i = 0; i < RUNS; i++) {
  // Interleaved, so that load on the machine falls on baseline and measured runs alike.
  for (const name of Object.keys(scripts)) {
    const { wall, inside } = once(scripts[name]);
    samples[name].wall.push(wall);
    samples[name].inside.push(inside);
  }
}

const round = (x) => Math.round(x * 100) / 100;
const figures = {};
for (const kind of ['esm', 'cjs']) {
  const base = samples[`${kind}Base`];
  const with_ = samples[kind];
  figures[kind] = {
    nodeMs: round(median(base.wall)),
    withFencegateMs: round(median(with_.wall)),
    coldStartMs: round(median(with_.wall) - median(base.wall)),
    importToVerdictMs: round(median(with_.inside) - median(base.inside)),
  };
}

console.log(`cold start, median of ${RUNS} fresh processes each (Node ${process.version})`);
for (const [kind, f] of Object.entries(figures)) {
  console.log(
    `  ${kind}: node alone ${f.nodeMs} ms, with import + first write ${f.withFencegateMs} ms` +
      ` -> +${f.coldStartMs} ms (in-process import to first verdict ${f.importToVerdictMs} ms)`,
  );
}
if (json) console.log(JSON.stringify({ bench: 'coldstart', runs: RUNS, node: process.version, ...figures }));
