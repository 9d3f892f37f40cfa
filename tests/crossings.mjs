// Counts boundary crossings per operation (docs/decisions/typed-exchange.md): every call into a Wasm
// export (the decision entries, the input buffer's sizing and wasm-bindgen's
// malloc/realloc/free and externref helpers alike) and every call from Wasm into a JS import, made by
// one public-API operation. It wraps the instance's exports and imports, so it
// must be installed before the package is imported, in a process of its own. Calls are named
// as the module's exports and imports are: wasm-bindgen's names (`__gateDecide`,
// `rawmemorygate_fence`, `__wbg_…`), which the build leaves as they are.
//
// Run: node tests/crossings.mjs [path/to/pkg] [--json]   (default: ./pkg)
// Imported by tests/js/gate/crossings.test.mjs, which asserts the counts.

const counts = { exports: 0, imports: 0, names: [] };
let recording = false;

/** Wraps every function of `obj` (exports or one import module) with a counter. */
function wrap(obj, kind) {
  const out = {};
  for (const [name, value] of Object.entries(obj)) {
    if (typeof value !== 'function') {
      out[name] = value;
      continue;
    }
    out[name] = function (...args) {
      if (recording) {
        counts[kind]++;
        counts.names.push(name);
      }
      return value.apply(this, args);
    };
  }
  return out;
}

/** Installs the counter: every WebAssembly.Instance made from now on has counted exports and imports. */
export function install() {
  const Original = WebAssembly.Instance;
  WebAssembly.Instance = function Instance(module, imports) {
    const wrappedImports = {};
    for (const [mod, fns] of Object.entries(imports ?? {})) wrappedImports[mod] = wrap(fns, 'imports');
    const instance = new Original(module, wrappedImports);
    return { exports: wrap(instance.exports, 'exports') };
  };
}

/** The crossings made by `f()` (awaited): `{ exports, imports, names }`. */
export async function count(f) {
  counts.exports = 0;
  counts.imports = 0;
  counts.names = [];
  recording = true;
  try {
    await f();
  } finally {
    recording = false;
  }
  return { exports: counts.exports, imports: counts.imports, names: counts.names.slice() };
}

/**
 * The operations measured, against the package at `pkgUrl` (its node.mjs):
 * `[name, { exports, imports, names }]`, each after a warm-up call of the same kind.
 */
export async function measure(pkgUrl) {
  install();
  const fg = await import(new URL('node.mjs', pkgUrl).href);
  const K = new Uint8Array(32).fill(7);
  const signed = (epoch, leaseId = 'lease-1') => fg.mintToken({ scope: 'orders', epoch, leaseId, generation: 1 }, { kid: 'k1', hmac: K });
  const rows = [];
  const run = async (name, f) => {
    await f(); // warm-up: first-use set-up (the shared plain policy, views) is not per operation
    rows.push([name, await count(f)]);
  };
  const store = new fg.MemoryHostStore();
  const gate = new fg.Gate(store);
  await gate.write('warm-up', 1, 'v'); // the first request sizes the exchange buffer once (`__exchangeBuffer`)
  await gate.write('warm-up', 1, 'v');
  let e = 10;
  await run('Gate.write number', () => gate.write('a', ++e, 'v'));
  let b = 2n ** 60n;
  await run('Gate.write bigint', () => gate.write('b', ++b, 'v'));
  await run('Gate.write stale', () => gate.write('a', 1, 'v'));
  let op = 0;
  await run('Gate.write opId', () => gate.write('c', 5, 'v', { opId: `op-${++op}` }));
  await run('Gate.write opId + fingerprint', () => gate.write('c', 5, 'v', { opId: `fp-${++op}`, fingerprint: 'body' }));
  await run('Gate.write holder', () => gate.write('d', 5, 'v', { holder: 'worker-1' }));
  await run('Gate.write holder (non-ASCII)', () => gate.write('d2', 5, 'v', { holder: 'wörker-1' }));
  await run('Gate.establish', () => gate.establish('e', ++e));
  await run('Gate.delete', () => gate.delete('e', e));
  await run('Gate.quarantine', () => gate.quarantine('f', ++e));
  await run('Gate.inspect', () => gate.inspect('a'));
  const sg = new fg.Gate(new fg.MemoryHostStore(), { keys: { k1: K }, scope: 'orders' });
  const tok = signed(5);
  await run('Gate.write signed (HMAC)', () => sg.write('orders', tok, 'v'));
  await run('Gate.write signed + opId', () => sg.write('orders', tok, 'v', { opId: `s-${++op}` }));
  await run('Gate.write number, policy gate', () => sg.write('orders', 5, 'v'));
  const mg = new fg.MemoryGate();
  let m = 0;
  await run('MemoryGate.write number', () => mg.write('a', ++m, 'v'));
  let mb = 2n ** 60n;
  await run('MemoryGate.write bigint', () => mg.write('b', ++mb, 'v'));
  await run('MemoryGate.write opId', () => mg.write('c', 5, 'v', { opId: `m-${++op}` }));
  const ms = new fg.MemoryGate({ keys: { k1: K }, scope: 'orders' });
  await run('MemoryGate.write signed (HMAC)', () => ms.write('orders', tok, 'v'));
  return rows;
}

if (import.meta.url === new URL(process.argv[1], 'file://').href) {
  const arg = process.argv.slice(2).find((a) => !a.startsWith('--'));
  const pkgUrl = new URL(`${arg ?? new URL('../pkg', import.meta.url).pathname}/`, 'file://');
  const rows = await measure(pkgUrl);
  for (const [name, c] of rows) {
    console.log(`${name.padEnd(34)} ${String(c.exports).padStart(3)} into Wasm ${String(c.imports).padStart(3)} out  ${c.names.join(' ')}`);
  }
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(Object.fromEntries(rows.map(([n, c]) => [n, { exports: c.exports, imports: c.imports }]))));
  }
}
