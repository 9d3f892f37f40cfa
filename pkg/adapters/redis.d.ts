import type { FencedStep } from 'fencegate';
/**
 * fencegate/redis — a compare-and-set host store on Redis, through ioredis ≥ 5
 * (`Redis` or `Cluster`) or node-redis ≥ 5 (npm `redis`, a connected `createClient()`).
 * Each key is a hash `<prefix><key>` with fields `state`, `value`, `version`;
 * commits run a Lua script that compares the version and writes state and
 * value together. Use with `new Gate(new RedisStore(redis))`.
 */
export interface RedisStoreOptions<V = unknown> {
  /** Key prefix; default `"fencegate:"`. */
  prefix?: string;
  /**
   * Value to stored text, with `decode` as a pair (a codec, e.g. `...jsonCodec`);
   * default fencegate's `valueCodec`. A throw refuses the write: INVALID_ARGUMENT.
   */
  encode?(value: V): string;
  /** Stored text to value; default `valueCodec.decode` (reads JSON text and `devalue:` text). */
  decode?(text: string): V;
  /**
   * Run even when Redis may evict fence records (`maxmemory-policy allkeys-*`)
   * or the policy cannot be read (CONFIG GET not permitted). Default false:
   * such a store refuses every operation with STORE_ERROR (`reason`
   * `EVICTION_POLICY` / `EVICTION_POLICY_UNKNOWN`). An evicted fence record
   * lets an old epoch's write land as the key's first write: read
   * docs/stores.md "Records that vanish" before setting this.
   */
  allowEviction?: boolean;
}

/** `maxmemory-policy` values under which a key without a TTL is never evicted. */
export const SAFE_EVICTION_POLICIES: readonly string[];

/**
 * The commands a {@link RedisCommandList} may use (upper case; names are matched
 * case-insensitively): data-changing commands whose keys this store can find
 * (SET, HSET, INCRBY, DEL, LPUSH, ZADD, EXPIRE, RENAME, MSET, ZUNIONSTORE, …).
 * Scripts and functions, MULTI/WATCH, SELECT, MOVE, COPY, FLUSH*, CONFIG, reads
 * and random commands (SPOP) are refused with INVALID_ARGUMENT.
 */
export const TRANSACTION_COMMANDS: readonly string[];

/** The most arguments one command of a {@link RedisCommandList} may have, its name included (4096). */
export const MAX_COMMAND_ARGUMENTS: number;

/**
 * The Redis Cluster hash slot (0…16383) of a key: CRC16 of its hash tag `{…}`
 * when it has a non-empty one, else of the whole key (text as UTF-8).
 */
export function hashSlot(key: string | Uint8Array): number;

/** One argument of a command: text, a finite number (sent as its decimal text), or bytes. */
export type RedisArgument = string | number | Uint8Array;

/**
 * The body of `Gate.transaction` on a RedisStore: commands `[name, ...arguments]`
 * run in one Lua script with the fence check and write (docs/stores.md "Your own
 * data: Redis"). The store finds each command's keys from its name (the keys are
 * passed in KEYS); a key under the store's prefix is refused; under a Cluster
 * every key must be in the fence record's hash slot (one hash tag, e.g. resource
 * key `"{job:7}"`, keys `"{job:7}:state"`), else INVALID_ARGUMENT with
 * `reason: 'CROSSSLOT'`, `index`, `slot`, `fenceSlot`, before anything is sent.
 * The verdict's `result` is the list of the commands' replies as the client gives
 * them. A command that answers an error rejects with CALLBACK_FAILED (`cause`:
 * an Error with `index`, `command`, `reply`): what earlier commands changed is put
 * back (DUMP/RESTORE, TTLs kept) and the fence is not written.
 */
export type RedisCommandList = readonly (readonly [string, ...RedisArgument[]])[];

/** Structural type of the ioredis client used (`Redis` or `Cluster`). */
export interface RedisClient {
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
  defineCommand(name: string, definition: { numberOfKeys?: number; lua: string }): void;
  config(op: 'GET', parameter: string): Promise<unknown>;
}

/**
 * Structural type of a node-redis client (npm `redis` ≥ 5, `createClient()`,
 * connected; RESP2 or RESP3). The store sends HMGET, SCRIPT LOAD, EVALSHA (EVAL
 * after NOSCRIPT) and CONFIG GET through `sendCommand`. A node-redis cluster
 * (`createCluster()`) is refused with INVALID_ARGUMENT; use an ioredis Cluster.
 */
export interface NodeRedisClient {
  sendCommand(args: string[]): Promise<unknown>;
}

/**
 * Before its first operation the store checks `maxmemory-policy` (every master
 * of a Cluster) and refuses to run under an evicting or unreadable policy
 * unless `allowEviction: true`.
 * @throws FencegateError INVALID_ARGUMENT for bad options (an unknown name included), or a client that is neither.
 */
export class RedisStore<V = unknown> {
  constructor(redis: RedisClient | NodeRedisClient, options?: RedisStoreOptions<V>);
  /**
   * Reads the policy now: `{ node, policy }` per master (`policy: null` when
   * unreadable under `allowEviction`). Call it after changing the server's
   * configuration; the automatic check runs once per store.
   * @throws FencegateError STORE_ERROR with `reason` EVICTION_POLICY / EVICTION_POLICY_UNKNOWN, or BAD_VERSION
   *   (`key`, `version`: a hash with a state whose `version` is not an integer ≥ 1; nothing written).
   */
  checkEvictionPolicy(): Promise<{ node: string; policy: string | null }[]>;
  /** The stored text of `value`; FencegateError INVALID_ARGUMENT (with `path`) when the codec refuses it. */
  encodeValue(value: V): string;
  /** The Redis key that holds `key`. */
  redisKey(key: string): string;
  load(key: string): Promise<{ state: string | undefined; version: string; value?: V } | null>;
  /** Errors other than a Redis error reply carry `commitUnknown: true`. */
  commit(key: string, expectedVersion: unknown, nextState: object, change: { kind: string; value?: V; encoded?: string }): Promise<boolean>;
  /**
   * The gate's state-cache commit, one script call (EVALSHA; NOSCRIPT falls back to EVAL): compares the stored state text with `expected.state` (the version is bumped, not compared: docs/decisions/one-round-trip-commits.md), writes, answers the new version. `{ version }` after the write, `false` when the record's
   * state text moved (or it has no version). The same error classes as `commit`.
   */
  commitFrom(key: string, expected: { version: unknown; state: string } | null, nextText: string, change: { kind: string; value?: V; encoded?: string }): Promise<{ version: string } | false>;
  /**
   * Gate.transaction's check of a body: throws FencegateError INVALID_ARGUMENT
   * (`index`: the command's place) unless `body` is a {@link RedisCommandList}
   * this store runs. Nothing is sent.
   */
  checkBody(body: unknown): void;
  /**
   * The own-data verb (`Gate.transaction(key, token, commands)`): one script
   * compares the fence hash's state text (the state cache's, else as just read),
   * runs the commands and writes the next fence state; a lost precondition runs
   * nothing (read, decide, send again; lost again: `conflict`, the gate retries).
   * `{ version }` of the fence hash written, or null when refused.
   * @throws FencegateError INVALID_ARGUMENT (a bad list, CROSSSLOT), STORE_ERROR
   *   (`reason` MOVED: a non-cluster client on a Cluster node; BAD_VERSION);
   *   errors other than an error reply carry `commitUnknown: true`.
   */
  fencedTransaction(key: string, step: FencedStep): Promise<{ version: string } | null>;
}
