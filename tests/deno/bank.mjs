// The Deno KV bank-transfer race (tests/js/own-data/deno-kv-race.test.mjs), one Deno process
// per call, all on one local KV file; the config is JSON in the last argument:
//   {"mode":"setup","file","accounts","start"}  the accounts, each `start`
//   {"mode":"writer","file","worker","token","ops","accounts","delayMs","paceMs","seed"}
//       one writer on the line protocol of tests/js/own-data/bank-procs.mjs: prints `ready`,
//       starts at `go` on stdin, moves money with gate.transaction on one fence key (the body
//       reads both accounts, checks them, sets both and a record of itself in the fence's one
//       atomic operation), prints its outcomes (verdict or error code per op) as its last line
//   {"mode":"read","file"}  the balances and the transfer records, each with its versionstamp
//   {"mode":"writes","file","worker","token","ops"}  one writer of plain gate.write calls on key
//       'k' (value "<worker>-<op>"), on the same line protocol; then {"mode":"mark","file"}
import { DenoKvStore } from '../../pkg/adapters/deno-kv.mjs';
import { Gate } from '../../pkg/node.mjs';
import { transfers } from '../js/own-data/bank-check.mjs';

const config = JSON.parse(Deno.args.at(-1));

/** Resolves at the line `go` on stdin. */
async function go() {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of Deno.stdin.readable) {
    text += decoder.decode(chunk);
    if (text.includes('go\n')) return;
  }
}
const kv = await Deno.openKv(config.file);
const acct = (i) => ['acct', i];

if (config.mode === 'setup') {
  for (let i = 1; i <= config.accounts; i++) await kv.set(acct(i), config.start);
} else if (config.mode === 'read') {
  const balances = [];
  for await (const e of kv.list({ prefix: ['acct'] })) balances.push(e.value);
  const rows = [];
  for await (const e of kv.list({ prefix: ['transfer'] })) rows.push({ ...e.value, versionstamp: e.versionstamp });
  console.log(JSON.stringify({ balances, rows }));
} else if (config.mode === 'mark') {
  console.log(JSON.stringify(await new Gate(new DenoKvStore(kv)).read('k')));
} else if (config.mode === 'writes') {
  const gate = new Gate(new DenoKvStore(kv), { maxRetries: 500 });
  console.log('ready');
  await go();
  const outcomes = [];
  for (let i = 0; i < config.ops; i++) {
    try {
      const v = await gate.write('k', config.token, `${config.worker}-${i}`);
      outcomes.push({ i, ok: v.ok, outcome: v.outcome, code: v.code, markBefore: v.markBefore });
    } catch (e) {
      outcomes.push({ i, ok: false, error: e.code ?? String(e), message: String(e.cause?.message ?? e.message) });
    }
  }
  console.log(JSON.stringify(outcomes));
} else {
  const { worker, token, ops, accounts, delayMs, paceMs, seed } = config;
  const gate = new Gate(new DenoKvStore(kv), { maxRetries: 500 });
  const pick = transfers(seed, accounts);
  const body = (i, [src, dst, amount]) => async (op) => {
    const [a, b] = await kv.getMany([acct(src), acct(dst)], { consistency: 'strong' });
    op.check(a, b).set(acct(src), a.value - amount).set(acct(dst), b.value + amount).set(['transfer', worker, i], { worker, op: i, token });
    return amount;
  };
  console.log('ready');
  await go();
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
  console.log(JSON.stringify(outcomes));
}
kv.close();
