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
function resending(client, { lose = 1, skip = 0, between = async () => {} } = {}) {
  let lost = 0;
  let commits = 0;
  const kv = {
    range: (req) => client.kv.range(req),
    txn: async (req) => {
      if (req.compare.length === 0 || lost >= lose || commits++ < skip) return client.kv.txn(req);
      await client.kv.txn(req); // lands (or loses its compare); the reply is dropped
      lost++;
      await between(lost);
      return client.kv.txn(req); // the client's resend of the same request
    },
  };
  return { kv };
}

function failing(client, error, { afterCommit = false, skip = 0 } = {}) {
  let commits = 0;
  return {
    kv: {
      range: (req) => client.kv.range(req),
      txn: async (req) => {
        if (req.compare.length === 0 || commits++ < skip) return client.kv.txn(req);
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

describe('etcd: commitFrom (the state cache, issue 14)', { skip }, () => {
  const modRevision = async (client, key) => (await client.get(key).exec()).kvs[0].mod_revision;

  test('create (expected null: create_revision 0), update, delete: each answers the mod_revision load returns next', async () => {
    await onPrefix('cf', async (client, prefix) => {
      const store = new EtcdStore(client, { prefix });
      const k = store.etcdKeys('k');
      const s5 = '{"v":1,"mark":"5"}';
      const created = await store.commitFrom('k', null, s5, { kind: 'set', value: 'a' });
      assert.deepEqual(created, { version: await modRevision(client, k.state) });
      assert.deepEqual(await store.load('k'), { state: s5, version: created.version, value: 'a' });
      assert.equal(await modRevision(client, k.value), created.version); // state, value and commit id: one Txn, one revision
      assert.equal(await modRevision(client, k.commit), created.version);
      // a second create finds the key: false, nothing written
      assert.equal(await store.commitFrom('k', null, '{"v":1,"mark":"9"}', { kind: 'set', value: 'z' }), false);
      assert.deepEqual(await store.load('k'), { state: s5, version: created.version, value: 'a' });
      const s7 = '{"v":1,"mark":"7"}';
      const updated = await store.commitFrom('k', { version: created.version, state: s5 }, s7, { kind: 'none' });
      assert.ok(BigInt(updated.version) > BigInt(created.version));
      assert.deepEqual(await store.load('k'), { state: s7, version: updated.version, value: 'a' });
      const deleted = await store.commitFrom('k', { version: updated.version, state: s7 }, s7, { kind: 'delete' });
      assert.deepEqual(await store.load('k'), { state: s7, version: deleted.version, value: undefined });
      assert.equal(await client.get(k.value).string(), null);
    });
  });

  test('the precondition is the mod_revision AND the state text: either one differing is false, nothing written', async () => {
    await onPrefix('cf-pre', async (client, prefix) => {
      const store = new EtcdStore(client, { prefix });
      const s5 = '{"v":1,"mark":"5"}';
      const { version } = await store.commitFrom('k', null, s5, { kind: 'set', value: 'a' });
      const before = await store.load('k');
      // the stored mod_revision with another state text (a restore that reused the revision): refused
      assert.equal(await store.commitFrom('k', { version, state: '{"v":1,"mark":"2"}' }, '{"v":1,"mark":"3"}', { kind: 'set', value: 'b' }), false);
      // the stored text with an older revision: refused
      assert.equal(await store.commitFrom('k', { version: String(BigInt(version) - 1n), state: s5 }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'c' }), false);
      // a key that does not exist: refused (its mod_revision is 0)
      assert.equal(await store.commitFrom('none', { version, state: s5 }, '{"v":1,"mark":"6"}', { kind: 'set', value: 'c' }), false);
      assert.deepEqual(await store.load('k'), before);
      assert.equal(await store.load('none'), null);
    });
  });

  test('a malformed precondition is INVALID_ARGUMENT and sends nothing', async () => {
    let sent = 0;
    const store = new EtcdStore({ kv: { txn: async () => (sent++, { succeeded: true, responses: [] }), range: async () => ({ kvs: [] }) } });
    for (const [expected, message] of [
      [{ version: '-1', state: '{}' }, 'expected.version must be a mod_revision, got "-1"'],
      [{ version: '12a', state: '{}' }, 'expected.version must be a mod_revision, got "12a"'],
      [{ version: undefined, state: '{}' }, 'expected.version must be a mod_revision, got "undefined"'],
      [{ version: '12', state: { v: 1 } }, 'expected.state must be the state text, got object'],
    ]) {
      await assert.rejects(store.commitFrom('k', expected, '{"v":1,"mark":"1"}', { kind: 'none' }), (e) => e instanceof FencegateError && e.code === 'INVALID_ARGUMENT' && e.message === message);
    }
    assert.equal(sent, 0);
  });

  test('a Txn that commits but whose response has no revision is COMMIT_UNKNOWN (the cache never keeps a guessed version)', async () => {
    const store = new EtcdStore({ kv: { txn: async () => ({ succeeded: true, responses: [] }), range: async () => ({ kvs: [] }) } });
    await assert.rejects(store.commitFrom('k', null, '{"v":1,"mark":"1"}', { kind: 'none' }), (e) => e.commitUnknown === true && /no revision/.test(e.message));
    assert.equal(await store.commit('k', null, { v: 1, mark: '1' }, { kind: 'none' }), true); // commit answers true/false only
  });

  test('a cached write whose reply was lost and whose resend failed its compare: found by its commit id, advance, and the cached version is the stored one', async () => {
    await onPrefix('cf-resend', async (client, prefix) => {
      const sent = [];
      const other = new Gate(new EtcdStore(client, { prefix }), { stateCache: 0 });
      const lossy = resending(client, { skip: 1, between: async () => { await other.write('k', 5, 'o1'); await other.write('k', 5, 'o2'); } });
      const kv = { range: (req) => (sent.push('range'), lossy.kv.range(req)), txn: (req) => (sent.push(req.compare.length === 0 ? 'load' : 'commit'), lossy.kv.txn(req)) };
      const store = new EtcdStore({ kv }, { prefix });
      const gate = new Gate(store);
      assert.deepEqual(await gate.write('k', 3, 'v3'), { key: 'k', ok: true, outcome: 'advance', code: null, token: 3, markBefore: 0, markAfter: 3 });
      sent.length = 0;
      // cached mark 3: token 5 commits (reply lost), another writer accepts 5 twice, the resend fails its compare
      assert.deepEqual(await gate.write('k', 5, 'v5'), { key: 'k', ok: true, outcome: 'advance', code: null, token: 5, markBefore: 3, markAfter: 5 });
      assert.deepEqual(sent, ['commit', 'range', 'range']); // the Txn (resent by the client below), two steps back to its own commit id
      assert.deepEqual(await other.read('k'), { mark: 5, value: 'o2', hasValue: true });
      // the cached version is the revision of the Txn that landed, older than the record now: the next write loses its precondition once
      sent.length = 0;
      assert.deepEqual(await gate.write('k', 5, 'v5b'), { key: 'k', ok: true, outcome: 'accept', code: null, token: 5, markBefore: 5, markAfter: 5 });
      // (no walk: the resend's response told the store a revision past the other writer's commits, so its own Txn cannot be among them)
      assert.deepEqual(sent, ['commit', 'load', 'commit']);
      sent.length = 0;
      assert.equal((await gate.write('k', 6, 'v6')).outcome, 'advance');
      assert.deepEqual(sent, ['commit']);
      assert.equal((await store.load('k')).version, (await client.get(store.etcdKeys('k').state).exec()).kvs[0].mod_revision);
    });
  });

  test('another process advances the key between two cached writes: one failed Txn, one load, STALE_TOKEN, nothing stored', async () => {
    await onPrefix('cf-stale', async (client, prefix) => {
      const sent = [];
      const kv = { range: (req) => (sent.push('range'), client.kv.range(req)), txn: (req) => (sent.push(req.compare.length === 0 ? 'load' : 'commit'), client.kv.txn(req)) };
      const gate = new Gate(new EtcdStore({ kv }, { prefix }));
      const otherClient = await etcdClient();
      try {
        const other = new Gate(new EtcdStore(otherClient, { prefix })); // another process: its own client and store
        assert.equal((await gate.write('k', 5, 'a')).outcome, 'advance');
        assert.equal((await other.write('k', 8, 'b')).outcome, 'advance');
        sent.length = 0;
        assert.deepEqual(await gate.write('k', 6, 'late'), { key: 'k', ok: false, outcome: 'reject', code: 'STALE_TOKEN', token: 6, markBefore: 8, markAfter: 8 });
        // the failed Txn, one step back through the commit ids (the other writer's) to the cached revision, the load
        assert.deepEqual(sent, ['commit', 'range', 'load']);
        assert.deepEqual(await other.read('k'), { mark: 8, value: 'b', hasValue: true });
      } finally {
        otherClient.close();
      }
    });
  });
});

describe('etcd: a cached write after more than 64 commits by another process (known limit)', { skip }, () => {
  test('the failed Txn cannot rule out its own resent commit: COMMIT_UNKNOWN, nothing written; the retry loads and decides', async () => {
    await onPrefix('cf-long', async (client, prefix) => {
      let ranges = 0;
      const kv = { txn: (req) => client.kv.txn(req), range: (req) => (ranges++, client.kv.range(req)) };
      const gate = new Gate(new EtcdStore({ kv }, { prefix }));
      const otherClient = await etcdClient();
      try {
        const other = new Gate(new EtcdStore(otherClient, { prefix }));
        assert.equal((await gate.write('k', 5, 'a')).outcome, 'advance');
        for (let i = 0; i < 70; i++) await other.write('k', 6, `o${i}`);
        // the walk back through the commit ids stops after 64 steps without reaching the cached revision
        const e = await gate.write('k', 7, 'x').then(() => null, (x) => x);
        assert.equal(e.code, 'COMMIT_UNKNOWN');
        assert.equal(ranges, 64);
        assert.deepEqual(await other.read('k'), { mark: 6, value: 'o69', hasValue: true });
        // the documented retry (same operation, same token) loads: advance 6 → 7
        assert.deepEqual(await gate.write('k', 7, 'x'), { key: 'k', ok: true, outcome: 'advance', code: null, token: 7, markBefore: 6, markAfter: 7 });
      } finally {
        otherClient.close();
      }
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
    for (const options of [{}, { stateCache: 0 }]) {
      test(`${name}: ${code} (${options.stateCache === 0 ? 'commit' : 'commitFrom'})`, async () => {
        await onPrefix('errors', async (client, prefix) => {
          const gate = new Gate(new EtcdStore(failing(client, error, { afterCommit }), { prefix }), options);
          const e = await gate.write('k', 4, 'landed').then(() => null, (x) => x);
          assert.ok(e instanceof FencegateError);
          assert.equal(e.code, code);
          const plain = new Gate(new EtcdStore(client, { prefix }));
          assert.deepEqual(await plain.read('k'), stored === null ? { mark: 0, value: undefined, hasValue: false } : { mark: 4, value: stored, hasValue: true });
        });
      });
    }
    test(`${name} on a cached write (no load before it): ${code}; the next write loads`, async () => {
      await onPrefix('errors-cached', async (client, prefix) => {
        const sent = [];
        const broken = failing(client, error, { afterCommit, skip: 1 });
        const kv = {
          range: (req) => broken.kv.range(req),
          txn: (req) => (sent.push(req.compare.length === 0 ? 'load' : 'commit'), broken.kv.txn(req)),
        };
        const gate = new Gate(new EtcdStore({ kv }, { prefix }));
        assert.equal((await gate.write('k', 3, 'first')).outcome, 'advance');
        sent.length = 0;
        const e = await gate.write('k', 4, 'landed').then(() => null, (x) => x);
        assert.ok(e instanceof FencegateError);
        assert.equal(e.code, code);
        assert.deepEqual(sent, ['commit']);
        const plain = new Gate(new EtcdStore(client, { prefix }));
        assert.deepEqual(await plain.read('k'), stored === null ? { mark: 3, value: 'first', hasValue: true } : { mark: 4, value: stored, hasValue: true });
        // the failure dropped the cached state: the retry of the same write loads first (and meets the same fault)
        sent.length = 0;
        assert.equal((await gate.write('k', 4, 'retried').then(() => null, (x) => x)).code, code);
        assert.deepEqual(sent, ['load', 'commit']);
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
    assert.throws(() => new EtcdStore({ kv: { txn() {} } }, null), refused('INVALID_ARGUMENT', 'EtcdStore options must be a plain object, got null'));
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
