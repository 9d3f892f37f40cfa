/**
 * fencegate/redis — a compare-and-set host store on Redis (ioredis ≥ 5).
 * Each key is a hash `<prefix><key>` with fields `state`, `value`, `version`;
 * commits run a Lua script that compares the version and writes state and
 * value together. Use with `new Gate(new RedisStore(redis))`.
 */
export interface RedisStoreOptions<V = unknown> {
  /** Key prefix; default `"fencegate:"`. */
  prefix?: string;
  encode?(value: V): string;
  decode?(text: string): V;
}

/** Structural type of the ioredis client used (`Redis` or `Cluster`). */
export interface RedisClient {
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void;
}

export class RedisStore<V = unknown> {
  constructor(redis: RedisClient, options?: RedisStoreOptions<V>);
  /** The Redis key that holds `key`. */
  redisKey(key: string): string;
  load(key: string): Promise<{ state: string | undefined; version: string; value?: V } | null>;
  /** Errors other than a Redis error reply carry `commitUnknown: true`. */
  commit(key: string, expectedVersion: unknown, nextState: object, change: { kind: string; value?: V }): Promise<boolean>;
}
