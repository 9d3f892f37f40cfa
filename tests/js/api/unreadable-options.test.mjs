// Options objects that throw while fencegate reads them (a getter, a Proxy trap, a revoked
// Proxy; new-user trial): every call refuses with INVALID_ARGUMENT naming the cause, never the
// raw error without a code, and nothing changes (mark and value after). Members are read once,
// by the option check, and the checked copy is what is used (common.mjs checkOptions,
// adapters/support.mjs checkMembers, verdict.mjs metaOf).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { MemoryGate, Gate, Issuer, MemoryHostStore, mintToken, verifyToken, reconcile } from '../../../pkg/node.mjs';
import { SqliteStore } from '../../../pkg/adapters/sqlite.mjs';
import { readFencing } from '../../../pkg/integrations/http.mjs';

const boom = new Error('boom');
/** Hostile option objects: a throwing getter (own and inherited), a Proxy whose traps throw, a revoked Proxy. */
function hostile(name) {
  const own = {};
  Object.defineProperty(own, name, { enumerable: true, get() { throw boom; } });
  const inherited = Object.create(own);
  const traps = new Proxy({}, { ownKeys() { throw boom; }, get() { throw boom; }, has() { throw boom; } });
  const { proxy: revoked, revoke } = Proxy.revocable({}, {});
  revoke();
  return [['getter', own], ['inherited getter', inherited], ['throwing traps', traps], ['revoked proxy', revoked]];
}

/** Asserts `f()` throws (or rejects with) INVALID_ARGUMENT whose cause is `boom` or a TypeError (revoked proxy). */
async function refuses(f, label) {
  let error;
  try {
    await f();
  } catch (e) {
    error = e;
  }
  assert.ok(error, `${label}: no error`);
  assert.equal(error.code, 'INVALID_ARGUMENT', `${label}: ${error.message}`);
  assert.ok(error.cause === boom || error.cause instanceof TypeError, `${label}: cause ${error.cause}`);
}

test('MemoryGate: write/establish with options that throw are INVALID_ARGUMENT, nothing changes', async () => {
  const gate = new MemoryGate();
  gate.write('k', 5, 'five');
  for (const name of ['opId', 'holder', 'fingerprint']) {
    for (const [kind, options] of hostile(name)) {
      await refuses(() => gate.write('k', 6, 'six', options), `write ${name} ${kind}`);
      await refuses(() => gate.establish('k', 7, options), `establish ${name} ${kind}`);
      assert.deepEqual(gate.read('k'), { mark: 5, value: 'five', hasValue: true });
    }
  }
  for (const [kind, options] of hostile('sameEpoch')) await refuses(() => new MemoryGate(options), `constructor ${kind}`);
});

test('Gate: constructor and write options that throw are INVALID_ARGUMENT, nothing changes', async () => {
  const store = new MemoryHostStore();
  const gate = new Gate(store);
  await gate.write('k', 5, 'five');
  for (const [kind, options] of hostile('opId')) {
    await refuses(() => gate.write('k', 6, 'six', options), `write ${kind}`);
    await refuses(() => gate.delete('k', 6, options), `delete ${kind}`);
    assert.deepEqual(await gate.read('k'), { mark: 5, value: 'five', hasValue: true });
  }
  for (const [kind, options] of hostile('stateCache')) await refuses(() => new Gate(store, options), `constructor ${kind}`);
});

test('Issuer, mintToken, verifyToken, reconcile, SqliteStore, readFencing: options that throw are INVALID_ARGUMENT', async () => {
  const store = new MemoryHostStore();
  for (const [kind, options] of hostile('clock')) await refuses(() => new Issuer(store, options), `Issuer ${kind}`);
  const issuer = new Issuer(store);
  for (const [kind, args] of hostile('scope')) {
    await refuses(() => issuer.acquire(args), `acquire ${kind}`);
    await refuses(() => mintToken(args, { kid: 'k1', hmac: new Uint8Array(32) }), `mintToken claims ${kind}`);
    await refuses(() => verifyToken('fg1.x.y', args), `verifyToken ${kind}`);
  }
  for (const [kind, options] of hostile('scopes')) await refuses(() => reconcile(options), `reconcile ${kind}`);
  for (const [kind, key] of hostile('kid')) await refuses(() => mintToken({ scope: 's', epoch: 1 }, key), `mintToken key ${kind}`);
  assert.equal((await issuer.current('s')).epoch, 0); // nothing was handed out
  const db = new Database(':memory:');
  try {
    for (const [kind, options] of hostile('table')) await refuses(() => new SqliteStore(db, options), `SqliteStore ${kind}`);
  } finally {
    db.close();
  }
  for (const [kind, names] of hostile('token')) await refuses(() => readFencing({ headers: {} }, names), `readFencing ${kind}`);
});
