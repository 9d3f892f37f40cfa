// Benchmark (a command, not a test): cold start, from `import` to the first verdict in a
// fresh Node process, on top of Node's own start-up (issue 14, target ≤ 5 ms).
//
// It spawns Node many times, alternating a baseline process (a one-line program file, the
// same kind as the measured one, without fencegate) with a process whose program file imports
// the package, makes a MemoryGate and writes once; the figure is the median wall time of the
// second minus the median of the first. Both run a program file (ESM: main.mjs, CommonJS:
// main.cjs), not `node -e`: every real program is a file, and the first file module a process
// loads warms Node's ESM loader (about 1 ms) whether or not it imports fencegate. Each process
// also reports its own in-process time from just before the import to the first verdict
// (performance.now()), a less noisy view of the same cost. ESM (`await import('fencegate')`)
// and CommonJS (`require('fencegate')`) are measured alike, by package name from a scratch
// directory whose node_modules/fencegate links to the package, so the figures include
// resolving the package's "exports" and load exactly the files a user's program loads (on
// Node: dist/node.mjs, node.cjs).
//
// Then the phases, in-process in fresh processes (medians): reading the resource .wasm,
// compiling it (`new WebAssembly.Module`), instantiating it (with stub imports), resolving
// the package name (`import.meta.resolve` / `require.resolve`: Node's "exports" lookup; for
// ESM about 1 ms of it is Node compiling its exports-target check regex on first use, which
// the first package with "exports" a process resolves pays), loading the JS (the import, the
// .wasm compile then being served from V8's in-process cache, so this is the JS modules plus
// instantiation and attach), and the first write.
//
// With --base DIR, a second built copy (e.g. main's pkg, copied before a change) is measured
// in the same run, each of its processes interleaved with the same process of the measured
// copy, and the report adds the median of the paired in-process differences (measured minus
// base): on a machine shared with other jobs, where load moves the wall figures by several ms
// between runs, this is the figure that shows a change below 1 ms.
//
// Run: node bench/coldstart.mjs [--runs N] [--pkg DIR] [--base DIR] [--json]   (after scripts/build.sh;
// --pkg measures another built copy of the package, e.g. build/pkg-ed25519)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, symlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const json = args.includes('--json');
const runsAt = args.indexOf('--runs');
const RUNS = runsAt >= 0 ? Number(args[runsAt + 1]) : 41;
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error('--runs takes a positive integer');

const pkgAt = args.indexOf('--pkg');
const baseAt = args.indexOf('--base');
const copies = { pkg: pkgAt >= 0 ? resolve(args[pkgAt + 1]) : fileURLToPath(new URL('../pkg', import.meta.url)) };
if (baseAt >= 0) copies.base = resolve(args[baseAt + 1]);

const WRITE = `const v = new MemoryGate().write('orders/1', 1, 'v');
if (!v.ok || v.outcome !== 'advance') process.exit(1);`;
const BASE = "const t0 = performance.now(); const v = { ok: true }; if (!v.ok) process.exit(1); console.log(performance.now() - t0);\n";
// Every program prints the in-process milliseconds from before the import to the verdict.
const programs = {
  esmBase: ['base.mjs', BASE],
  esm: ['main.mjs', `const t0 = performance.now();\nconst { MemoryGate } = await import('fencegate');\n${WRITE}\nconsole.log(performance.now() - t0);\n`],
  cjsBase: ['base.cjs', BASE],
  cjs: ['main.cjs', `const t0 = performance.now();\nconst { MemoryGate } = require('fencegate');\n${WRITE}\nconsole.log(performance.now() - t0);\n`],
};

// The phases. The .wasm compile is cached per process by its bytes, so the import after
// the explicit compile pays only the JS side, instantiation and attach.
const phaseScript = (kind, wasmUrl) => `import fs from 'node:fs';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const marks = [performance.now()];
const bytes = fs.readFileSync(new URL(${JSON.stringify(wasmUrl)})); marks.push(performance.now());
const module = new WebAssembly.Module(bytes); marks.push(performance.now());
const stub = () => {};
const imports = {};
for (const { module: m, name } of WebAssembly.Module.imports(module)) (imports[m] ??= {})[name] = stub;
new WebAssembly.Instance(module, imports); marks.push(performance.now());
${kind === 'esm' ? "import.meta.resolve('fencegate')" : "require.resolve('fencegate')"}; marks.push(performance.now());
const { MemoryGate } = ${kind === 'esm' ? "await import('fencegate')" : "require('fencegate')"}; marks.push(performance.now());
${WRITE} marks.push(performance.now());
console.log(JSON.stringify(marks.slice(1).map((t, i) => t - marks[i])));`;
const PHASES = ['read', 'compile', 'instantiate', 'resolve', 'jsLoad', 'firstWrite'];

// One scratch directory per copy: node_modules/fencegate links to it.
const scratch = {};
for (const [copy, dir] of Object.entries(copies)) {
  const d = mkdtempSync(join(tmpdir(), 'fencegate-coldstart-'));
  scratch[copy] = d;
  process.on('exit', () => rmSync(d, { recursive: true, force: true }));
  mkdirSync(join(d, 'node_modules'));
  symlinkSync(dir, join(d, 'node_modules', 'fencegate'), 'dir');
  for (const [file, source] of Object.values(programs)) writeFileSync(join(d, file), source);
  const wasmUrl = pathToFileURL(join(dir, 'dist', 'fencegate_bg.wasm')).href;
  for (const kind of ['esm', 'cjs']) writeFileSync(join(d, `phases-${kind}.mjs`), phaseScript(kind, wasmUrl));
}

function once(copy, file) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [file], { encoding: 'utf8', cwd: scratch[copy] });
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`coldstart: a child process failed (${r.status}): ${r.stderr}`);
  return { wall, out: r.stdout.trim() };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const copyNames = Object.keys(copies);
const samples = {};
for (const copy of copyNames) {
  samples[copy] = Object.fromEntries(Object.keys(programs).map((k) => [k, { wall: [], inside: [] }]));
  for (const [file] of Object.values(programs)) once(copy, file); // warm the file cache
}
for (let i = 0; i < RUNS; i++) {
  // Interleaved, so that load on the machine falls on baseline and measured runs (and copies) alike.
  for (const [name, [file]] of Object.entries(programs)) {
    for (const copy of copyNames) {
      const { wall, out } = once(copy, file);
      samples[copy][name].wall.push(wall);
      samples[copy][name].inside.push(Number(out));
    }
  }
}

const PHASE_RUNS = Math.max(1, Math.ceil(RUNS / 2));
const phaseSamples = Object.fromEntries(copyNames.map((c) => [c, { esm: PHASES.map(() => []), cjs: PHASES.map(() => []) }]));
for (let i = 0; i < PHASE_RUNS; i++) {
  for (const kind of ['esm', 'cjs']) {
    for (const copy of copyNames) {
      const ms = JSON.parse(once(copy, `phases-${kind}.mjs`).out);
      ms.forEach((m, j) => phaseSamples[copy][kind][j].push(m));
    }
  }
}

const round = (x) => Math.round(x * 100) / 100;
const figuresOf = (copy) => {
  const figures = {};
  for (const kind of ['esm', 'cjs']) {
    const base = samples[copy][`${kind}Base`];
    const with_ = samples[copy][kind];
    figures[kind] = {
      nodeMs: round(median(base.wall)),
      withFencegateMs: round(median(with_.wall)),
      coldStartMs: round(median(with_.wall) - median(base.wall)),
      // the median of the per-pair differences (run i with fencegate minus baseline run i):
      // less sensitive to load that drifts during the run than the difference of medians
      coldStartPairedMs: round(median(with_.wall.map((w, i) => w - base.wall[i]))),
      importToVerdictMs: round(median(with_.inside) - median(base.inside)),
      phasesMs: Object.fromEntries(PHASES.map((p, j) => [p, round(median(phaseSamples[copy][kind][j]))])),
    };
  }
  return figures;
};
const figures = figuresOf('pkg');

const report = (label, f) => {
  for (const [kind, k] of Object.entries(f)) {
    console.log(
      `  ${label}${kind}: node alone ${k.nodeMs} ms, with import + first write ${k.withFencegateMs} ms` +
        ` -> +${k.coldStartMs} ms (paired +${k.coldStartPairedMs} ms; in-process import to first verdict ${k.importToVerdictMs} ms)`,
    );
  }
};
const reportPhases = (label, f) => {
  for (const [kind, k] of Object.entries(f)) console.log(`  ${label}${kind}: ${PHASES.map((p) => `${p} ${k.phasesMs[p]}`).join(', ')}`);
};
console.log(`cold start, median of ${RUNS} fresh processes each (Node ${process.version})`);
report('', figures);
let base;
let vsBase;
if (copies.base) {
  base = figuresOf('base');
  report('base ', base);
  // measured minus base, process i against process i (they ran next to each other)
  vsBase = Object.fromEntries(['esm', 'cjs'].map((kind) => {
    const a = samples.pkg[kind].inside;
    const b = samples.base[kind].inside;
    return [kind, round(median(a.map((x, i) => x - b[i])))];
  }));
  console.log(`  in-process import to first verdict, paired against base (measured - base): esm ${vsBase.esm} ms, cjs ${vsBase.cjs} ms`);
}
console.log(`phases, in-process, median of ${PHASE_RUNS} fresh processes (ms; jsLoad = the import after resolve, with the .wasm compile cached):`);
reportPhases('', figures);
if (base) reportPhases('base ', base);
if (json) console.log(JSON.stringify({ bench: 'coldstart', runs: RUNS, node: process.version, ...figures, ...(base ? { base, vsBase } : {}) }));
