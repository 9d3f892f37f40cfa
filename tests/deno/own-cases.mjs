// The own-data conformance cases (tests/js/stores/cases.mjs OWN_CASES) in Deno on a local KV
// file, against DenoKvStore or a liar; prints the results as JSON on the last line. Started by
// tests/js/own-data/deno-kv-race.test.mjs:
//   deno run --unstable-kv -A tests/deno/own-cases.mjs <dir> honest|checkOutside|statementsFirst
// checkOutside: the fence entry read outside the atomic operation, which then sets the decided
// state without checking that entry's versionstamp (Deno KV's check outside the transaction).
// statementsFirst: the body's mutations committed in an atomic operation of their own before
// the decision (tests/js/own-data/liars.mjs).
import { DenoKvStore } from '../../pkg/adapters/deno-kv.mjs';
import { runOwnCases } from '../js/stores/run-cases.mjs';
import { statementsFirst, wrapStore } from '../js/own-data/liars.mjs';

const [dir, variant] = Deno.args;
let n = 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function lying(kv, real) {
  if (variant === 'checkOutside') {
    return wrapStore(real, {
      async fencedTransaction(key, step) {
        const k = real.kvKey(key);
        const e = await kv.get(k);
        const plan = step.decide(e.versionstamp === null ? null : e.value.state);
        if (plan === null) return null;
        const op = kv.atomic();
        await step.run(op);
        const r = await op.set(k, { state: plan.nextStateText, value: e.versionstamp === null ? null : (e.value.value ?? null) }).commit();
        return { version: r.versionstamp };
      },
    });
  }
  if (variant === 'statementsFirst') {
    return statementsFirst(real, async (run) => {
      const op = kv.atomic();
      await run(op);
      await op.commit();
    });
  }
  return real;
}

const target = {
  shape: 'cas',
  async open() {
    const kv = await Deno.openKv(`${dir}/own-${n++}.kv`);
    const real = new DenoKvStore(kv);
    return {
      store: lying(kv, real),
      raw: async (key) => {
        const e = await kv.get(real.kvKey(key));
        return e.versionstamp === null ? null : { state: e.value.state, value: e.value.value };
      },
      own: {
        sync: false,
        optimistic: true,
        setup: (id) => kv.set(['own', id], 'init'),
        write: (id, v, sleepMs = 0) => async (op) => {
          if (sleepMs > 0) await sleep(sleepMs);
          op.set(['own', id], v);
          return 1;
        },
        read: async (id) => (await kv.get(['own', id])).value,
        other: async () => null,
      },
      close: async () => kv.close(),
    };
  },
};

console.log(JSON.stringify(await runOwnCases(target)));
