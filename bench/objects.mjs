// Object-store benchmark: a fenced PUT through fencegate/s3 against an
// unconditional PutObject of the same bytes, same client, same server
// (FENCEGATE_S3_URL: moto by default, scripts/with-services.sh), interleaved
// rounds, medians. Variants per round:
//   raw        PutObject of the value's bytes, no condition
//   fenced     gate.write with the state cache (one conditional PutObject, no GET)
//   uncached   gate.write with stateCache: 0 (one GetObject, one conditional PutObject)
// Run: bash scripts/with-services.sh node bench/objects.mjs [--json]
//   BENCH_ROUNDS (default 7), BENCH_OPS (writes per variant and round, default 200), BENCH_BYTES (value size, default 1024).
import { Gate } from '../pkg/node.mjs';
import { S3Store } from '../pkg/adapters/s3.mjs';
import { S3_URL, S3_BUCKET, s3Client, uniqueKey } from '../tests/js/stores/targets.mjs';

if (!S3_URL) {
  console.error('bench/objects.mjs: FENCEGATE_S3_URL is not set (run through scripts/with-services.sh)');
  process.exit(2);
}
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const OPS = Number(process.env.BENCH_OPS ?? 200);
const BYTES = Number(process.env.BENCH_BYTES ?? 1024);
const JSON_OUT = process.argv.includes('--json');

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const client = await s3Client();
const prefix = `${uniqueKey('bench')}/`;
const value = new Uint8Array(BYTES).map((_, i) => (i * 31) & 255);
const cached = new Gate(new S3Store(client, { bucket: S3_BUCKET, prefix }));
const uncached = new Gate(new S3Store(client, { bucket: S3_BUCKET, prefix }), { stateCache: 0 });
const variants = {
  raw: () => client.putObject({ Bucket: S3_BUCKET, Key: `${prefix}raw`, Body: value }),
  fenced: async () => {
    const v = await cached.write('fenced', 1, value);
    if (!v.ok) throw new Error(`fenced write refused: ${v.code}`);
  },
  uncached: async () => {
    const v = await uncached.write('uncached', 1, value);
    if (!v.ok) throw new Error(`uncached write refused: ${v.code}`);
  },
};
for (const f of Object.values(variants)) for (let i = 0; i < 20; i++) await f(); // warm up (connections, the cache entry)

const perSecond = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
const names = Object.keys(variants);
for (let r = 0; r < ROUNDS; r++) {
  // interleaved, the order rotating each round
  for (let j = 0; j < names.length; j++) {
    const name = names[(r + j) % names.length];
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < OPS; i++) await variants[name]();
    perSecond[name].push(OPS / (Number(process.hrtime.bigint() - t0) / 1e9));
  }
}
client.destroy();
const m = Object.fromEntries(names.map((k) => [k, Math.round(median(perSecond[k]))]));
const out = {
  server: S3_URL, bytes: BYTES, rounds: ROUNDS, ops: OPS, perSecond: m,
  ratio: { fenced: +(m.fenced / m.raw).toFixed(3), uncached: +(m.uncached / m.raw).toFixed(3) },
};
if (JSON_OUT) console.log(JSON.stringify(out));
else {
  console.log(`S3 (${S3_URL}), ${BYTES}-byte values, medians of ${ROUNDS} interleaved rounds of ${OPS} writes:`);
  console.log(`  raw PutObject          ${m.raw} writes/s`);
  console.log(`  fenced (state cache)   ${m.fenced} writes/s  (${out.ratio.fenced}× raw)`);
  console.log(`  fenced, stateCache: 0  ${m.uncached} writes/s  (${out.ratio.uncached}× raw)`);
}
