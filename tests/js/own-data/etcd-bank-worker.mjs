// One OS process of the etcd bank-transfer race (etcd-race.test.mjs; the line protocol of
// bank-procs.mjs, its config as JSON in the last argument): its own etcd3 client on
// every member, one token (its epoch), `ops` transfers with gate.transaction on one fence key.
// The body reads the two accounts, compares their mod_revisions, puts both and a record of
// itself (worker, op, token) in the fence's one Txn. Prints every op's outcome, the
// verdict (ok or refused) or the error code, as its last line.
import { Etcd3 } from 'etcd3';
import { Gate } from '../../../pkg/node.mjs';
import { EtcdStore } from '../../../pkg/adapters/etcd.mjs';
import { transfers } from './bank-check.mjs';
import { go } from './bank-procs.mjs';

const { urls, ns, worker, token, ops, accounts, delayMs, paceMs, seed } = JSON.parse(process.argv.at(-1));
const client = new Etcd3({ hosts: urls.split(',') });
const gate = new Gate(new EtcdStore(client, { prefix: `${ns}fence/` }), { maxRetries: 500 });
const pick = transfers(seed, accounts);
const acct = (i) => `${ns}acct/${i}`;
const body = (i, [src, dst, amount]) => async (tx) => {
  const [a, b] = await Promise.all([client.get(acct(src)).exec(), client.get(acct(dst)).exec()]);
  const [ka, kb] = [a.kvs[0], b.kvs[0]];
  tx.compare(acct(src), 'mod', '==', ka.mod_revision).compare(acct(dst), 'mod', '==', kb.mod_revision)
    .put(acct(src), String(Number(ka.value.toString()) - amount))
    .put(acct(dst), String(Number(kb.value.toString()) + amount))
    .put(`${ns}transfer/${worker}/${i}`, JSON.stringify({ worker, op: i, token }));
  return amount;
};
const started = go();
await client.get(acct(1)).exec(); // connected
console.log('ready');
await started;
if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
const outcomes = [];
for (let i = 0; i < ops; i++) {
  if (paceMs > 0) await new Promise((r) => setTimeout(r, paceMs));
  const t = pick.next();
  try {
    const v = await gate.transaction('bank/ledger', token, body(i, t), { opId: `w${worker}-${i}` });
    outcomes.push({ i, ok: v.ok && v.outcome !== 'duplicate', outcome: v.outcome, code: v.code });
  } catch (e) {
    outcomes.push({ i, ok: false, error: e.code ?? String(e), message: String(e.cause?.message ?? e.message) });
  }
}
client.close();
console.log(JSON.stringify(outcomes));
