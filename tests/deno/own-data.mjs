// The caller's own data on Deno KV (docs/stores.md "Your own data"), in Deno on a
// local KV file; prints one JSON object (what each scenario saw) on the last line.
// Started by tests/js/own-data/deno-kv.test.mjs: deno run --unstable-kv -A tests/deno/own-data.mjs <dir>
import { DenoKvStore } from '../../pkg/adapters/deno-kv.mjs';
import { Gate } from '../../pkg/node.mjs';

const kv = await Deno.openKv(`${Deno.args[0]}/own.kv`);
const out = {};
const shown = (e, cause) => ({ code: e?.code ?? e?.name, message: e?.message, ...(cause === undefined ? {} : { causeIsBody: e?.cause === cause }), ...(e?.verdict ? { verdict: e.verdict } : {}) });
const caught = async (p, cause) => { try { return await p; } catch (e) { return { error: shown(e, cause) }; } };
const val = async (k) => (await kv.get(k)).value;
const balances = async () => ({ a: String((await kv.get(['acct', 'a'])).value?.value), b: String((await kv.get(['acct', 'b'])).value?.value) });

await kv.set(['acct', 'a'], new Deno.KvU64(100n));
await kv.set(['acct', 'b'], new Deno.KvU64(0n));
await kv.set(['order', 42], 'new');
const store = new DenoKvStore(kv);
const gate = new Gate(store, { maxRetries: 2 });
let calls = 0;
const transfer = (n, status) => (op) => {
  calls++;
  op.sum(["acct", "b"], BigInt(n)).set(['order', 42], status);
  return calls;
};
out.verdicts = [];
out.verdicts.push(await gate.transaction('orders/42', 33, transfer(10, 'paid')));
out.verdicts.push(await gate.transaction('orders/42', 34, transfer(5, 'shipped')));
out.verdicts.push(await gate.transaction('orders/42', 34, transfer(1, 'shipped-2')));
out.verdicts.push(await gate.transaction('orders/42', 33, transfer(100, 'refunded')));
out.calls = calls;
out.data = { ...(await balances()), order: await val(['order', 42]) };
out.mark = await gate.mark('orders/42');
out.fence = (await kv.get(store.kvKey('orders/42'))).value;

// a throwing body: nothing committed, its mutations included
const boom = new Error('insufficient funds');
out.thrown = await caught(gate.transaction('orders/42', 35, (op) => { op.set(['order', 42], 'half'); throw boom; }), boom);
out.afterThrown = { order: await val(['order', 42]), mark: await gate.mark('orders/42') };

// the same op id applies once
calls = 0;
out.first = await gate.transaction('orders/43', 7, transfer(2, 'op'), { opId: 'refund-1' });
out.again = await gate.transaction('orders/43', 7, transfer(2, 'op'), { opId: 'refund-1' });
out.dupCalls = calls;
out.afterDup = await balances();

// the caller's own check: a versionstamp that moved is a conflict; the body runs again on a fresh read
const entry = await kv.get(['order', 42]);
let tries = 0;
out.ownCheck = await gate.transaction('orders/42', 35, async (op) => {
  tries++;
  const now = tries === 1 ? entry : await kv.get(['order', 42]);
  if (tries === 1) await kv.set(['order', 42], 'moved by someone'); // changes it under the first attempt
  op.check(now).set(['order', 42], `${now.value}+checked`);
  return tries;
});
out.ownCheckTries = tries;
out.afterOwnCheck = await val(['order', 42]);
// a check that never holds: COMMIT_CONFLICT after 1 + maxRetries attempts, nothing written
tries = 0;
out.neverHolds = await caught(gate.transaction('orders/42', 36, (op) => { tries++; op.check({ key: ['order', 42], versionstamp: null }).set(['order', 42], 'never'); }));
out.neverHoldsTries = tries;
out.afterNever = { order: await val(['order', 42]), mark: await gate.mark('orders/42') };

// misuse: commit inside the body, a mutation of the fence entry
out.commitInBody = await caught(gate.transaction('orders/42', 36, (op) => op.commit()));
out.fenceKeyInBody = await caught(gate.transaction('orders/42', 36, (op) => op.set(store.kvKey('orders/42'), 'x')));
out.notAFunction = await caught(gate.transaction('orders/42', 36, [['set']]));
out.afterMisuse = await gate.mark('orders/42');

// fenceIn on an AtomicOperation the caller commits
const refund = async (token, status, options) => {
  const op = kv.atomic();
  const v = await gate.fenceIn(op, 'orders/44', token, options);
  const r = await op.set(['order', 44], status).commit();
  return { v, ok: r.ok };
};
out.fenceIn = await refund(9, 'refunded');
out.fenceInStale = await caught(refund(8, 'zombie'));
// a caller that catches the refusal and commits anyway: the poisoned check fails the commit
{
  const op = kv.atomic();
  op.set(['order', 44], 'zombie-anyway');
  let code = null;
  try { await gate.fenceIn(op, 'orders/44', 8); } catch (e) { code = e.code; }
  out.caughtAndCommitted = { code, ok: (await op.commit()).ok };
}
out.fenceInOnce = await refund(10, 'once', { opId: 'o-1' });
out.fenceInTwice = await caught(refund(10, 'twice', { opId: 'o-1' }));
// two callers that both read the fence before either commits: the second commit fails its check
{
  const a = kv.atomic();
  const b = kv.atomic();
  await gate.fenceIn(a, 'orders/44', 11);
  await gate.fenceIn(b, 'orders/44', 12);
  out.raced = [(await a.set(['order', 44], 'a').commit()).ok, (await b.set(['order', 44], 'b').commit()).ok];
}
out.fenceInKv = await caught(gate.fenceIn(kv, 'orders/44', 13));
out.after44 = { order: await val(['order', 44]), mark: await gate.mark('orders/44') };
kv.close();
console.log(JSON.stringify(out));
