// One OS process of the Redis own-data race (redis-race.test.mjs): moves money between
// two Redis keys with Gate.transaction on one resource key, with tokens that are
// sometimes behind the other processes' (stale), and reports every verdict by op id.
import { Gate } from '../../../pkg/node.mjs';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';
import { redisClient, nodeRedisClient } from '../stores/targets.mjs';

const [client, prefix, seedText, roundsText, cacheText] = process.argv.slice(2);
let s = Number(seedText) >>> 0 || 1;
const random = () => {
  s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
  return (s >>> 0) / 2 ** 32;
};
const redis = client === 'node-redis' ? await nodeRedisClient() : await redisClient();
const gate = new Gate(new RedisStore(redis, { prefix: `${prefix}fence:` }), { stateCache: Number(cacheText) });
const [A, B, LOG] = [`${prefix}a`, `${prefix}b`, `${prefix}log`];
const out = [];
await new Promise((resolve) => process.once('message', resolve)); // "go"
for (let i = 0; i < Number(roundsText); i++) {
  const token = 1 + i + Math.floor(random() * 3); // the others run ahead or behind: some tokens are stale
  const amount = 1 + Math.floor(random() * 9);
  const [from, to] = random() < 0.5 ? [A, B] : [B, A];
  const opId = `${process.pid}-${i}`;
  try {
    const v = await gate.transaction('bank', token, [['DECRBY', from, amount], ['INCRBY', to, amount], ['RPUSH', LOG, `${token}:${opId}`]], { opId });
    out.push({ opId, token, ok: v.ok, outcome: v.outcome, code: v.code });
  } catch (e) {
    out.push({ opId, token, ok: false, outcome: 'error', code: e.code });
  }
}
process.send(out, () => {
  if (client === 'node-redis') redis.quit().then(() => process.exit(0));
  else { redis.disconnect(); process.exit(0); }
});
