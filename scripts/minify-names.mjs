// Short import, export and import-module names for one wasm-bindgen module (issue 14 item 5,
// docs/design.md "Issue 14: size, round 4"): wasm-bindgen names each import
// `__wbg_<name>_<16 hex digits>` in the module `./<out>_bg.js`, and exports keep their Rust
// names; binaryen's `--minify-imports-and-exports-and-modules` renames them all (about 720 B
// gzip on the resource module) and prints the map, from which this rewrites the glue
// (`<out>.js`: its import object and every `wasm.<export>`), so everything that loads the module
// through the glue (Node ESM/CJS bundles, workerd's module import, the browser) is unchanged.
// The memory export keeps its name `memory` (read from the instance's exports outside the glue:
// lib/runtime.mjs, tests). Usage: node scripts/minify-names.mjs DIST OUTNAME [wasm-opt flags...]
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const [dist, name, ...flags] = process.argv.slice(2);
const wasmPath = join(dist, `${name}_bg.wasm`);
const gluePath = join(dist, `${name}.js`);
const tmp = mkdtempSync(join(tmpdir(), 'fencegate-minify-'));
const out = join(tmp, 'out.wasm');
const map = JSON.parse(
  execFileSync('npx', ['--no-install', 'wasm-opt', wasmPath, '--minify-imports-and-exports-and-modules', ...flags, '-o', out], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  }),
);
const fail = (what) => {
  rmSync(tmp, { recursive: true, force: true });
  throw new Error(`minify-names: ${gluePath}: ${what}`);
};
/** An unsigned LEB128 at `at` in `bytes`: [value, next offset]. */
function leb(bytes, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const b = bytes[at++];
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if (b < 0x80) return [value, at];
  }
}
/** `n` as unsigned LEB128 bytes. */
function toLeb(n) {
  const out = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}
/** `wasm` with the export named `from` renamed `to` (the export section rebuilt). */
function renameExport(wasm, from, to) {
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  let at = 8;
  while (at < wasm.length) {
    const id = wasm[at];
    const [size, start] = leb(wasm, at + 1);
    const end = start + size;
    if (id === 7) {
      let [count, p] = leb(wasm, start);
      const body = [...toLeb(count)];
      let renamed = 0;
      while (count--) {
        const [len, q] = leb(wasm, p);
        let name = dec.decode(wasm.subarray(q, q + len));
        const [, r] = leb(wasm, q + len + 1);
        if (name === from) {
          name = to;
          renamed++;
        }
        const bytes = enc.encode(name);
        body.push(...toLeb(bytes.length), ...bytes, ...wasm.subarray(q + len, r));
        p = r;
      }
      if (renamed !== 1) fail(`no single export ${from}`);
      return Buffer.concat([wasm.subarray(0, at), Buffer.from([7, ...toLeb(body.length), ...body]), wasm.subarray(end)]);
    }
    at = end;
  }
  fail('no export section');
}
const escape = (s) => s.replace(/[$.*+?^()[\]{}|\\]/g, '\\$&');
let glue = readFileSync(gluePath, 'utf8');

// The import module: one, named after the glue's `_bg.js`; binaryen names it `a`.
const modules = new Set(map.imports.map(([mod]) => mod));
if (modules.size !== 1) fail(`expected one import module, found ${[...modules].join(', ')}`);
const [moduleName] = modules;
const modulePattern = new RegExp(`"${escape(moduleName)}": import0,`, 'g');
if ((glue.match(modulePattern) ?? []).length !== 1) fail(`no single "${moduleName}": import0 entry`);
// Binaryen renames `memory` too: it gets its name back.
const memoryEntry = map.exports.find(([old]) => old === 'memory');
if (!memoryEntry) fail('no memory export');
const minified = renameExport(readFileSync(out), memoryEntry[1], 'memory');
map.exports = map.exports.filter(([old]) => old !== 'memory');
const imported = new WebAssembly.Module(minified);
const newModules = new Set(WebAssembly.Module.imports(imported).map((i) => i.module));
if (newModules.size !== 1) fail('the minified module has more than one import module');
const [newModule] = newModules;
glue = glue.replace(modulePattern, `${JSON.stringify(newModule)}: import0,`);

// Imports: each a key of the import object, `        <name>: function(`.
for (const [, old, renamed] of map.imports) {
  const key = new RegExp(`(\\n\\s+)${escape(old)}(: function\\()`, 'g');
  if ((glue.match(key) ?? []).length !== 1) fail(`import ${old} is not one key of the import object`);
  glue = glue.replace(key, `$1${renamed}$2`);
}
// Exports: every `wasm.<name>` (not followed by another name character).
for (const [old, renamed] of map.exports) {
  glue = glue.replace(new RegExp(`\\bwasm\\.${escape(old)}(?![\\w$])`, 'g'), `wasm.${renamed}`);
}
// What the glue still names must be an export of the minified module.
const exportNames = new Set(WebAssembly.Module.exports(imported).map((e) => e.name));
for (const [, used] of glue.matchAll(/\bwasm\.([\w$]+)/g)) {
  if (!exportNames.has(used)) fail(`wasm.${used} is no export of the minified module`);
}
writeFileSync(gluePath, glue);
writeFileSync(wasmPath, minified);
// The map, short name → original, for tools that name calls (tests/crossings.mjs); not in the
// package's "files", so it does not ship.
const original = {
  imports: Object.fromEntries(map.imports.map(([, old, renamed]) => [renamed, old])),
  exports: Object.fromEntries(map.exports.map(([old, renamed]) => [renamed, old])),
};
writeFileSync(join(dist, `${name}_bg.names.json`), `${JSON.stringify(original, null, 1)}\n`);
rmSync(tmp, { recursive: true, force: true });
