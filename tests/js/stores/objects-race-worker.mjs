// One OS process of the object race (objects-race.test.mjs): its own S3 client
// and gate on the shared object, waits for "go", then writes byte values with
// current and stale tokens and sends back every attempt with CLOCK_MONOTONIC times.
import { Gate } from '../../../pkg/node.mjs';
import { S3Store } from '../../../pkg/adapters/s3.mjs';
import { s3Client, S3_BUCKET } from './targets.mjs';

const now = () => process.hrtime.bigint();

function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

process.once('message', async (config) => {
  const client = await s3Client();
  // every PutObject that succeeded: its precondition and the ETag it made (the server's half of the contract)
  const puts = [];
  const recording = {
    getObject: (i) => client.getObject(i),
    putObject: async (i) => {
      const r = await client.putObject(i);
      puts.push({ precondition: i.IfMatch ?? (i.IfNoneMatch === '*' ? '*' : null), etag: r.ETag });
      return r;
    },
  };
  const gate = new Gate(new S3Store(recording, { bucket: S3_BUCKET, prefix: config.prefix }), { maxRetries: 200, stateCache: config.stateCache });
  const random = rng(config.seed);
  process.send({ ready: true });
  await new Promise((resolve) => process.once('message', resolve));
  const history = [];
  for (let i = 0; i < config.ops; i++) {
    // current: this round's epoch; stale: three rounds back (a paused owner coming back)
    const round = random() < 0.3 ? Math.max(0, i - 3) : i;
    const token = 100 + round * 4 + config.worker;
    const id = `w${config.worker}-i${i}-t${token}`;
    const start = now();
    let v;
    let error = null;
    try {
      v = await gate.write(config.key, token, id);
    } catch (e) {
      error = e.code ?? String(e);
    }
    history.push({ id, token, start, end: now(), outcome: v?.outcome ?? null, code: v?.code ?? error, markBefore: v?.markBefore ?? null, markAfter: v?.markAfter ?? null });
  }
  client.destroy();
  process.send({ history, puts });
  process.disconnect();
});
