// fencegate/redis — a host store on Redis through ioredis.
//
// Each resource key is one Redis hash `<prefix><key>` with the fields `state`
// (fence state, JSON text as fencegate encodes it), `value` (JSON text; absent = no value) and
// `version` (an integer counter). fencegate makes the decision in Wasm; Redis
// only runs a compare-and-set: a Lua script that checks the version and then
// writes state, value and the next version together, or nothing. A lost
// compare-and-set makes the gate load, decide again and retry (bounded).
//
// Values go through a codec (default: fencegate's `valueCodec`, docs/stores.md
// "Values"): exact round trip, or INVALID_ARGUMENT before anything is written.
//
// A fence record that Redis may evict is no fence: before its first operation
// the store reads `maxmemory-policy` (CONFIG GET, on every master of a Cluster)
// and refuses to run (STORE_ERROR, `reason`) under a policy that may evict keys
// without a TTL (`allkeys-*`), or when it cannot read the policy, unless the
// caller opts in with `allowEviction: true` (docs/stores.md "Records that vanish").
//
// The client is passed in (an ioredis `Redis` or `Cluster`, or a node-redis v5+
// client from `createClient`, connected); this module imports only the codec.
// node-redis runs the same script through EVALSHA (falling back to EVAL when the
// server lost its script cache) with `sendCommand`, so RESP2 and RESP3 clients
// read the same; string replies are read as text whether the client's type
// mapping gives strings or bytes (Buffer), and any other mapping of them is a
// STORE_ERROR that names the mapping (reason TYPE_MAPPING).
import { valueCodec } from '../lib/codec.mjs';
import { FencegateError } from '../lib/errors.mjs';
import { codecOf, encodeWith, encodedOf, loadedRecord, storeOptions, CODEC_OPTIONS } from './support.mjs';
import { invalid } from '../lib/options.mjs';

// KEYS[1] the hash; ARGV: expected version ('' = no record), state, change kind, value.
const COMPARE_AND_SET = `
local current = redis.call('HGET', KEYS[1], 'version')
if ARGV[1] == '' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
elseif current ~= ARGV[1] then
  return 0
end
redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'state', ARGV[2])
if ARGV[3] == 'set' then
  redis.call('HSET', KEYS[1], 'value', ARGV[4])
elseif ARGV[3] == 'delete' then
  redis.call('HDEL', KEYS[1], 'value')
end
return 1
`;

const COMMAND = 'fencegateCompareAndSet';

/** The error reply of a script that found a version HINCRBY never wrote (see `badVersion`). */
const BAD_VERSION = 'FENCEGATE_BAD_VERSION';

// The state-cache commit (commitFrom): the same write, with the state text as
// the precondition, answering the version it wrote (0: not written). The
// stored state text is compared, not the version: the decision is a function
// of that text alone, so it is the precondition that makes a cached decision
// safe (after a restore too); the version is still bumped for the version-only
// `commit` of other writers, and must be there (docs/decisions/one-round-trip-commits.md).
// Each argument of a script call costs about as much as a small command's work, so
// the script takes three (docs/decisions/state-cache.md). KEYS[1] the hash; ARGV: the
// expected state text, the next state, the change: 's' followed by the value
// (set), 'd' (delete) or 'k' (keep). No record expected: two arguments, the
// next state and the change.
const COMMIT_FROM = `
local n = #ARGV
if n == 2 then
  if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
else
  local cur = redis.call('HMGET', KEYS[1], 'state', 'version')
  if cur[1] ~= ARGV[1] then return 0 end
  -- a version HINCRBY never made (none, 0, negative, not canonical): a damaged record, refused before
  -- anything is written; so a written version is >= 2 and never reads as 0, "not written"
  if not cur[2] or not string.match(cur[2], '^[1-9][0-9]*$') then return redis.error_reply('${BAD_VERSION} ' .. tostring(cur[2])) end
end
-- the version first: a version that is no integer fails here, before anything is written
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
local change = ARGV[n]
local kind = string.byte(change)
if kind == 115 then
  redis.call('HSET', KEYS[1], 'state', ARGV[n - 1], 'value', string.sub(change, 2))
else
  redis.call('HSET', KEYS[1], 'state', ARGV[n - 1])
  if kind == 100 then redis.call('HDEL', KEYS[1], 'value') end
end
return version
`;

/** A 32-bit FNV-1a of `text`, in hex. */
function fnv(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16);
}

// Named after the script's text: another copy of this module (another fencegate
// version on the same ioredis client) with another script or argument layout
// defines its own command instead of running this one with its arguments.
const COMMAND_FROM = `fencegateCommitFrom_${fnv(COMMIT_FROM)}`;

// The own-data transaction (fencedTransaction, docs/stores.md "Your own data: Redis"): the
// fence precondition, the caller's commands and the fence write in one script, so nothing
// runs between them and nothing of the caller's runs when the precondition is lost.
// KEYS[1] the fence hash, KEYS[2..] the caller's keys (each declared once).
// ARGV[1] 'n' (no fence state expected) or 's' (the stored state text ARGV[2] expected),
// ARGV[3] the next state, ARGV[4] the number of commands, then per command: its argument
// count (name included), its number of keys, one pair (argument position, KEYS index) per
// key, then its arguments (a key's own place empty: the script puts KEYS[i] there, so a
// command touches only declared keys). Answers 0 (precondition lost: nothing ran),
// { version written, { reply, … } }, or an error reply: BAD_VERSION (nothing ran), or
// FENCEGATE_COMMAND_FAILED <n> <error> after the n-th command answered an error: the
// caller's keys that earlier commands may have changed are put back as they were (DUMP
// taken before the first command that touches them, RESTORE with their TTL; a command
// that answers an error has changed nothing), and the fence is not written.
// The fence write comes last: nothing runs between the check and it either way, and a
// fence hash that could fail HINCRBY is refused by the check before any command runs.
const TRANSACTION = `
local cur = redis.call('HMGET', KEYS[1], 'state', 'version')
if ARGV[1] == 'n' then
  if cur[1] then return 0 end
elseif cur[1] ~= ARGV[2] then
  return 0
end
if (cur[1] or cur[2]) and not (cur[2] and string.match(cur[2], '^[1-9][0-9]*$')) then
  return redis.error_reply('${BAD_VERSION} ' .. tostring(cur[2]))
end
local count = tonumber(ARGV[4])
local replies = {}
local saved = {}
local at = 5
for c = 1, count do
  local argc, nk = tonumber(ARGV[at]), tonumber(ARGV[at + 1])
  local base = at + 2 + 2 * nk
  local args = {}
  for a = 1, argc do args[a] = ARGV[base + a - 1] end
  for k = 0, nk - 1 do
    local ki = tonumber(ARGV[at + 3 + 2 * k])
    args[tonumber(ARGV[at + 2 + 2 * k])] = KEYS[ki]
    if c < count and saved[ki] == nil then
      saved[ki] = { redis.call('DUMP', KEYS[ki]), redis.call('PTTL', KEYS[ki]) }
    end
  end
  at = base + argc
  local r = redis.pcall(unpack(args))
  if type(r) == 'table' and r.err then
    for ki, s in pairs(saved) do
      if s[1] then
        local ttl = s[2]
        if ttl < 0 then ttl = 0 end
        redis.call('RESTORE', KEYS[ki], ttl, s[1], 'REPLACE')
      else
        redis.call('DEL', KEYS[ki])
      end
    end
    return redis.error_reply('${'FENCEGATE_COMMAND_FAILED'} ' .. c .. ' ' .. r.err)
  end
  replies[c] = r
end
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'state', ARGV[3])
return { version, replies }
`;

/** The error reply of the transaction script after a caller's command answered an error (see TRANSACTION). */
const COMMAND_FAILED = 'FENCEGATE_COMMAND_FAILED';

const COMMAND_TX = `fencegateTransaction_${fnv(TRANSACTION)}`;

/** At most this many arguments per command (name included): the script unpacks them onto Lua's C stack (8000 slots). */
export const MAX_COMMAND_ARGUMENTS = 4096;

/**
 * The commands a transaction body may run: data-changing commands on keys the
 * body names, each with where its keys are (argument positions, 1 = the
 * first after the name). Anything else — scripts and functions (EVAL,
 * FCALL…), transactions (MULTI, WATCH), SELECT, MOVE, COPY, FLUSH*, CONFIG,
 * reads, commands whose keys hide in patterns (SORT … STORE) or that pick at
 * random (SPOP) — is refused with INVALID_ARGUMENT before anything is sent.
 * Key layouts: `first` (one key, first), `two` (the first two), `all` (every
 * argument), `pairs` (key value key value…), `afterOp` (BITOP op dest key…),
 * `numkeys` (dest numkeys key… : ZUNIONSTORE and kin).
 */
const LAYOUTS = {
  first: ['SET', 'SETNX', 'SETEX', 'PSETEX', 'GETSET', 'GETDEL', 'GETEX', 'APPEND', 'SETRANGE', 'INCR', 'INCRBY', 'INCRBYFLOAT',
    'DECR', 'DECRBY', 'HSET', 'HSETNX', 'HMSET', 'HDEL', 'HINCRBY', 'HINCRBYFLOAT', 'LPUSH', 'RPUSH', 'LPUSHX', 'RPUSHX', 'LPOP',
    'RPOP', 'LSET', 'LREM', 'LTRIM', 'LINSERT', 'SADD', 'SREM', 'ZADD', 'ZINCRBY', 'ZREM', 'ZREMRANGEBYSCORE', 'ZREMRANGEBYRANK',
    'ZREMRANGEBYLEX', 'ZPOPMIN', 'ZPOPMAX', 'EXPIRE', 'PEXPIRE', 'EXPIREAT', 'PEXPIREAT', 'PERSIST', 'SETBIT', 'BITFIELD', 'PFADD',
    'XADD', 'XDEL', 'XTRIM', 'GEOADD'],
  two: ['RENAME', 'RENAMENX', 'LMOVE', 'RPOPLPUSH', 'SMOVE', 'ZRANGESTORE'],
  all: ['DEL', 'UNLINK', 'SINTERSTORE', 'SUNIONSTORE', 'SDIFFSTORE', 'PFMERGE'],
  pairs: ['MSET', 'MSETNX'],
  afterOp: ['BITOP'],
  numkeys: ['ZUNIONSTORE', 'ZINTERSTORE', 'ZDIFFSTORE'],
};

/** Command name (upper case) → its key layout. */
const LAYOUT_OF = new Map(Object.entries(LAYOUTS).flatMap(([layout, names]) => names.map((n) => [n, layout])));

/** The commands a transaction body may run (upper case), for the docs and the types. */
export const TRANSACTION_COMMANDS = Object.freeze([...LAYOUT_OF.keys()].sort());

/** The key positions (indexes into the command, 0 = the name) of a command with `layout` and `args`, or a string: why its shape is wrong. */
function keyPositions(layout, args) {
  const n = args.length;
  const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);
  switch (layout) {
    case 'first':
      return n >= 2 ? [1] : 'it names no key';
    case 'two':
      return n >= 3 ? [1, 2] : 'it needs two keys';
    case 'all':
      return n >= 2 ? range(1, n) : 'it names no key';
    case 'pairs':
      return n >= 3 && (n - 1) % 2 === 0 ? range(0, (n - 1) / 2).map((i) => 1 + 2 * i) : 'it needs key value pairs';
    case 'afterOp':
      return n >= 4 ? range(2, n) : 'it needs an operation, a destination key and a source key';
    default: {
      // numkeys: dest numkeys key… [options]
      const count = n >= 3 ? argText(args[2]) : '';
      if (!/^[1-9][0-9]{0,3}$/.test(count) || 3 + Number(count) > n) return 'its numkeys is not a positive count of the keys that follow';
      return [1, ...range(3, 3 + Number(count))];
    }
  }
}

/** An argument as the text or bytes sent (a number as its decimal text), or undefined when it is none of string, finite number, Buffer/Uint8Array. */
function argOf(x) {
  if (typeof x === 'string') return x;
  if (typeof x === 'number') return Number.isFinite(x) ? String(x) : undefined;
  if (x instanceof Uint8Array) return Buffer.isBuffer(x) ? x : Buffer.from(x.buffer, x.byteOffset, x.byteLength);
  return undefined;
}

/** A sent argument as text (for command names and counts; bytes read as UTF-8). */
function argText(x) {
  return typeof x === 'string' ? x : Buffer.isBuffer(x) ? x.toString('utf8') : String(x);
}

/** The bytes of a key (UTF-8 for text), for comparing keys and their hash slots. */
function bytesOf(key) {
  return typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
}

const CRC16 = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

/** The Redis Cluster hash slot of a key (CRC16-XMODEM of its hash tag `{…}` when it has a non-empty one, else of the whole key, mod 16384). */
export function hashSlot(key) {
  let b = bytesOf(key);
  const open = b.indexOf(0x7b);
  if (open >= 0) {
    const close = b.indexOf(0x7d, open + 1);
    if (close > open + 1) b = b.subarray(open + 1, close);
  }
  let crc = 0;
  for (const x of b) crc = ((crc << 8) & 0xffff) ^ CRC16[((crc >> 8) ^ x) & 0xff];
  return crc % 16384;
}

function badBody(message, details = {}) {
  return invalid(`RedisStore transaction: ${message}`, details);
}

/**
 * A transaction body checked and laid out for the script: `{ keys, argv, count }`
 * (the caller's distinct keys in first-use order, the script's ARGV from its 5th
 * on, the number of commands). `prefix`: the store's key prefix (a key under it
 * is a fence record, refused); `fenceKey`: the fence hash (null: not known yet,
 * checkBody); `cluster`: every key must hash to the fence hash's slot.
 * INVALID_ARGUMENT (with `index`, the command's place in the list) otherwise.
 */
function layOut(body, prefix, fenceKey, cluster) {
  if (!Array.isArray(body)) {
    throw badBody(`the body must be a list of commands, e.g. [['HSET', 'job:7', 'state', 'done']], got ${body === null ? 'null' : typeof body}`);
  }
  const keys = [];
  const keyIndex = new Map(); // key bytes (latin1 text) → KEYS index
  const argv = [];
  const prefixBytes = Buffer.from(prefix, 'utf8');
  const fenceBytes = fenceKey === null ? null : Buffer.from(fenceKey, 'utf8');
  const fenceSlot = cluster && fenceKey !== null ? hashSlot(fenceKey) : null;
  body.forEach((command, index) => {
    if (!Array.isArray(command) || command.length === 0) {
      throw badBody(`command ${index} must be a list [name, ...arguments]`, { index });
    }
    if (command.length > MAX_COMMAND_ARGUMENTS) {
      throw badBody(`command ${index} has ${command.length} arguments, more than ${MAX_COMMAND_ARGUMENTS}`, { index });
    }
    const args = command.map(argOf);
    const bad = args.indexOf(undefined);
    if (bad >= 0) {
      throw badBody(`command ${index} argument ${bad} must be a string, a finite number or a Buffer`, { index });
    }
    const name = typeof command[0] === 'string' ? command[0].toUpperCase() : '';
    const layout = LAYOUT_OF.get(name);
    if (layout === undefined) {
      throw badBody(`command ${index} (${JSON.stringify(argText(args[0]).slice(0, 40))}) is not one this store runs in a fenced transaction ` +
        '(data-changing commands on named keys: RedisStore TRANSACTION_COMMANDS)', { index, command: argText(args[0]).slice(0, 40) });
    }
    const positions = keyPositions(layout, args);
    if (typeof positions === 'string') throw badBody(`command ${index} (${name}): ${positions}`, { index, command: name });
    const pairs = [];
    for (const p of positions) {
      const key = args[p];
      const bytes = bytesOf(key);
      if ((prefixBytes.length > 0 && bytes.subarray(0, prefixBytes.length).equals(prefixBytes)) || (fenceBytes !== null && bytes.equals(fenceBytes))) {
        throw badBody(`command ${index} (${name}) names ${JSON.stringify(argText(key))}, a key under the store's prefix ${JSON.stringify(prefix)} (fencegate's own records)`,
          { index, command: name });
      }
      if (fenceSlot !== null && hashSlot(bytes) !== fenceSlot) {
        throw badBody(
          `command ${index} (${name}) names ${JSON.stringify(argText(key))} in hash slot ${hashSlot(bytes)}, but the fence record ${JSON.stringify(fenceKey)} is in slot ${fenceSlot}: ` +
            'under Redis Cluster one script runs on one slot; give the resource key and your keys one hash tag (e.g. key "{job:7}", keys "{job:7}:state")',
          { index, command: name, reason: 'CROSSSLOT', slot: hashSlot(bytes), fenceSlot },
        );
      }
      const id = bytes.toString('latin1');
      let k = keyIndex.get(id);
      if (k === undefined) {
        keys.push(key);
        k = keys.length + 1; // KEYS[1] is the fence hash
        keyIndex.set(id, k);
      }
      pairs.push(String(p + 1), String(k));
      args[p] = '';
    }
    // the name as sent in upper case (its bytes are checked above)
    args[0] = name;
    argv.push(String(args.length), String(positions.length), ...pairs, ...args);
  });
  return { keys, argv, count: body.length };
}

/** The error a caller's command answered inside the transaction script (the body's error: CALLBACK_FAILED). */
function commandError(e, body) {
  const message = typeof e.message === 'string' ? e.message : '';
  const rest = message.slice(message.indexOf(COMMAND_FAILED) + COMMAND_FAILED.length + 1);
  const space = rest.indexOf(' ');
  const index = Number(rest.slice(0, space)) - 1;
  const reply = rest.slice(space + 1);
  const command = Array.isArray(body) && Array.isArray(body[index]) && typeof body[index][0] === 'string' ? body[index][0].toUpperCase() : null;
  const err = new Error(`command ${index} (${command}) answered: ${reply}; nothing of the list was kept`, { cause: e });
  err.index = index;
  err.command = command;
  err.reply = reply;
  return err;
}

/** A Cluster redirection or slot error answered by the server, as a clear FencegateError; null for any other error. */
function clusterError(key, e) {
  if (!isErrorReply(e) || typeof e.message !== 'string') return null;
  if (/^(MOVED|ASK) /.test(e.message)) {
    return unsafe('MOVED', `RedisStore: the server answered ${JSON.stringify(e.message)}: it is a Redis Cluster node that does not hold ${JSON.stringify(key)}'s slot, ` +
      'and this client does not follow redirections; nothing was written: pass an ioredis Cluster client', { key, cause: e });
  }
  if (/^CROSSSLOT /.test(e.message)) {
    return invalid(`RedisStore transaction: the server answered ${JSON.stringify(e.message)}: the fence record and your keys are in more than one ` +
      'hash slot; nothing was written: give the resource key and your keys one hash tag (e.g. key "{job:7}", keys "{job:7}:state")', { key, reason: 'CROSSSLOT', cause: e });
  }
  return null;
}

/** A failed send: an error reply (the script did not run) as it is; anything else may have run (`commitUnknown`). */
function sentError(key, e) {
  if (!isErrorReply(e)) {
    if (e && typeof e === 'object') e.commitUnknown = true;
    return e;
  }
  const message = typeof e.message === 'string' ? e.message : '';
  const at = message.indexOf(BAD_VERSION);
  if (at < 0) return e;
  const version = message.slice(at + BAD_VERSION.length + 1); // the script's tostring: 'false' for no field
  return badVersion(key, version === 'false' ? null : version, e);
}

/** Whether `version` (a hash's `version` field) is one HINCRBY writes: canonical decimal ≥ 1. */
const isVersion = (version) => /^[1-9][0-9]*$/.test(version);

/**
 * STORE_ERROR with `reason: 'BAD_VERSION'`: the hash of `key` has a state but a
 * `version` that this store never writes (none, 0, negative, not an integer: a
 * foreign or damaged record). Nothing is written to it: a commit over it could
 * not tell its own write from a lost precondition (a version at 0 or below
 * would answer as "not written" after HINCRBY). Repair the field (any
 * integer ≥ 1) to go on. `version`: the field's text, or null when there is none.
 */
function badVersion(key, version, cause) {
  return unsafe(
    'BAD_VERSION',
    `RedisStore: the hash of ${JSON.stringify(key)} has the version ${version === null ? '(none)' : JSON.stringify(version)}, which this store never writes ` +
      '(a positive integer); nothing was written: repair the record\'s version field',
    { key, version, ...(cause === undefined ? {} : { cause }) },
  );
}

/**
 * Closed connections of a client, counted once per client (one `close`
 * listener however many stores share it, so stores made per request neither
 * pile listeners up nor stay reachable from the client).
 */
const CLOSES = new WeakMap();
function closesOf(redis) {
  let closes = CLOSES.get(redis);
  if (closes === undefined) {
    closes = { count: 0 };
    CLOSES.set(redis, closes);
    if (typeof redis.on === 'function') {
      const counter = closes;
      redis.on('close', () => {
        counter.count += 1;
      });
    }
  }
  return closes;
}

/**
 * Eviction policies under which a key without a TTL (every fence record) is
 * never evicted. Any other policy (`allkeys-lru`, `allkeys-lfu`,
 * `allkeys-random`, or one this version does not know) is refused.
 */
export const SAFE_EVICTION_POLICIES = Object.freeze(['noeviction', 'volatile-lru', 'volatile-lfu', 'volatile-random', 'volatile-ttl']);

function isSafePolicy(policy) {
  return SAFE_EVICTION_POLICIES.includes(policy) || /^volatile-[a-z]+$/.test(policy);
}

const OPT_IN = 'pass { allowEviction: true } to RedisStore only if you accept that an evicted fence record lets an old epoch write again';

function unsafe(reason, message, details) {
  return new FencegateError('STORE_ERROR', message, { reason, ...details });
}

/** Whether `e` is an error reply from the server (the command did not run), for ioredis or node-redis. */
function isErrorReply(e) {
  if (e === null || typeof e !== 'object') return false;
  if (e.name === 'ReplyError') return true; // ioredis
  for (let p = Object.getPrototypeOf(e); p !== null; p = Object.getPrototypeOf(p)) {
    if (p.constructor && p.constructor.name === 'ErrorReply') return true; // node-redis (SimpleError, BlobError)
  }
  return false;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A node-redis string reply as text, whatever the client's type mapping made
 * of it (`withTypeMapping`): a string, or bytes (`Buffer`, any Uint8Array:
 * UTF-8). Anything else is STORE_ERROR naming the mapping (RedisStore reads
 * strings and bytes; docs/stores.md "Redis").
 */
function textOf(x) {
  if (typeof x === 'string') return x;
  if (x instanceof Uint8Array) {
    try {
      return utf8.decode(x);
    } catch (cause) {
      throw new FencegateError('STORE_ERROR', 'RedisStore read a reply that is not UTF-8 text', { reason: 'TYPE_MAPPING', cause });
    }
  }
  throw new FencegateError(
    'STORE_ERROR',
    `RedisStore read a string reply as ${x === null ? 'null' : typeof x === 'object' ? `an object (${Object.prototype.toString.call(x)})` : `a ${typeof x}`}: ` +
      "the node-redis client's type mapping (withTypeMapping) turns Redis strings into something else; RedisStore reads them as strings or bytes (Buffer), so map BLOB_STRING and SIMPLE_STRING to String or Buffer",
    { reason: 'TYPE_MAPPING' },
  );
}

/** A CONFIG GET reply as `[name, value, …]` of texts: RESP2 arrays, RESP3 maps (a Map, a plain object or an array of pairs), strings or bytes. */
function pairs(reply) {
  let flat = reply;
  if (reply instanceof Map) flat = [...reply].flat();
  else if (reply !== null && typeof reply === 'object' && !Array.isArray(reply)) flat = Object.entries(reply).flat();
  return Array.isArray(flat) ? flat.map((x) => (typeof x === 'string' || x instanceof Uint8Array ? textOf(x) : x)) : flat;
}

/** The commands the store sends, over ioredis (a defined Lua command) or node-redis (`sendCommand`). */
function driverOf(redis) {
  if (redis === null || typeof redis !== 'object') return null;
  if (typeof redis.defineCommand === 'function') {
    if (typeof redis[COMMAND] !== 'function') {
      // EVALSHA with a fallback to EVAL, cached on the client.
      redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: COMPARE_AND_SET });
    }
    if (typeof redis[COMMAND_FROM] !== 'function') redis.defineCommand(COMMAND_FROM, { numberOfKeys: 1, lua: COMMIT_FROM });
    if (typeof redis[COMMAND_TX] !== 'function') redis.defineCommand(COMMAND_TX, { lua: TRANSACTION }); // key count as the first argument
    return {
      cluster: redis.isCluster === true,
      tx: (keys, args) => redis[COMMAND_TX](keys.length, ...keys, ...args),
      hmget: (key) => redis.hmget(key, 'state', 'value', 'version'),
      cas: (key, args) => redis[COMMAND](key, ...args),
      casFrom: (key, expected, next, change) =>
        expected === null ? redis[COMMAND_FROM](key, next, change) : redis[COMMAND_FROM](key, expected, next, change),
      nodes: () => (typeof redis.nodes === 'function' ? redis.nodes('master') : [redis]),
      nodeName: (node) => (node.options && node.options.host !== undefined ? `${node.options.host}:${node.options.port}` : 'redis'),
      configGet: (node) => node.config('GET', 'maxmemory-policy'),
    };
  }
  if (typeof redis.sendCommand === 'function' && typeof redis.nodeClient !== 'function') {
    const send = (args) => redis.sendCommand(args);
    /** One script by EVALSHA (loaded once); NOSCRIPT (a flushed script cache: it did not run) falls back to EVAL, which loads it again. */
    const scriptOf = (lua) => {
      let sha = null;
      return async (key, args) => {
        const tail = ['1', key, ...args];
        sha ??= textOf(await send(['SCRIPT', 'LOAD', lua]));
        try {
          return await send(['EVALSHA', sha, ...tail]);
        } catch (e) {
          if (isErrorReply(e) && /^NOSCRIPT/.test(e.message)) return send(['EVAL', lua, ...tail]);
          throw e;
        }
      };
    };
    const script = scriptOf(COMPARE_AND_SET);
    const scriptFrom = scriptOf(COMMIT_FROM);
    let txSha = null;
    return {
      cluster: false,
      tx: async (keys, args) => {
        const tail = [String(keys.length), ...keys, ...args];
        txSha ??= String(await send(['SCRIPT', 'LOAD', TRANSACTION]));
        try {
          return await send(['EVALSHA', txSha, ...tail]);
        } catch (e) {
          if (isErrorReply(e) && /^NOSCRIPT/.test(e.message)) return send(['EVAL', TRANSACTION, ...tail]);
          throw e;
        }
      },
      hmget: async (key) => {
        const r = await send(['HMGET', key, 'state', 'value', 'version']);
        return r.map((x) => (x === null || x === undefined ? null : textOf(x)));
      },
      cas: async (key, args) => Number(await script(key, args)),
      casFrom: async (key, expected, next, change) => Number(await scriptFrom(key, expected === null ? [next, change] : [expected, next, change])),
      nodes: () => [redis],
      nodeName: (node) => {
        // host:port as for ioredis: from `socket`, else from `url` (never its password)
        const o = node.options ?? {};
        if (o.socket && o.socket.host !== undefined) return `${o.socket.host}:${o.socket.port ?? 6379}`;
        try {
          const u = new URL(o.url);
          return `${u.hostname}:${u.port || 6379}`;
        } catch {
          return 'redis';
        }
      },
      configGet: async (node) => pairs(await node.sendCommand(['CONFIG', 'GET', 'maxmemory-policy'])),
    };
  }
  return null;
}

/** `maxmemory-policy` of one node; STORE_ERROR EVICTION_POLICY_UNKNOWN when the server does not say. */
async function policyOf(driver, node) {
  let reply;
  try {
    reply = await driver.configGet(node);
  } catch (e) {
    if (!isErrorReply(e)) throw e; // no answer (connection): not cached, asked again next time
    throw unsafe(
      'EVICTION_POLICY_UNKNOWN',
      `RedisStore cannot read Redis's maxmemory-policy (CONFIG GET answered: ${e.message}), so it cannot tell whether ` +
        `Redis may evict fence records; set a safe policy (noeviction, or volatile-* with no TTL on fence records) and ${OPT_IN}`,
      { cause: e },
    );
  }
  const policy = Array.isArray(reply) && reply.length >= 2 && typeof reply[1] === 'string' ? reply[1] : undefined;
  if (policy === undefined) {
    throw unsafe(
      'EVICTION_POLICY_UNKNOWN',
      `RedisStore cannot read Redis's maxmemory-policy (CONFIG GET answered ${JSON.stringify(reply)}); ${OPT_IN}`,
      { reply },
    );
  }
  return policy;
}

/**
 * A compare-and-set host store on an ioredis client.
 * Options: `prefix` (default `"fencegate:"`), `encode`/`decode` for values
 * (default `valueCodec`), `allowEviction` (default false: refuse to run under
 * an evicting `maxmemory-policy`, or one that cannot be read).
 *
 * Errors: a Redis error reply (the script did not run) is a plain failure
 * (STORE_ERROR); any other error during commit (connection lost, timeout) is
 * marked `commitUnknown`, because the script may have run (COMMIT_UNKNOWN).
 */
export class RedisStore {
  #driver;
  #prefix;
  #encode;
  #decode;
  #allowEviction;
  /** The policy check: null = not passed yet, else the checked policies. */
  #checked = null;
  #checking = null;
  /** The client's closed-connection counter (`closesOf`). */
  #closes;

  constructor(redis, options = {}) {
    if (redis !== null && typeof redis === 'object' && typeof redis.sendCommand === 'function' && typeof redis.nodeClient === 'function') {
      throw invalid('RedisStore does not take a node-redis cluster (createCluster); use an ioredis Cluster', {});
    }
    options = storeOptions(options, 'RedisStore', { prefix: null, allowEviction: null, ...CODEC_OPTIONS });
    const prefix = options.prefix ?? 'fencegate:';
    if (typeof prefix !== 'string') throw invalid('prefix must be a string', { prefix });
    const driver = driverOf(redis);
    if (driver === null) {
      throw invalid('RedisStore needs an ioredis client (Redis or Cluster) or a node-redis client (createClient)', {
        client: redis === null ? 'null' : typeof redis,
      });
    }
    this.#driver = driver;
    this.#prefix = prefix;
    [this.#encode, this.#decode] = codecOf(options, valueCodec);
    const allow = options.allowEviction ?? false;
    if (typeof allow !== 'boolean') {
      throw invalid('allowEviction must be true or false', { allowEviction: allow });
    }
    this.#allowEviction = allow;
    if (allow) this.#checked = []; // opted in: operations never wait for the check
    // Closed connections, counted: ioredis sends an unanswered command again
    // after a reconnect (autoResendUnfulfilledCommands, on by default), so a
    // compare-and-set that comes back lost across a close may have lost to its
    // own first send (see commit).
    this.#closes = closesOf(redis);
  }

  /** The Redis key of a resource key. */
  redisKey(key) {
    return this.#prefix + key;
  }

  /**
   * Reads `maxmemory-policy` (every master of a Cluster) and throws STORE_ERROR
   * with `reason: 'EVICTION_POLICY'` when one may evict fence records, or
   * `'EVICTION_POLICY_UNKNOWN'` when CONFIG GET is refused. Resolves to the
   * policies read (`{ node, policy }[]`). Runs by itself before the first
   * operation; call it again after changing the server's configuration.
   * With `allowEviction: true` it still reads and reports, and never throws for the policy.
   */
  async checkEvictionPolicy() {
    const d = this.#driver;
    const out = [];
    for (const node of d.nodes()) {
      const name = d.nodeName(node);
      let policy;
      try {
        policy = await policyOf(d, node);
      } catch (e) {
        if (this.#allowEviction && e instanceof FencegateError) {
          out.push({ node: name, policy: null });
          continue;
        }
        throw e;
      }
      if (!isSafePolicy(policy) && !this.#allowEviction) {
        throw unsafe(
          'EVICTION_POLICY',
          `Redis at ${name} runs maxmemory-policy ${policy}: it may evict fence records, and an evicted record lets a ` +
            `paused old owner's write land as the key's first write. Use noeviction, or a volatile-* policy with no TTL ` +
            `on fence records (docs/stores.md), or ${OPT_IN}`,
          { policy, node: name },
        );
      }
      out.push({ node: name, policy });
    }
    this.#checked = out;
    return out;
  }

  /** Runs the policy check once (a failed check runs again on the next operation). */
  #ensureChecked() {
    if (this.#checked !== null) return undefined;
    this.#checking ??= this.checkEvictionPolicy().finally(() => {
      this.#checking = null;
    });
    return this.#checking;
  }

  /** `{ state, version, value }` of `key`, or null when the hash does not exist. */
  async load(key) {
    if (this.#checked === null) await this.#ensureChecked();
    const [state, value, version] = await this.#driver.hmget(this.#prefix + key);
    if (state === null && value === null && version === null) return null;
    if (state !== null && (version === null || !isVersion(version))) throw badVersion(key, version);
    return loadedRecord(state ?? undefined, version ?? '', value, this.#decode);
  }

  /** Writes state and change when the hash's version is still `expectedVersion`; true when it did. */
  async commit(key, expectedVersion, nextState, change) {
    if (this.#checked === null) await this.#ensureChecked();
    const value = change.kind === 'set' ? encodedOf(this, change) : '';
    const expected = expectedVersion === null || expectedVersion === undefined ? '' : String(expectedVersion);
    const closes = this.#closes.count;
    let r;
    try {
      r = await this.#driver.cas(this.#prefix + key, [expected, JSON.stringify(nextState), change.kind, value]);
    } catch (e) {
      throw sentError(key, e);
    }
    if (r !== 1 && this.#closes.count !== closes) {
      // Lost across a closed connection: the first send may have run before the
      // close and a newer commit before the resend. Deciding again would report
      // a write that landed as refused.
      const e = new Error(
        `RedisStore: the connection closed while the compare-and-set of ${JSON.stringify(key)} was in flight and it came back lost; ` +
          'the client may have sent it twice, so the first send may have committed',
      );
      e.commitUnknown = true;
      throw e;
    }
    return r === 1;
  }

  /**
   * The gate's state-cache commit (docs/stores.md "commitFrom"): one script
   * call (EVALSHA) that writes `nextText` as is and the change when the hash
   * still has the state text `expected.state` and a version (null: no hash
   * yet). `expected.version` is not compared: the state text is what the
   * decision was made from (docs/decisions/one-round-trip-commits.md). Resolves to `{ version }` (the
   * version it wrote), or false.
   */
  commitFrom(key, expected, nextText, change) {
    // (a Promise chain, not an async function: no async frame per write once the policy is checked)
    if (this.#checked === null) return this.#commitFromChecked(key, expected, nextText, change);
    let changed;
    try {
      changed = change.kind === 'set' ? 's' + encodedOf(this, change) : change.kind === 'delete' ? 'd' : 'k';
    } catch (e) {
      return Promise.reject(e); // the codec refused the value: nothing sent
    }
    const closes = this.#closes.count;
    let sent;
    try {
      sent = Promise.resolve(this.#driver.casFrom(this.#prefix + key, expected === null ? null : expected.state, nextText, changed));
    } catch (e) {
      return Promise.reject(sentError(key, e));
    }
    return sent.then((r) => this.#fromAnswer(key, Number(r), closes), (e) => {
      throw sentError(key, e);
    });
  }

  /** `commitFrom` before the first operation: the eviction policy check first. */
  async #commitFromChecked(key, expected, nextText, change) {
    await this.#ensureChecked();
    return this.commitFrom(key, expected, nextText, change);
  }

  /** The answer of the commitFrom script (the version written, 0: not written). */
  #fromAnswer(key, r, closes) {
    if (r >= 1) return { version: String(r) };
    if (this.#closes.count !== closes) {
      // As in commit: lost across a closed connection may have lost to its own first send.
      const e = new Error(
        `RedisStore: the connection closed while the compare-and-set of ${JSON.stringify(key)} was in flight and it came back lost; ` +
          'the client may have sent it twice, so the first send may have committed',
      );
      e.commitUnknown = true;
      throw e;
    }
    return false;
  }

  /**
   * INVALID_ARGUMENT unless `body` is a command list this store runs in a
   * fenced transaction (Gate.transaction calls it before anything is sent):
   * a list of commands `[name, ...arguments]`, arguments strings, finite
   * numbers or Buffers, names from TRANSACTION_COMMANDS, no key under the
   * store's prefix. (The Cluster slot check needs the resource key: it runs
   * in fencedTransaction, also before anything is sent.)
   */
  checkBody(body) {
    layOut(body, this.#prefix, null, false);
  }

  /**
   * The caller's own commands in one script with the fence step
   * (Gate.transaction; docs/stores.md "Your own data: Redis"). Redis runs no
   * JS, so the body is a command list, and it runs inside the script: the
   * script checks the fence hash's state text (from `step.cached` first, else
   * as just read), runs the commands, writes the next fence state, all
   * atomically; a lost precondition runs none of them (then: read, decide
   * again, send again; lost again → `conflict`, the gate retries). A command
   * that answers an error puts back what the earlier ones changed and writes
   * no fence: `step.run` gets a rejected Promise (CALLBACK_FAILED). Applied:
   * `step.run(replies)` (the commands' replies as the client gives them
   * become the verdict's `result`), answers `{ version }`. Refused: null.
   */
  async fencedTransaction(key, step) {
    const fenceKey = this.#prefix + key;
    const body = layOut(step.body, this.#prefix, fenceKey, this.#driver.cluster);
    if (this.#checked === null) await this.#ensureChecked();
    const cached = step.cached;
    if (cached !== null) {
      const plan = step.decide(cached.state);
      if (plan !== null) {
        const out = await this.#sendTransaction(key, fenceKey, body, cached.state, plan, step);
        if (out !== null) return out;
      }
    }
    let state;
    let version;
    try {
      [state, , version] = await this.#driver.hmget(fenceKey);
    } catch (e) {
      throw clusterError(key, e) ?? e;
    }
    if (state !== null && (version === null || !isVersion(version))) throw badVersion(key, version);
    const plan = step.decide(state);
    if (plan === null) return null; // refused: nothing sent, the commands never run
    const out = await this.#sendTransaction(key, fenceKey, body, state, plan, step);
    if (out !== null) return out;
    const e = new Error(`RedisStore: the fence state of ${JSON.stringify(key)} changed between the read and the transaction script (nothing ran)`);
    e.conflict = true;
    throw e;
  }

  /** One transaction script; `{ version }` when it ran (after `step.run`), null when the precondition `expected` (state text, null: none) was lost. */
  async #sendTransaction(key, fenceKey, body, expected, plan, step) {
    const args = [expected === null ? 'n' : 's', expected ?? '', plan.nextStateText, String(body.count), ...body.argv];
    const closes = this.#closes.count;
    let reply;
    try {
      reply = await this.#driver.tx([fenceKey, ...body.keys], args);
    } catch (e) {
      if (isErrorReply(e) && typeof e.message === 'string' && e.message.includes(COMMAND_FAILED)) {
        await step.run(Promise.reject(commandError(e, step.body))); // the body failed: rejects with its error
      }
      throw clusterError(key, e) ?? sentError(key, e);
    }
    if (Array.isArray(reply)) {
      step.run(Array.isArray(reply[1]) ? reply[1] : []);
      return { version: String(reply[0]) };
    }
    if (this.#closes.count !== closes) {
      // As in commit: lost across a closed connection may have lost to its own first send.
      const e = new Error(
        `RedisStore: the connection closed while the transaction of ${JSON.stringify(key)} was in flight and it came back lost; ` +
          'the client may have sent it twice, so the first send may have committed',
      );
      e.commitUnknown = true;
      throw e;
    }
    return null;
  }

  /** The stored text of `value` (the codec's `encode`); INVALID_ARGUMENT when the codec refuses it. */
  encodeValue(value) {
    return encodeWith(this.#encode, value);
  }
}
