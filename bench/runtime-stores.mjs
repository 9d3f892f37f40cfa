// fenced vs raw writes/s for the runtime adapters, each in its own runtime, one
// run: fencegate/durable-object in workerd (Miniflare, SQLite-backed object,
// measured inside the object), fencegate/indexeddb in headless Chromium,
// fencegate/deno-kv in Deno on a local KV file. Sequential writes to one key.
//   node bench/runtime-stores.mjs [--n 2000]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { bundleWorker, miniflare, root } from '../tests/js/workerd.mjs';
import { serve } from '../tests/browser/serve.mjs';
import { launch } from '../tests/browser/chromium.mjs';

const { values: o } = parseArgs({ options: { n: { type: 'string', default: '2000' } } });
const n = Number(o.n);

function report(name, rows) {
  console.log(`\n${name}`);
  for (const r of rows) console.log(`  ${r.label.padEnd(34)} ${String(r.perSecond).padStart(7)} writes/s  ${String(r.usPerOp).padStart(7)} µs  ×${(r.perSecond / rows[1].perSecond).toFixed(3)} of raw`);
}

{
  const b = await bundleWorker(join(root, 'bench/runtime/worker.mjs'), 'bench-do');
  const mf = await miniflare(b, { durableObjects: { BENCH: { className: 'Bench', useSQLite: true } } });
  try {
    report('Durable Object storage (workerd, SQLite-backed)', await (await mf.dispatchFetch(`http://localhost/?n=${n}`)).json());
  } finally {
    await mf.dispose();
    rmSync(b.dir, { recursive: true, force: true });
  }
}
{
  const server = await serve(0);
  const browser = await launch();
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}/tests/browser/blank.html`);
    const rows = await page.evaluate(async (n) => {
      const fg = await import('/pkg/browser.mjs');
      const { IndexedDbStore, openFenceDatabase } = await import('/pkg/adapters/indexeddb.mjs');
      const { pair } = await import('/bench/runtime/kernel.mjs');
      await fg.init();
      const db = await openFenceDatabase(`bench-${Math.random()}`);
      const rawWrite = (i, v) => new Promise((resolve, reject) => {
        const tx = db.transaction('fence', 'readwrite');
        tx.objectStore('fence').put({ state: '', value: JSON.stringify(v) }, 'raw');
        tx.oncomplete = resolve;
        tx.onabort = () => reject(tx.error);
      });
      return pair(new fg.Gate(new IndexedDbStore(db)), rawWrite, n);
    }, n);
    report('IndexedDB (headless Chromium)', rows);
  } finally {
    await browser.close();
    await server.close();
  }
}
{
  const dir = mkdtempSync(join(tmpdir(), 'fencegate-bench-kv-'));
  try {
    const out = execFileSync(join(root, 'node_modules/.bin/deno'), ['run', '--quiet', '--unstable-kv', '-A', 'bench/runtime/deno-kv.mjs', dir, String(n)], { cwd: root, encoding: 'utf8' });
    report('Deno KV (Deno, local file)', JSON.parse(out.trim().split('\n').at(-1)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
