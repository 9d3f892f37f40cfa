// Runs the store conformance suite (tests/js/stores/cases.mjs) inside workerd
// against fencegate/r2 on an R2 bucket binding (Miniflare's R2), from a
// Worker. Bundled and started by tests/js/stores/r2.test.mjs.
// POST {"variant":"real"|"lying","cache":0|null,"only":[names]?} → [{ name, ok, … }];
// POST {"variant":"bytes"} → the byte-value checks (the store's default mode).
import { R2Store, decodeObjectBody, encodeObjectBody } from 'fencegate/r2';
import { Gate, valueCodec } from 'fencegate';
import { CASES, CAS_CASES, RACE_CASES, CACHE_CASES, setStateCache } from '../js/stores/cases.mjs';

const text = (b) => new TextDecoder('utf-8', { fatal: true }).decode(b);

/** The binding with `onlyIf` dropped from every put: the bug the suite must catch. */
function lying(bucket) {
  return {
    get: (k, o) => bucket.get(k, o),
    head: (k) => bucket.head(k),
    put: (k, v, { onlyIf, ...o } = {}) => bucket.put(k, v, o),
  };
}

let n = 0;

function target(bucket, variant) {
  return {
    shape: 'cas',
    open: async () => {
      const prefix = `case-${n++}/`;
      const make = () => new R2Store(variant === 'lying' ? lying(bucket) : bucket, { prefix, ...valueCodec });
      const store = make();
      return {
        store,
        reopen: async () => make(),
        raw: async (key) => {
          let k;
          try {
            k = store.objectKey(key);
          } catch {
            return null;
          }
          const obj = await bucket.get(k);
          if (obj === null) return null;
          const body = decodeObjectBody(new Uint8Array(await obj.arrayBuffer()));
          if (body === null) return { state: undefined, value: undefined };
          return { state: body.state, value: body.value === null ? null : text(body.value) };
        },
        putRaw: async (key, state, value) => {
          await bucket.put(store.objectKey(key), encodeObjectBody(state, value === null || value === undefined ? null : new TextEncoder().encode(value)));
        },
        close: async () => {},
      };
    },
  };
}

async function runAll(t, only) {
  const results = [];
  for (const [name, run] of Object.entries({ ...CASES, ...RACE_CASES, ...CAS_CASES, ...CACHE_CASES })) {
    if (only && !only.includes(name)) continue;
    const opened = await t.open();
    try {
      await run({ ...opened, shape: 'cas' });
      results.push({ name, ok: true });
    } catch (e) {
      results.push({ name, ok: false, assertion: e?.name === 'AssertionError' || e?.code === 'ERR_ASSERTION', message: String(e?.stack ?? e) });
    }
  }
  return results;
}

/** Byte values (the default mode), a plain put over a fenced object, and refused input, as plain data. */
async function bytes(bucket) {
  const out = {};
  const store = new R2Store(bucket, { prefix: 'bytes/' });
  const gate = new Gate(store);
  out.write = await gate.write('doc.json', 3, '{"n":1}');
  const r = await gate.read('doc.json');
  out.read = { mark: r.mark, value: Array.from(r.value), isBytes: r.value instanceof Uint8Array };
  out.binary = (await gate.write('doc.json', 3, new Uint8Array([0, 255, 10]))).outcome;
  out.binaryRead = Array.from((await gate.read('doc.json')).value);
  const textGate = new Gate(new R2Store(bucket, { prefix: 'bytes/', readAs: 'text' }));
  out.buffer = (await gate.write('doc.json', 4, new TextEncoder().encode('four').buffer)).outcome;
  out.textRead = (await textGate.read('doc.json')).value;
  out.stale = (await gate.write('doc.json', 2, 'zombie')).code;
  out.refused = [];
  for (const [label, v] of [['object', { n: 1 }], ['lone surrogate', 'a\ud800'], ['stream', new ReadableStream()], ['number', 5]]) {
    const e = await gate.write('doc.json', 4, v).catch((x) => x);
    out.refused.push([label, e.code, e.reason]);
  }
  const badKeys = [];
  for (const k of ['a/../b', '..', 'a/./b', 'x\u0001y']) {
    const e = await gate.write(k, 9, 'x').catch((x) => x);
    badKeys.push([k, e.code, e.reason, (await bucket.head('bytes/' + k)) === null]);
  }
  out.badKeys = badKeys;
  // a plain put (no fence) over the fenced object: never mark 0
  await bucket.put('bytes/doc.json', 'plain bytes');
  const c = await gate.write('doc.json', 9, 'after').catch((x) => x);
  out.tampered = [c.code, text(new Uint8Array(await (await bucket.get('bytes/doc.json')).arrayBuffer()))];
  // a fenced delete leaves a tombstone that keeps the fence
  await gate.write('gone', 5, 'v5');
  out.delete = (await gate.delete('gone', 5)).outcome;
  const tomb = decodeObjectBody(new Uint8Array(await (await bucket.get('bytes/gone')).arrayBuffer()));
  out.tombstone = [tomb.state, tomb.value];
  out.afterDelete = [(await gate.write('gone', 4, 'late')).code, JSON.stringify(await gate.read('gone'))];
  const m = await new Promise((res) => res(new R2Store(bucket, { metadata: { big: 'x'.repeat(2046) } }))).catch((x) => x);
  // 2048 bytes (names and values) is R2's limit as Miniflare enforces it: written; one more byte refused before any put
  const full = new Gate(new R2Store(bucket, { prefix: 'bytes/', metadata: { big: 'x'.repeat(2045) } }));
  out.metadata = [m.code, m.reason, (await full.write('meta', 1, 'v')).outcome, (await bucket.head('bytes/meta')).customMetadata.big.length];
  return out;
}

export default {
  async fetch(request, env) {
    const { variant, cache, only } = await request.json();
    if (variant === 'bytes') return Response.json(await bytes(env.BUCKET));
    setStateCache(cache === null || cache === undefined ? undefined : cache);
    try {
      return Response.json(await runAll(target(env.BUCKET, variant), only));
    } finally {
      setStateCache(undefined);
    }
  },
};
