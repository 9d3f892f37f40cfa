// The browser entry in real headless Chromium: the README's browser quick start,
// NOT_INITIALIZED before init(), and the token rules across the real JS engine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from './serve.mjs';
import { launch } from './chromium.mjs';
import { readmeBlocks } from '../doc-blocks.mjs';

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
let server;
let browser;

before(async () => {
  // The README's snippet imports './node_modules/fencegate/browser.mjs'; serve pkg/ there.
  const dir = join(root, 'build', 'browser-test');
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  const html = readmeBlocks('Quick start: browser', 'html')[0];
  writeFileSync(join(dir, 'readme.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,">${html}`);
  writeFileSync(join(dir, 'rules.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module">
import { init, MemoryGate, parseToken, FencegateError } from './node_modules/fencegate/browser.mjs';
const out = [];
try { new MemoryGate(); } catch (e) { out.push(e instanceof FencegateError && e.code); }
await init();
const g = new MemoryGate();
out.push(g.write('k', 2n ** 53n, 'a').outcome, g.write('k', 2n ** 53n + 1n, 'b').outcome, g.write('k', 2 ** 53, 'c').code);
out.push(g.write('k', '9007199254740994', 'd').code, g.write('k', parseToken('9007199254740994'), 'e').outcome);
out.push(String(g.mark('k')), g.value('k'));
window.result = out;
</script>`);
  server = await serve(0, dir);
  const { symlinkSync, existsSync, rmSync } = await import('node:fs');
  const link = join(dir, 'node_modules', 'fencegate');
  if (existsSync(link)) rmSync(link, { recursive: true });
  symlinkSync(join(root, 'pkg'), link, 'dir');
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(path) {
  const page = await browser.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  const logs = [];
  page.on('console', (m) => logs.push(m.text()));
  await page.goto(`${server.url}/${path}`);
  return { page, errors, logs };
}

test("README browser quick start logs 'advance' in Chromium", async () => {
  const { page, errors, logs } = await open('readme.html');
  await page.waitForFunction(() => true);
  for (let i = 0; i < 50 && !logs.includes('advance'); i++) await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(logs, ['advance']);
  assert.deepEqual(errors, []);
  await page.close();
});

test('token rules hold in Chromium (exact above 2^53, no text, NOT_INITIALIZED before init)', async () => {
  const { page, errors } = await open('rules.html');
  const result = await page.waitForFunction(() => window.result).then((h) => h.jsonValue());
  assert.deepEqual(result, ['NOT_INITIALIZED', 'advance', 'advance', 'MALFORMED_TOKEN', 'MALFORMED_TOKEN', 'advance', '9007199254740994', 'e']);
  assert.deepEqual(errors, []);
  await page.close();
});
