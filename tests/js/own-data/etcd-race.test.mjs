// The caller's own keys on etcd under races (docs/stores.md "Your own data on etcd"), on the
// real 3-member cluster of scripts/with-services.sh:
//   - the bank race: 4 OS processes (etcd-bank-worker.mjs), each with its own client, move
//     money between account keys with gate.transaction, 2 with epoch 10 and, a little later, 2
//     with epoch 20; the bodies' puts and compares join the fence's Txn. The exact checks of
//     bank-check.mjs, the commit order read from each transfer record's create_revision.
//   - the own-data conformance cases (OWN_CASES, optimistic: etcd checks at commit) against
//     EtcdStore and two liars: one whose Txn drops the compare of the fence state it decided on
//     (etcd's check outside the transaction: the range it read is not part of what commits),
//     and one that puts the body's keys in a Txn of their own before the decision
//     (liars.mjs statementsFirst). Each lie fails the case named in CAUGHT_BY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Etcd3 } from 'etcd3';
import { EtcdStore } from '../../../pkg/adapters/etcd.mjs';
import { runOwnCases, ownCaseNames } from '../stores/run-cases.mjs';
import { statementsFirst, wrapStore, CAUGHT_BY } from './liars.mjs';
import { bankPlan, checkBank } from './bank-check.mjs';
import { runProcs } from './bank-procs.mjs';

const ETCD_URLS = process.env.FENCEGATE_ETCD_URLS;
const skip = !ETCD_URLS && 'FENCEGATE_ETCD_URLS is not set (scripts/with-services.sh)';
const WORKER = fileURLToPath(new URL('./etcd-bank-worker.mjs', import.meta.url));
const ACCOUNTS = 6;
const START = 1000;
const OPS = 30;

async function withEtcd(f) {
  const client = new Etcd3({ hosts: ETCD_URLS.split(',') });
  const ns = `race-${randomBytes(6).toString('hex')}/`;
  try {
    return await f(client, ns);
  } finally {
    await client.delete().prefix(ns);
    client.close();
  }
}

test('etcd bank race: 4 processes (2 at epoch 10, 2 later at epoch 20) move money between their own keys in the fence\'s Txn', { skip }, (t) => withEtcd(async (client, ns) => {
  for (let i = 1; i <= ACCOUNTS; i++) await client.put(`${ns}acct/${i}`).value(String(START));
  const plan = bankPlan({ perEpoch: 2, paceMs: 15, freshDelayMs: 250 });
  const outcomes = await runProcs(plan.map((p, w) => [process.execPath, [WORKER, JSON.stringify({ urls: ETCD_URLS, ns, worker: w, ops: OPS, accounts: ACCOUNTS, seed: 7 + w * 101, ...p })]]));
  const balances = [];
  for (let i = 1; i <= ACCOUNTS; i++) balances.push(Number(await client.get(`${ns}acct/${i}`).string()));
  const kvs = (await client.getAll().prefix(`${ns}transfer/`).exec()).kvs;
  // the commit order: each record's create_revision is its Txn's revision, one per Txn
  const revisions = kvs.map((kv) => BigInt(kv.create_revision)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  assert.equal(new Set(revisions).size, kvs.length, 'each transfer record was created by a Txn of its own');
  const rows = kvs.map((kv) => ({ ...JSON.parse(kv.value.toString()), seq: revisions.indexOf(BigInt(kv.create_revision)) + 1 }));
  const stats = checkBank(assert, { plan, outcomes, rows, balances, accounts: ACCOUNTS, start: START });
  t.diagnostic(JSON.stringify(stats));
}));

/** EtcdStore with its own data under `ns` for OWN_CASES: `variant` 'honest', 'checkOutside' or 'statementsFirst'. */
function target(variant) {
  return {
    shape: 'cas',
    async open() {
      const client = new Etcd3({ hosts: ETCD_URLS.split(',') });
      const ns = `own-race-${randomBytes(6).toString('hex')}/`;
      const real = new EtcdStore(client, { prefix: `${ns}fence/` });
      const own = (id) => Buffer.from(`${ns}own/${id}`, 'utf8');
      /** A body's builder of puts (the store's shape: put, delete, compare) and the Txn operations it collected. */
      const builder = () => {
        const success = [];
        const compare = [];
        const tx = {
          put: (k, v) => (success.push({ request_put: { key: Buffer.from(k, 'utf8'), value: Buffer.from(String(v), 'utf8') } }), tx),
          delete: (k) => (success.push({ request_delete_range: { key: Buffer.from(k, 'utf8') } }), tx),
          compare: () => tx, // the liars drop the caller's compares too
        };
        return { tx, success, compare };
      };
      let store = real;
      if (variant === 'checkOutside') {
        // decided on a read outside the Txn; the Txn compares nothing and puts the decision
        store = wrapStore(real, {
          async fencedTransaction(key, step) {
            const record = await real.load(key);
            const plan = step.decide(record === null ? null : record.state);
            if (plan === null) return null;
            const b = builder();
            await step.run(b.tx);
            const r = await client.kv.txn({
              compare: [],
              success: [{ request_put: { key: Buffer.from(real.etcdKeys(key).state, 'utf8'), value: Buffer.from(plan.nextStateText, 'utf8') } }, ...b.success],
              failure: [],
            });
            return { version: String(r.header.revision) };
          },
        });
      } else if (variant === 'statementsFirst') {
        store = statementsFirst(real, async (run) => {
          const b = builder();
          await run(b.tx);
          await client.kv.txn({ compare: [], success: b.success, failure: [] });
        });
      }
      return {
        store,
        raw: async (key) => {
          const k = real.etcdKeys(key);
          const [state, value] = await Promise.all([client.get(k.state).string(), client.get(k.value).string()]);
          return state === null && value === null ? null : { state, value };
        },
        own: {
          sync: false,
          optimistic: true,
          setup: (id) => client.put(own(id)).value('init'),
          write: (id, v, sleepMs = 0) => async (tx) => {
            if (sleepMs > 0) await new Promise((r) => setTimeout(r, sleepMs));
            tx.put(`${ns}own/${id}`, v);
            return 1;
          },
          read: (id) => client.get(own(id)).string(),
          other: async () => null,
        },
        close: async () => {
          await client.delete().prefix(ns);
          client.close();
        },
      };
    },
  };
}

const [CASE_1, CASE_RACE] = ownCaseNames();

test('etcd: the own-data cases pass on EtcdStore and catch both lies (a Txn without the fence compare; the body\'s puts before the decision)', { skip }, async () => {
  const honest = await runOwnCases(target('honest'));
  assert.deepEqual(honest.map((r) => [r.name, r.ok, r.message ?? null]), [[CASE_1, true, null], [CASE_RACE, true, null]]);

  const outside = await runOwnCases(target('checkOutside'));
  assert.equal(CAUGHT_BY.checkOutside, CASE_RACE);
  // writer 7 committed 5 → 7 first; writer 6's Txn, comparing nothing, then put 5 → 6 over it
  assert.deepEqual(outside.map((r) => [r.name, r.ok, r.assertion ?? null, r.error ?? null]), [
    [CASE_1, true, null, null],
    [CASE_RACE, false, true, 'writer 6 decided again on the mark 7 committed under it'],
  ]);

  const first = await runOwnCases(target('statementsFirst'));
  assert.equal(CAUGHT_BY.statementsFirst, CASE_1);
  assert.deepEqual(first.map((r) => [r.name, r.ok, r.assertion ?? null, r.error ?? null]), [
    [CASE_1, false, true, 'the body ran for the two calls that applied, not for the refused one'],
    // and writer 6's statement, run before its refusal, is the one in the data
    [CASE_RACE, false, true, 'the caller\'s data holds the statement of writer 7, the one that applied'],
  ]);
});
