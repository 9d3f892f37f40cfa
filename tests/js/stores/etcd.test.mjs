// fencegate/etcd on a real 3-member cluster (scripts/etcd-cluster.sh): the
// etcd3 client's resend of a Txn whose reply was lost, how errors map to
// STORE_ERROR / COMMIT_UNKNOWN, the Issuer over the store, and a leader member
// killed between writes.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GRPCUnavailableError, GRPCDeadlineExceededError, GRPCInvalidArgumentError, EtcdPermissionDeniedError } from 'etcd3';
import { Gate, Issuer, FencegateError } from '../../../pkg/node.mjs';
import { EtcdStore } from '../../../pkg/adapters/etcd.mjs';
import { ETCD_URLS, etcdClient, uniqueKey } from './targets.mjs';
import { leaseIdOf } from '../issuer/lease-id.mjs';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const skip = !ETCD_URLS && 'FENCEGATE_ETCD_URLS is not set (scripts/etcd-cluster.sh start)';

/** Runs `fn(client, prefix)` on a fresh etcd client and a unique key prefix; then deletes the prefix and closes the client. */
async function onPrefix(name, fn) {
  const client = await etcdClient();
  const prefix = `${uniqueKey(name)}/`;
  try {
    await fn(client, prefix);
  } finally {
    await client.delete().prefix(prefix);
    client.close();
  }
}

/**
 * A client whose `kv.txn` behaves like etcd3's retry after a lost reply:
 * the first `lose` commit Txns are sent, land (or not), and their reply is
 * dropped; the same request is then sent again and that answer returned.
 * `between(n)` runs after the n-th lost reply, before the resend (another writer).
 */
function resending(client, { lose = 1, between = async () => {} } = {}) {
  let lost = 0;
  const kv = {
    range: (req) => client.kv.range(req),
    txn: async (req) => {
      if (req.compare.length === 0 || lost >= lose) return client.kv.txn(req);
      await client.kv.txn(req); // lands (or loses its compare); the reply is dropped
      lost++;
      await between(lost);
      return client.kv.txn(req); // the client's resend of the same request
    },
  };
  return { kv };
}

function failing(client, error, { afterCommit = false } = {}) {
  return {
    kv: {
      range: (req) => client.kv.range(req),
      txn: async (req) => {
        if (req.compare.length === 0) return client.kv.txn(req);
        if (afterCommit) await client.kv.txn(req);
        throw error;
      },
    },
  };
}

describe('etcd: a Txn resent after a lost reply', { skip }, () => {
  test('the resend fails its compare against its own write: the store answers true, the verdict is advance', async () => {
    await onPrefix('resend', async (client, prefix) => {
      const gate = new Gate(new EtcdStore(resending(client), { prefix }));
      assert.deepEqual(await gate.write('k', 5, 'v5'), { key: 'k', ok: true, outcome: 'advance', code: null, token: 5, markBefore: 0, markAfter: 5 });
      const plain = new Gate(new EtcdStore(client, { prefix }));
      assert.deepEqual(await plain.read('k'), { mark: 5, value: 'v5', hasValue: true });
    });
  });

  test('another writer commits between the lost reply and the resend: still true (found by walking back the commit ids)', async () => {
    await onPrefix('resend-between', async (client, prefix) => {
      const other = new Gate(new EtcdStore(client, { prefix }));
      await other.write('k', 3, 'v3');
      const gate = new Gate(
        new EtcdStore(resending(client, { between: async () => { await other.write('k', 9, 'v9'); await other.write('k', 9, 'v9b'); } }), { prefix }),
      );
      // 5 lands over 3 (reply lost); 9 and 9 again land; the resend of 5's Txn fails its compare.
      assert.deepEqual(await gate.write('k', 5, 'v5'), { key: 'k', ok: true, outcome: 'advance', code: null, token: 5, markBefore: 3, markAfter: 5 });
      assert.deepEqual(await other.read('k'), { mark: 9, value: 'v9b', hasValue: true });
    });
  });

  test('a Txn that lost its compare on the first send, resent: false, and the gate decides again (STALE_TOKEN)', async () => {
    await onPrefix('resend-lost', async (client, prefix) => {
      const plainStore = new EtcdStore(client, { prefix });
      const other = new Gate(plainStore);
      await other.write('k', 3, 'v3');
      const loaded = await plainStore.load('k');
      await other.write('k', 8, 'v8');
      const store = new EtcdStore(resending(client), { prefix });
      assert.equal(await store.commit('k', loaded.version, { v: 1, mark: '5' }, { kind: 'set', value: 'v5' }), false);
      assert.deepEqual(await other.read('k'), { mark: 8, value: 'v8', hasValue: true });
      const gate = new Gate(new EtcdStore(resending(client), { prefix }));
      assert.deepEqual(await gate.write('k', 5, 'v5'), { key: 'k', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 5, markBefore: 8, markAfter: 8 });
    });
  });
});

describe('etcd: errors during a commit', { skip }, () => {
  const cases = [
    ['UNAVAILABLE after the Txn landed', new GRPCUnavailableError('14 UNAVAILABLE: connection reset'), true, 'COMMIT_UNKNOWN', 'landed'],
    ['UNAVAILABLE before it was sent', new GRPCUnavailableError('14 UNAVAILABLE: no connection'), false, 'COMMIT_UNKNOWN', null],
    ['DEADLINE_EXCEEDED', new GRPCDeadlineExceededError('4 DEADLINE_EXCEEDED'), false, 'COMMIT_UNKNOWN', null],
    ['a plain Error (socket closed)', new Error('socket hang up'), false, 'COMMIT_UNKNOWN', null],
    ['INVALID_ARGUMENT (request too large)', new GRPCInvalidArgumentError('etcdserver: request is too large'), false, 'STORE_ERROR', null],
    ['permission denied', new EtcdPermissionDeniedError('etcdserver: permission denied'), false, 'STORE_ERROR', null],
  ];
  for (const [name, error, afterCommit, code, stored] of cases) {
    test(`${name}: ${code}`, async () => {
      await onPrefix('errors', async (client, prefix) => {
        const gate = new Gate(new EtcdStore(failing(client, error, { afterCommit }), { prefix }));
        const e = await gate.write('k', 4, 'landed').then(() => null, (x) => x);
        assert.ok(e instanceof FencegateError);
        assert.equal(e.code, code);
        const plain = new Gate(new EtcdStore(client, { prefix }));
        assert.deepEqual(await plain.read('k'), stored === null ? { mark: 0, value: undefined, hasValue: false } : { mark: 4, value: stored, hasValue: true });
      });
    });
  }
});

describe('etcd: store layout and refusals', { skip }, () => {
  test('state, value and commit id keys; a delete removes the value key and keeps the state', async () => {
    await onPrefix('layout', async (client, prefix) => {
      const store = new EtcdStore(client, { prefix });
      const gate = new Gate(store);
      await gate.write('a/b', 7, { n: 1 });
      const k = store.etcdKeys('a/b');
      assert.deepEqual(k, { state: `${prefix}s/a/b`, value: `${prefix}v/a/b`, commit: `${prefix}c/a/b` });
      assert.equal(await client.get(k.state).string(), '{"v":1,"mark":"7"}');
      assert.equal(await client.get(k.value).string(), '{"n":1}');
      assert.match(await client.get(k.commit).string(), /^[0-9a-f]{32}$/);
      const rev = (await client.get(k.state).exec()).kvs[0].mod_revision;
      assert.deepEqual(await store.load('a/b'), { state: '{"v":1,"mark":"7"}', version: rev, value: { n: 1 } });
      assert.deepEqual(await gate.delete('a/b', 7), { key: 'a/b', ok: true, outcome: 'accept', code: null, token: 7, markBefore: 7, markAfter: 7 });
      assert.equal(await client.get(k.value).string(), null);
      assert.equal(await client.get(k.state).string(), '{"v":1,"mark":"7"}');
      assert.equal(await store.load('never'), null);
    });
  });

  for (const [size, what] of [[1.7, 'INVALID_ARGUMENT request is too large'], [2.5, 'RESOURCE_EXHAUSTED over the gRPC message limit']]) {
    test(`a ${size} MiB value (${what}) is STORE_ERROR and nothing is written`, async () => {
      await onPrefix('big', async (client, prefix) => {
        const gate = new Gate(new EtcdStore(client, { prefix }));
        const e = await gate.write('k', 2, 'x'.repeat(Math.round(size * 1024 * 1024))).then(() => null, (x) => x);
        assert.ok(e instanceof FencegateError);
        assert.equal(e.code, 'STORE_ERROR');
        assert.match(e.message, size < 2 ? /request is too large/ : /RESOURCE_EXHAUSTED/);
        assert.deepEqual(await gate.read('k'), { mark: 0, value: undefined, hasValue: false });
      });
    });
  }

  test('constructor refusals', () => {
    const refused = (code, message) => (e) => e instanceof FencegateError && e.code === code && e.message === message;
    assert.throws(() => new EtcdStore({}), refused('INVALID_ARGUMENT', 'EtcdStore needs an etcd3 client (new Etcd3(...))'));
    assert.throws(() => new EtcdStore(null), refused('INVALID_ARGUMENT', 'EtcdStore needs an etcd3 client (new Etcd3(...))'));
    assert.throws(() => new EtcdStore({ kv: { txn() {} } }, null), refused('INVALID_ARGUMENT', 'EtcdStore options must be an object'));
    assert.throws(() => new EtcdStore({ kv: { txn() {} } }, { prefix: 1 }), refused('INVALID_ARGUMENT', 'prefix must be a string'));
    assert.throws(() => new EtcdStore({ kv: { txn() {} } }, { encode: String }), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT');
  });
});

describe('etcd: Issuer over the store', { skip }, () => {
  test('epochs 1, 2 across holders; the old holder is fenced out of a gate on the same store', async () => {
    await onPrefix('issuer', async (client, prefix) => {
      const store = new EtcdStore(client, { prefix });
      const issuer = new Issuer(store);
      const gate = new Gate(store);
      const a = await issuer.acquire({ scope: 's', holder: 'a', ttlMs: 1000, now: 1000, requestId: 'ra' });
      assert.deepEqual([a.ok, a.epoch], [true, 1]);
      assert.match(a.leaseId, leaseIdOf(1, 's')); // a random lease id (issue 20), stored with the lease
      assert.equal(JSON.parse(await client.get(`${prefix}s/issuer:s`).string()).lease.id, a.leaseId);
      const held = await issuer.acquire({ scope: 's', holder: 'b', ttlMs: 1000, now: 1500, requestId: 'rb' });
      assert.deepEqual([held.ok, held.code, held.holder], [false, 'LEASE_HELD', 'a']);
      await gate.write('doc', a.epoch, 'by a');
      const b = await issuer.acquire({ scope: 's', holder: 'b', ttlMs: 1000, now: 2001, requestId: 'rb2' });
      assert.deepEqual([b.ok, b.epoch], [true, 2]);
      assert.equal((await issuer.release({ scope: 's', leaseId: b.leaseId, holder: 'a' })).code, 'LEASE_NOT_HELD'); // b's lease, not a's to end
      assert.equal((await gate.establish('doc', b.epoch)).outcome, 'advance');
      assert.equal((await gate.write('doc', a.epoch, 'late a')).code, 'STALE_TOKEN');
      assert.deepEqual(await gate.read('doc'), { mark: 2, value: 'by a', hasValue: true });
      assert.equal(JSON.parse(await client.get(`${prefix}s/issuer:s`).string()).epoch, '2');
    });
  });
});

describe('etcd: the leader member killed between writes', { skip: skip || (!process.env.FENCEGATE_ETCD_DIR && 'FENCEGATE_ETCD_DIR is not set (scripts/with-services.sh)') }, () => {
  test('acknowledged marks and values survive; writes go on through the other members; the member rejoins', async () => {
    const dir = process.env.FENCEGATE_ETCD_DIR;
    const script = join(root, 'scripts/etcd-cluster.sh');
    const sh = (...args) => execFileSync('bash', [script, ...args], { encoding: 'utf8' }).trim();
    const client = await etcdClient();
    const prefix = `${uniqueKey('leader')}/`;
    const leader = sh('leader', dir);
    try {
      const gate = new Gate(new EtcdStore(client, { prefix }));
      assert.equal((await gate.write('k', 10, 'before')).outcome, 'advance');
      sh('stop-member', dir, leader);
      assert.throws(() => readFileSync(join(dir, `m${leader}.pid`)), { code: 'ENOENT' });
      let v;
      for (let attempt = 0; ; attempt++) {
        // a new leader is elected within the election timeout (500 ms here)
        v = await gate.write('k', 11, 'after').catch((e) => e);
        if (!(v instanceof Error) || attempt >= 40) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.deepEqual(v, { key: 'k', ok: true, outcome: 'advance', code: null, token: 11, markBefore: 10, markAfter: 11 });
      assert.equal((await gate.write('k', 10, 'stale')).code, 'STALE_TOKEN');
      assert.deepEqual(await gate.read('k'), { mark: 11, value: 'after', hasValue: true });
    } finally {
      sh('start-member', dir, leader);
      await client.delete().prefix(prefix).catch(() => {});
      client.close();
    }
    // the member rejoins and serves the same record
    const only = new (await import('etcd3')).Etcd3({ hosts: readFileSync(join(dir, `m${leader}.url`), 'utf8').trim() });
    try {
      let health;
      for (let attempt = 0; attempt < 40; attempt++) {
        health = await only.maintenance.status().then(() => 'ok', (e) => e);
        if (health === 'ok') break;
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.equal(health, 'ok');
    } finally {
      only.close();
    }
  });
});
