// fencegate/redis — a host store on Redis through ioredis.
//
// Each resource key is one Redis hash `<prefix><key>` with the fields `state`
// (fence state, format v1 JSON text), `value` (JSON text; absent = no value) and
// `version` (an integer counter). fencegate makes the decision in Wasm; Redis
// only runs a compare-and-set: a Lua script that checks the version and then
// writes state, value and the next version together, or nothing. A lost
// compare-and-set makes the gate load, decide again and retry (bounded).
//
// The client is passed in (an ioredis `Redis` or `Cluster`); this module imports nothing.

// KEYS[1] the hash; ARGV: expected version ('' = no record), state, change kind, value.
const COMPARE_AND_SET = `
local current = redis.call('HGET', KEYS[1], 'version')
if ARGV[1] == '' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
elseif current ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'state', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'version', 1)
if ARGV[3] == 'set' then
  redis.call('HSET', KEYS[1], 'value', ARGV[4])
elseif ARGV[3] == 'delete' then
  redis.call('HDEL', KEYS[1], 'value')
end
return 1
`;

const COMMAND = 'fencegateCompareAndSet';

function encodeJson(value) {
  return JSON.stringify(value);
}

function decodeJson(text) {
  return JSON.parse(text);
}

/**
 * A compare-and-set host store on an ioredis client.
 * Options: `prefix` (default `"fencegate:"`), `encode`/`decode` for values
 * (default JSON text).
 *
 * Errors: a Redis error reply (the script did not run) is a plain failure
 * (STORE_ERROR); any other error during commit (connection lost, timeout) is
 * marked `commitUnknown`, because the script may have run (COMMIT_UNKNOWN).
 */
export class RedisStore {
  #redis;
  #prefix;
  #encode;
  #decode;

  constructor(redis, options = {}) {
    if (redis === null || typeof redis !== 'object' || typeof redis.defineCommand !== 'function') {
      throw new TypeError('RedisStore needs an ioredis client');
    }
    this.#redis = redis;
    this.#prefix = options.prefix ?? 'fencegate:';
    if (typeof this.#prefix !== 'string') throw new TypeError('prefix must be a string');
    this.#encode = options.encode ?? encodeJson;
    this.#decode = options.decode ?? decodeJson;
    if (typeof redis[COMMAND] !== 'function') {
      // EVALSHA with a fallback to EVAL, cached on the client.
      redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: COMPARE_AND_SET });
    }
  }

  /** The Redis key of a resource key. */
  redisKey(key) {
    return this.#prefix + key;
  }

  /** `{ state, version, value }` of `key`, or null when the hash does not exist. */
  async load(key) {
    const [state, value, version] = await this.#redis.hmget(this.#prefix + key, 'state', 'value', 'version');
    if (state === null && value === null && version === null) return null;
    return {
      state: state ?? undefined,
      version: version ?? '',
      value: value === null ? undefined : this.#decode(value),
    };
  }

  /** Writes state and change when the hash's version is still `expectedVersion`; true when it did. */
  async commit(key, expectedVersion, nextState, change) {
    const value = change.kind === 'set' ? this.#encode(change.value) : '';
    const expected = expectedVersion === null || expectedVersion === undefined ? '' : String(expectedVersion);
    try {
      const r = await this.#redis[COMMAND](this.#prefix + key, expected, JSON.stringify(nextState), change.kind, value);
      return r === 1;
    } catch (e) {
      if (!(e && e.name === 'ReplyError') && e && typeof e === 'object') e.commitUnknown = true;
      throw e;
    }
  }
}
