// The two sides of a restore drill, each in its own store so each can be
// backed up and restored on its own:
//   sqlite  one database file per side; backup = copy the file (closed), restore = copy it back
//   redis   one key prefix per side; backup = DUMP every key, restore = delete the side's keys and RESTORE
// Issuer and Gate objects are made fresh after every restore (`h.issuer()`, `h.gate()`).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Issuer, Gate } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { RedisStore } from '../../../pkg/adapters/redis.mjs';

const require = createRequire(import.meta.url);

class SqliteSide {
  constructor(file) {
    this.file = file;
    this.open();
  }

  open() {
    const Database = require('better-sqlite3');
    this.db = new Database(this.file, { timeout: 5000 });
    this.store = new SqliteStore(this.db);
  }

  async backup() {
    this.db.close();
    const copy = `${this.file}.${Math.random().toString(36).slice(2)}.bak`;
    fs.copyFileSync(this.file, copy);
    this.open();
    return copy;
  }

  async restore(copy) {
    this.db.close();
    fs.copyFileSync(copy, this.file);
    this.open();
  }

  /** The host lost this key's record (deleted outside the gate). */
  async lose(key) {
    this.db.prepare('DELETE FROM fencegate WHERE key = ?').run(key);
  }

  async close() {
    this.db.close();
  }
}

class RedisSide {
  constructor(client, prefix) {
    this.client = client;
    this.prefix = prefix;
    this.store = new RedisStore(client, { prefix });
  }

  async keys() {
    return this.client.keys(`${this.prefix}*`);
  }

  async backup() {
    const dump = new Map();
    for (const key of await this.keys()) dump.set(key, await this.client.dumpBuffer(key));
    return dump;
  }

  async restore(dump) {
    const now = await this.keys();
    if (now.length > 0) await this.client.del(...now);
    for (const [key, bytes] of dump) await this.client.restore(key, 0, bytes, 'REPLACE');
  }

  async lose(key) {
    await this.client.del(this.prefix + key);
  }

  async close() {}
}

/** Drill targets available here: `{ name, open() → { issuerSide, resourceSide, issuer(), gate(), close() } }`. */
export function targets() {
  const out = [];
  let sqlite = true;
  try {
    require.resolve('better-sqlite3');
  } catch {
    sqlite = false;
  }
  const need = process.env.FENCEGATE_REQUIRE_SERVICES === '1';
  if (sqlite || need) {
    out.push({
      name: 'sqlite',
      async open() {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fencegate-restore-'));
        return harness(new SqliteSide(path.join(dir, 'issuer.db')), new SqliteSide(path.join(dir, 'resources.db')), async () => {
          fs.rmSync(dir, { recursive: true, force: true });
        });
      },
    });
  }
  const url = process.env.FENCEGATE_REDIS_URL;
  if (need && !url) throw new Error('FENCEGATE_REQUIRE_SERVICES=1 but FENCEGATE_REDIS_URL is missing');
  if (url) {
    out.push({
      name: 'redis',
      async open() {
        const { default: Redis } = await import('ioredis');
        const client = new Redis(url, { maxRetriesPerRequest: 2 });
        const run = `fg-restore-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
        const issuerSide = new RedisSide(client, `${run}-issuer:`);
        const resourceSide = new RedisSide(client, `${run}-res:`);
        return harness(issuerSide, resourceSide, async () => {
          const left = [...(await issuerSide.keys()), ...(await resourceSide.keys())];
          if (left.length > 0) await client.del(...left);
          client.disconnect();
        });
      },
    });
  }
  return out;
}

function harness(issuerSide, resourceSide, cleanup) {
  return {
    issuerSide,
    resourceSide,
    issuer: () => new Issuer(issuerSide.store),
    gate: () => new Gate(resourceSide.store),
    async close() {
      await issuerSide.close();
      await resourceSide.close();
      await cleanup();
    },
  };
}
