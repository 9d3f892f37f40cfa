// fencegate/r2 in real workerd (Miniflare's R2 bucket binding), from a Worker:
// the store conformance suite (cache on and off) runs inside the Worker
// (tests/workerd/r2-worker.mjs) against R2Store; a variant whose binding drops
// `onlyIf` is caught; byte values, a plain put over a fenced object, a fenced
// delete's tombstone and refused input give exact answers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorker, miniflare, root } from '../workerd.mjs';
import { CASES, CAS_CASES, RACE_CASES, CACHE_CASES } from './cases.mjs';

let runner;
let mf;

before(async () => {
  runner = await bundleWorker(join(root, 'tests/workerd/r2-worker.mjs'), 'r2-conformance');
  mf = await miniflare(runner, { r2Buckets: ['BUCKET'], compatibilityFlags: ['nodejs_compat'] });
});

after(async () => {
  await mf?.dispose();
  if (runner) rmSync(runner.dir, { recursive: true, force: true });
});

const run = async (body) => (await mf.dispatchFetch('http://localhost/', { method: 'POST', body: JSON.stringify(body) })).json();
const NAMES = Object.keys({ ...CASES, ...RACE_CASES, ...CAS_CASES, ...CACHE_CASES });

for (const [mode, cache] of [['cache on', null], ['cache off', 0]]) {
  test(`R2: the whole conformance suite passes inside workerd (${mode})`, async () => {
    const results = await run({ variant: 'real', cache });
    assert.deepEqual(results.filter((r) => !r.ok), []);
    assert.deepEqual(results.map((r) => r.name), NAMES);
  });
}

test('R2: a binding that drops onlyIf (an unconditional put) fails the interleaving cases', async () => {
  const only = [
    'mark 5, writers 6 and 7 load 5, 7 commits first: 6 is rejected after reloading',
    'mark 7, a 7-writer loaded, 9 advanced: the 7-writer stores nothing, later 8 is rejected',
  ];
  const results = await run({ variant: 'lying', cache: 0, only });
  assert.deepEqual(results.map((r) => [r.name, r.ok, r.assertion]), only.map((n) => [n, false, true]));
});

test('R2: byte values, readAs text, refused values and keys, a plain put over a fenced object, the tombstone, metadata limit', async () => {
  const out = await run({ variant: 'bytes' });
  assert.deepEqual(out, {
    write: { key: 'doc.json', ok: true, outcome: 'advance', code: null, token: 3, markBefore: 0, markAfter: 3 },
    read: { mark: 3, value: [123, 34, 110, 34, 58, 49, 125], isBytes: true },
    binary: 'accept',
    binaryRead: [0, 255, 10],
    buffer: 'advance',
    textRead: 'four',
    stale: 'STALE_TOKEN',
    refused: [
      ['object', 'INVALID_ARGUMENT', 'NOT_BYTES'],
      ['lone surrogate', 'INVALID_ARGUMENT', 'NOT_UTF8'],
      ['stream', 'INVALID_ARGUMENT', 'NOT_BYTES'],
      ['number', 'INVALID_ARGUMENT', 'NOT_BYTES'],
    ],
    badKeys: [
      ['a/../b', 'INVALID_ARGUMENT', 'KEY_DOT_SEGMENT', true],
      ['..', 'INVALID_ARGUMENT', 'KEY_DOT_SEGMENT', true],
      ['a/./b', 'INVALID_ARGUMENT', 'KEY_DOT_SEGMENT', true],
      ['x\u0001y', 'INVALID_ARGUMENT', 'KEY_CONTROL_CHARACTER', true],
    ],
    tampered: ['CORRUPT_STATE', 'plain bytes'],
    delete: 'accept',
    tombstone: ['{"v":1,"mark":"5"}', null],
    afterDelete: ['STALE_TOKEN', '{"mark":5,"hasValue":false}'],
    metadata: ['INVALID_ARGUMENT', 'METADATA_TOO_LARGE', 'advance', 2045],
  });
});

/** docs/http.md's R2 Worker as printed, in workerd: every `// $ curl …` line sent, its answer line checked. */
test('docs/http.md example: r2-objects, the Worker as printed, with the curl answers it shows', async () => {
  const { docBlock } = await import('../../doc-blocks.mjs');
  const code = docBlock('docs/http.md', 'example: r2-objects');
  const worker = await bundleWorker({ source: code }, 'doc-r2');
  const m = await miniflare(worker, { r2Buckets: ['OBJECTS'] });
  try {
    const lines = code.split('\n');
    let n = 0;
    for (const [i, line] of lines.entries()) {
      const c = line.match(/^\/\/ \$ curl (.*)$/);
      if (!c) continue;
      const words = c[1].match(/'[^']*'|\S+/g).map((w) => w.replace(/^'|'$/g, ''));
      let method = 'GET';
      const headers = {};
      let body;
      let url;
      for (let j = 0; j < words.length; j++) {
        if (words[j] === '-X') method = words[++j];
        else if (words[j] === '-H') {
          const [h, v] = words[++j].split(/:\s*/);
          headers[h] = v;
        } else if (words[j] === '-d') body = words[++j];
        else url = words[j];
      }
      const r = await m.dispatchFetch(url, { method, headers, body });
      const mark = r.headers.get('fencing-mark');
      assert.equal(`// ${r.status}${mark === null ? '' : ` Fencing-Mark: ${mark}`} ${await r.text()}`.trimEnd(), lines[i + 1], line);
      n++;
    }
    assert.equal(n, 6);
  } finally {
    await m.dispose();
    rmSync(worker.dir, { recursive: true, force: true });
  }
});
