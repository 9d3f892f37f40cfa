// The www/ demo in real headless Chromium: both guided scenarios played by
// clicking, with the exact verdicts, marks and values shown after every step;
// persistence across a reload (IndexedDB), reset, phone width, keyboard labels,
// no console errors; screenshots under build/screenshots/; and the page's
// load metrics (navigation → first verdict, bytes transferred) as
// `www-metrics:` lines.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { serve } from './serve.mjs';
import { launch } from './chromium.mjs';
import { SCENARIOS } from '../../www/scenarios.mjs';

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const shots = join(root, 'build', 'screenshots');
let server;
let browser;
let context;
let page;
const errors = [];
const warnings = [];

before(async () => {
  mkdirSync(shots, { recursive: true });
  server = await serve(0);
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
  page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
    if (m.type() === 'warning') warnings.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()}`));
  page.on('response', (r) => {
    if (r.status() >= 400) errors.push(`HTTP ${r.status()}: ${r.url()}`);
  });
});

after(async () => {
  await browser?.close();
  await server?.close();
});

const idle = () => page.waitForFunction(() => document.body.dataset.ready === 'true' && !document.body.dataset.busy);
const logLines = () => page.$$eval('#log li', (lis) => lis.map((li) => li.textContent));
const text = (sel) => page.textContent(sel);
const resource = async (key) => ({
  mark: await text(`[data-resource="${key}"] .mark`),
  value: await text(`[data-resource="${key}"] .value`),
});

async function clickButton(name) {
  await page.getByRole('button', { name, exact: true }).click();
  await idle();
}

test('first load: navigation → first verdict, bytes transferred (HTML + JS + CSS + .wasm)', async () => {
  const bodies = [];
  const onResponse = async (r) => {
    try {
      bodies.push({ url: r.url(), bytes: (await r.body()).length, gzip: gzipSync(await r.body(), { level: 9 }).length });
    } catch {
      // redirects and the like have no body
    }
  };
  page.on('response', onResponse);
  await page.goto(`${server.url}/www/`);
  await idle();
  await clickButton('Acquire client A');
  await clickButton('Write client A');
  assert.deepEqual(await logLines(), [
    '0 s · A acquires the lease: epoch 1, until 10 s',
    '1 s · A writes "hello" to orders/42 with token 1 → advance: mark 0 → 1',
  ]);
  const times = await page.evaluate(() => ({
    ready: performance.getEntriesByName('fencegate:ready')[0].startTime,
    verdict: performance.getEntriesByName('fencegate:first-verdict')[0].startTime,
  }));
  page.off('response', onResponse);
  const kind = (url) => {
    const ext = new URL(url).pathname.split('.').pop();
    return { html: 'html', mjs: 'js', js: 'js', css: 'css', wasm: 'wasm' }[ext] ?? (url.endsWith('/') ? 'html' : 'other');
  };
  const sum = {};
  for (const b of bodies) {
    const k = kind(b.url);
    sum[k] ??= { files: 0, bytes: 0, gzip: 0 };
    sum[k].files++;
    sum[k].bytes += b.bytes;
    sum[k].gzip += b.gzip;
  }
  // Each preloaded .wasm (the resource side, and the issuer side the demo's Issuer
  // uses) is fetched once: the preload is used, not a second download.
  assert.deepEqual(bodies.filter((b) => b.url.endsWith('.wasm')).map((b) => new URL(b.url).pathname.split('/').pop()).sort(), ['fencegate_bg.wasm', 'fencegate_issuer_bg.wasm']);
  assert.deepEqual(warnings.filter((w) => /preload/i.test(w)), []);
  // Every module the page loads is modulepreloaded (no import waterfall), and every preload is used.
  const preloads = await page.$$eval('link[rel=modulepreload]', (ls) => ls.map((l) => l.href));
  const modules = bodies.map((b) => b.url).filter((u) => /\.m?js$/.test(u) && !u.endsWith('/www/app.mjs'));
  assert.deepEqual([...modules].sort(), [...preloads].sort());
  const total = bodies.reduce((a, b) => a + b.bytes, 0);
  const totalGz = bodies.reduce((a, b) => a + b.gzip, 0);
  console.log(`www-metrics: navigation→ready ${times.ready.toFixed(0)} ms (Wasm instantiated, IndexedDB opened, state restored)`);
  console.log(`www-metrics: navigation→first verdict ${times.verdict.toFixed(0)} ms (includes two scripted clicks: Acquire A, Write A)`);
  for (const [k, v] of Object.entries(sum)) {
    console.log(`www-metrics: ${k}: ${v.files} file(s), ${v.bytes} bytes (${v.gzip} gzip -9)`);
  }
  console.log(`www-metrics: total ${bodies.length} files, ${total} bytes transferred uncompressed (${totalGz} if served gzip -9)`);
});

test('load times over 5 more fresh loads (new browser context each: empty cache, empty IndexedDB): medians under 5 s to ready, 1 s per decision', async () => {
  const ready = [];
  const verdict = [];
  const decide = [];
  for (let i = 0; i < 5; i++) {
    const ctx = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    const p = await ctx.newPage();
    p.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    p.on('pageerror', (e) => errors.push(String(e)));
    await p.goto(`${server.url}/www/`);
    await p.waitForFunction(() => document.body.dataset.ready === 'true');
    await p.getByRole('button', { name: 'Acquire client A', exact: true }).click();
    await p.getByRole('button', { name: 'Write client A', exact: true }).click();
    await p.waitForFunction(() => performance.getEntriesByName('fencegate:first-verdict').length === 1);
    const t = await p.evaluate(() => [
      performance.getEntriesByName('fencegate:ready')[0].startTime,
      performance.getEntriesByName('fencegate:first-verdict')[0].startTime,
      performance.getEntriesByName('fencegate:click')[1].startTime, // the Write click
    ]);
    ready.push(t[0]);
    verdict.push(t[1]);
    decide.push(t[1] - t[2]);
    await ctx.close();
  }
  const stats = (xs) => {
    const v = [...xs].sort((a, b) => a - b);
    return `min ${v[0].toFixed(0)} / median ${v[2].toFixed(0)} / max ${v[4].toFixed(0)} ms`;
  };
  console.log(`www-metrics: 5 fresh loads, navigation→ready ${stats(ready)}`);
  console.log(`www-metrics: 5 fresh loads, navigation→first verdict ${stats(verdict)} (two scripted clicks included)`);
  console.log(`www-metrics: 5 fresh loads, Write click→verdict (IndexedDB transaction + Wasm decision) ${stats(decide)}`);
  // Bounds far above what a loaded 2-core CI machine measures (hundreds of ms
  // to ready, tens of ms per click), so only a real regression fails them: a
  // page that needs seconds to become usable, or a decision that blocks.
  const median = (xs) => [...xs].sort((a, b) => a - b)[2];
  assert.ok(median(ready) < 5000, `navigation→ready median ${median(ready).toFixed(0)} ms ≥ 5000 ms`);
  assert.ok(median(decide) < 1000, `Write click→verdict median ${median(decide).toFixed(0)} ms ≥ 1000 ms`);
});

const PLAY = {
  seed: "the seed's quick verification",
  paused: 'the paused leader',
  restore: 'the issuer restored from an old backup',
  signed: 'forged tokens against signed tokens',
};

async function play(id, expected) {
  const def = SCENARIOS[id];
  assert.equal(def.steps.length, expected.length);
  await clickButton(`Play: ${PLAY[id]}`);
  assert.equal(await text('#narration'), `${def.title}: ${def.steps.length} steps. Press “Next step” to play each one.`);
  assert.deepEqual(await logLines(), []);
  assert.deepEqual(await resource('orders/42'), { mark: '0', value: '(none)' });
  for (let i = 0; i < expected.length; i++) {
    const before = (await logLines()).length;
    await clickButton(`Next step (${i + 1} of ${def.steps.length})`);
    const [lines, mark, value, extra] = expected[i];
    assert.equal(await text('#narration'), `Step ${i + 1} of ${def.steps.length}: ${def.steps[i].say}`);
    assert.deepEqual((await logLines()).slice(before), lines, `step ${i + 1} log`);
    assert.deepEqual(await resource('orders/42'), { mark, value }, `step ${i + 1} orders/42`);
    for (const [sel, want] of Object.entries(extra ?? {})) assert.equal(await text(sel), want, `step ${i + 1} ${sel}`);
  }
  assert.equal(await text('#next'), 'Scenario finished');
  assert.equal(await page.isDisabled('#next'), true);
}

const A = '[data-client="A"] .status';
const B = '[data-client="B"] .status';

test("guided: the seed's quick verification, step by step", async () => {
  await play('seed', [
    [['0 s · A acquires the lease: epoch 1, until 10 s'], '0', '(none)', { [A]: 'running · holds epoch 1 (lease until 10 s)' }],
    [['1 s · time passes: 10 s (clock 1 s → 11 s)', "10 s · A's lease (epoch 1) runs out"], '0', '(none)',
      { [A]: 'running · believes it holds epoch 1 (its lease ran out at 10 s)' }],
    [['11 s · B acquires the lease: epoch 2, until 21 s'], '0', '(none)'],
    [['12 s · A writes "arrived-before-new-epoch" to orders/42 with token 1 → advance: mark 0 → 1'], '1', '"arrived-before-new-epoch"'],
    [['13 s · B writes "from-new-leader" to orders/42 with token 2 → advance: mark 1 → 2'], '2', '"from-new-leader"'],
    [['14 s · A writes "must-not-land" to orders/42 with token 1 → reject STALE_TOKEN: mark stays 2, value unchanged'], '2', '"from-new-leader"'],
    [['15 s · B writes "second-write-in-same-epoch" to orders/42 with token 2 → accept: mark stays 2'], '2', '"second-write-in-same-epoch"'],
    [['16 s · a forged request writes "must-not-land" to orders/42 with no token → reject MISSING_TOKEN: mark stays 2, value unchanged'],
      '2', '"second-write-in-same-epoch"'],
    [['17 s · a forged request writes "must-not-land" to orders/42 with the text "2" → reject MALFORMED_TOKEN: mark stays 2, value unchanged'],
      '2', '"second-write-in-same-epoch"'],
    [['18 s · a forged request writes "must-not-land" to orders/42 with the boolean true → reject MALFORMED_TOKEN: mark stays 2, value unchanged'],
      '2', '"second-write-in-same-epoch"'],
    [['19 s · time passes: 10 s (clock 19 s → 29 s)', "21 s · B's lease (epoch 2) runs out"], '2', '"second-write-in-same-epoch"'],
    [['29 s · C acquires the lease: epoch 3, until 39 s'], '2', '"second-write-in-same-epoch"'],
    [['30 s · C writes "newest" to orders/42 with token 3 → advance: mark 2 → 3'], '3', '"newest"'],
    [['31 s · B writes "must-not-land" to orders/42 with token 2 → reject STALE_TOKEN: mark stays 3, value unchanged'], '3', '"newest"',
      { '#clock': '32 s', '[data-resource="invoices/9"] .mark': '0' }],
  ]);
  // The picture: 4 writes landed (green), 5 bounced (red), 3 lease bars.
  assert.equal(await page.locator('#timeline line.op.ok').count(), 4);
  assert.equal(await page.locator('#timeline line.op.reject').count(), 5);
  assert.equal(await page.locator('#timeline rect.lease').count(), 3);
  await page.screenshot({ path: join(shots, 'www-seed.png'), fullPage: true });
});

test('guided: the issuer restored from an old backup (only when the package has Issuer.raise)', async (t) => {
  const button = page.getByRole('button', { name: `Play: ${PLAY.restore}`, exact: true });
  const recovery = await page.evaluate(async () => typeof (await import('/pkg/browser.mjs')).Issuer?.prototype.raise === 'function');
  if (!recovery) {
    // Not built yet: the scenario and the recovery controls are hidden, not faked.
    assert.equal(await button.count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Back up the issuer' }).count(), 0);
    t.skip('this build of fencegate has no Issuer.raise');
    return;
  }
  const issuer = '#issuer-state';
  await play('restore', [
    [['0 s · A acquires the lease: epoch 1, until 10 s'], '0', '(none)'],
    [['1 s · the operator backs up the issuer: last epoch issued 1'], '0', '(none)'],
    [['2 s · A writes "A: v1" to orders/42 with token 1 → advance: mark 0 → 1'], '1', '"A: v1"'],
    [['3 s · time passes: 10 s (clock 3 s → 13 s)', "10 s · A's lease (epoch 1) runs out"], '1', '"A: v1"'],
    [['13 s · B acquires the lease: epoch 2, until 23 s'], '1', '"A: v1"'],
    [['14 s · B establishes epoch 2 on orders/42 → advance: mark 1 → 2'], '2', '"A: v1"'],
    [['15 s · B writes "B: v2" to orders/42 with token 2 → accept: mark stays 2'], '2', '"B: v2"'],
    [['16 s · time passes: 10 s (clock 16 s → 26 s)', "23 s · B's lease (epoch 2) runs out"], '2', '"B: v2"',
      { [issuer]: 'last epoch issued 2; lease ran out: B, until 23 s' }],
    [['26 s · the issuer is restored from the backup taken at 1 s: last epoch issued 1, but orders/42 has accepted 2'], '2', '"B: v2"',
      { [issuer]: 'last epoch issued 1; lease ran out: A, until 10 s. Behind: orders/42 has accepted 2, more than this issuer has issued (restored from an older copy, or a forged token); repair it before the next acquisition.' }],
    [['27 s · the issuer is raised to at least 2, the highest mark its resources accepted: epoch 1 → 2'], '2', '"B: v2"'],
    [['28 s · C acquires the lease: epoch 3, until 38 s'], '2', '"B: v2"', { [issuer]: 'last epoch issued 3; lease held: C, until 38 s' }],
    [['29 s · C writes "C: v3" to orders/42 with token 3 → advance: mark 2 → 3'], '3', '"C: v3"'],
  ]);
  await page.screenshot({ path: join(shots, 'www-restore.png'), fullPage: true });
});

test('guided: forged tokens against signed tokens (only when the package has mintToken)', async (t) => {
  const signed = await page.evaluate(async () => typeof (await import('/pkg/browser.mjs')).mintToken === 'function');
  if (!signed) {
    assert.equal(await page.getByRole('button', { name: `Play: ${PLAY.signed}`, exact: true }).count(), 0);
    assert.equal(await page.getByLabel('Resources require signed tokens').count(), 0);
    t.skip('this build of fencegate has no signed tokens');
    return;
  }
  const forged = (at, what, code) =>
    `${at} s · a forged request writes "must-not-land" to orders/42 with ${what} → reject ${code}: mark stays 1, value unchanged`;
  await play('signed', [
    [['0 s · resources now require tokens signed by the issuer (requireSigned): plain numbers are refused'], '0', '(none)'],
    [['0 s · A acquires the lease: epoch 1, until 10 s'], '0', '(none)'],
    [['1 s · A writes "A: v1" to orders/42 with a signed token for epoch 1 → advance: mark 0 → 1'], '1', '"A: v1"'],
    [[forged(2, '18446744073709551615 (2^64−1)', 'UNSIGNED_TOKEN')], '1', '"A: v1"'],
    [[forged(3, 'a token for epoch 2^63 signed with a guessed key', 'BAD_SIGNATURE')], '1', '"A: v1"'],
    [[forged(4, "A's signed token for invoices/9 (epoch 1), replayed", 'WRONG_SCOPE')], '1', '"A: v1"'],
    [['5 s · A writes "A: v2" to orders/42 with a signed token for epoch 1 → accept: mark stays 1'], '1', '"A: v2"',
      { '[data-resource="invoices/9"] .mark': '0' }],
  ]);
  assert.equal(await page.isChecked('#require-signed'), true);
  await page.screenshot({ path: join(shots, 'www-signed.png'), fullPage: true });
  // Turned off by keyboard: plain numbers are taken again.
  await page.focus('#require-signed');
  await page.keyboard.press('Space');
  await idle();
  assert.equal(await page.isChecked('#require-signed'), false);
  assert.equal((await logLines()).at(-1), '6 s · resources take plain numbers again (signed tokens still verify)');
  await clickButton('Write client A');
  assert.equal((await logLines()).at(-1), '6 s · A writes "hello" to orders/42 with token 1 → accept: mark stays 1');
});

test('guided: the paused leader, step by step', async () => {
  await play('paused', [
    [['0 s · A acquires the lease: epoch 1, until 10 s'], '0', '(none)'],
    [['1 s · A writes "A: draft 1" to orders/42 with token 1 → advance: mark 0 → 1'], '1', '"A: draft 1"'],
    [['2 s · A sends "A: draft 2" to orders/42 with token 1; the network holds it until 17 s'], '1', '"A: draft 1"'],
    [['3 s · A pauses (it keeps believing it holds epoch 1)'], '1', '"A: draft 1"', { [A]: 'paused · holds epoch 1 (lease until 10 s)' }],
    [['3 s · time passes: 10 s (clock 3 s → 13 s)', "10 s · A's lease (epoch 1) runs out"], '1', '"A: draft 1"',
      { [A]: 'paused · believes it holds epoch 1 (its lease ran out at 10 s)' }],
    [['13 s · B acquires the lease: epoch 2, until 23 s'], '1', '"A: draft 1"', { [B]: 'running · holds epoch 2 (lease until 23 s)' }],
    [['14 s · B establishes epoch 2 on orders/42 → advance: mark 1 → 2'], '2', '"A: draft 1"'],
    [['15 s · time passes: 3 s (clock 15 s → 18 s)',
      '17 s · A writes "A: draft 2" to orders/42 with token 1 (sent at 2 s, delayed in flight) → reject STALE_TOKEN: mark stays 2, value unchanged'],
      '2', '"A: draft 1"'],
    [['18 s · B writes "B: final" to orders/42 with token 2 → accept: mark stays 2'], '2', '"B: final"'],
    [['19 s · A resumes; it still believes it holds epoch 1'], '2', '"B: final"',
      { [A]: 'running · believes it holds epoch 1 (its lease ran out at 10 s)' }],
    [['19 s · A writes "A: zombie write" to orders/42 with token 1 → reject STALE_TOKEN: mark stays 2, value unchanged'], '2', '"B: final"'],
    [['20 s · A cannot acquire: LEASE_HELD by B (epoch 2) until 23 s'], '2', '"B: final"'],
  ]);
  assert.equal(await page.locator('#timeline line.op.ok').count(), 3); // A's first write, B's establish, B's write
  assert.equal(await page.locator('#timeline line.op.reject').count(), 2); // the delayed write, the zombie write
  assert.equal(await page.locator('#timeline rect.pause').count(), 1);
  await page.screenshot({ path: join(shots, 'www-paused-leader.png'), fullPage: true });
});

test('reload keeps marks, values, the clock and the log (IndexedDB); the stored mark still fences', async () => {
  const log = await logLines();
  await page.reload();
  await idle();
  assert.deepEqual(await resource('orders/42'), { mark: '2', value: '"B: final"' });
  assert.deepEqual(await logLines(), log);
  assert.equal(await text('#clock'), '21 s');
  assert.equal(await text('#narration'), `Step 12 of 12: ${SCENARIOS.paused.steps[11].say}`);
  assert.match(await text('#issuer-state'), /^last epoch issued 2; lease held: B, until 23 s$/);
  // Manual controls after the reload: A (epoch 1) is still fenced by the stored mark;
  // once B's lease runs out, A acquires epoch 3 and writes with a 5 s network delay.
  await clickButton('Write client A');
  assert.equal((await logLines()).at(-1), '21 s · A writes "hello" to orders/42 with token 1 → reject STALE_TOKEN: mark stays 2, value unchanged');
  await clickButton('+1 s');
  await clickButton('Acquire client A');
  assert.equal((await logLines()).at(-1), '23 s · A acquires the lease: epoch 3, until 33 s');
  await page.selectOption('#op-delay', '5000');
  await page.fill('#op-value', 'A again');
  await clickButton('Write client A');
  assert.equal((await logLines()).at(-1), '24 s · A sends "A again" to orders/42 with token 3; the network holds it until 29 s');
  assert.equal(await page.locator('#timeline line.op.pending').count(), 1);
  await clickButton('+5 s');
  assert.deepEqual((await logLines()).slice(-2), [
    '25 s · time passes: 5 s (clock 25 s → 30 s)',
    '29 s · A writes "A again" to orders/42 with token 3 (sent at 24 s, delayed in flight) → advance: mark 2 → 3',
  ]);
  assert.deepEqual(await resource('orders/42'), { mark: '3', value: '"A again"' });
  // A forged huge number is a valid epoch: without signed tokens it wins (R9).
  await page.selectOption('#forge-kind', 'huge');
  await page.selectOption('#op-resource', 'invoices/9');
  await page.fill('#op-value', 'forged');
  await clickButton('Send forged write');
  assert.equal(
    (await logLines()).at(-1),
    '30 s · a forged request writes "forged" to invoices/9 with 18446744073709551615 (2^64−1) → advance: mark 0 → 18446744073709551615',
  );
  assert.deepEqual(await resource('invoices/9'), { mark: '18446744073709551615', value: '"forged"' });
  for (const [kind, at, label] of [['zero', 31, '0'], ['fraction', 32, '1.5'], ['unsafe', 33, '2^53 (not a safe integer)']]) {
    await page.selectOption('#forge-kind', kind);
    const n = (await logLines()).length;
    await clickButton('Send forged write');
    assert.equal(
      (await logLines())[n],
      `${at} s · a forged request writes "forged" to invoices/9 with ${label} → reject MALFORMED_TOKEN: mark stays 18446744073709551615, value unchanged`,
    );
  }
  // C has no lease: its establish carries no token.
  await clickButton('Establish client C');
  assert.equal(
    (await logLines()).at(-1),
    '34 s · C establishes with no token on invoices/9 → reject MISSING_TOKEN: mark stays 18446744073709551615, value unchanged',
  );
  await page.reload();
  await idle();
  assert.deepEqual(await resource('invoices/9'), { mark: '18446744073709551615', value: '"forged"' });
  assert.deepEqual(await resource('orders/42'), { mark: '3', value: '"A again"' });
});

test('reset clears marks, values, leases and the log, also after a reload', async () => {
  await clickButton('Reset: clear stored marks, values and leases');
  const empty = async () => {
    assert.deepEqual(await resource('orders/42'), { mark: '0', value: '(none)' });
    assert.deepEqual(await resource('invoices/9'), { mark: '0', value: '(none)' });
    assert.deepEqual(await logLines(), []);
    assert.equal(await text('#clock'), '0 s');
    assert.equal(await text('#issuer-state'), 'last epoch issued 0; no lease');
    assert.equal(await text(A), 'running · holds no lease');
  };
  await empty();
  await page.reload();
  await idle();
  await empty();
});

test('accessible: every control is labelled and keyboard-operable; readable at 375 px', async () => {
  const unlabelled = await page.$$eval('button, select, input', (els) =>
    els.filter((el) => !el.hidden && !(el.getAttribute('aria-label') || el.labels?.length || el.textContent.trim())).map((el) => el.outerHTML),
  );
  assert.deepEqual(unlabelled, []);
  // Keyboard: focus the seed scenario button, press Enter, then Enter on "Next step" (focused by the page).
  await page.focus('button[data-scenario="seed"]');
  await page.keyboard.press('Enter');
  await idle();
  assert.equal(await page.evaluate(() => document.activeElement.id), 'next');
  await page.keyboard.press('Enter');
  await idle();
  assert.equal(await text('#narration'), `Step 1 of 14: ${SCENARIOS.seed.steps[0].say}`);
  await page.keyboard.press('Enter');
  await idle();
  assert.equal(await text('#narration'), `Step 2 of 14: ${SCENARIOS.seed.steps[1].say}`);
  // Phone width: the page itself does not scroll sideways (the timeline scrolls in its own box).
  await page.setViewportSize({ width: 375, height: 800 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.equal(overflow, 0);
  await page.screenshot({ path: join(shots, 'www-375px.png'), fullPage: true });
  await page.setViewportSize({ width: 1000, height: 900 });
});

test('no console errors, failed requests or HTTP errors during the whole run', () => {
  assert.deepEqual(errors, []);
});
