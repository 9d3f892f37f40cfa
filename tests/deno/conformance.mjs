// Runs the store conformance suite (tests/js/stores/cases.mjs) in Deno against
// fencegate/deno-kv on a local KV file, and prints the results as JSON on the
// last line. Started by tests/js/stores/deno-kv.test.mjs:
//   deno run --unstable-kv -A tests/deno/conformance.mjs <dir> [lying]
import { DenoKvStore } from '../../pkg/adapters/deno-kv.mjs';
import { runCases } from '../js/stores/run-cases.mjs';

const [dir, variant] = Deno.args;
let n = 0;

/** Drops the version precondition: commits whatever the entry holds now. */
class LyingKvStore extends DenoKvStore {
  #kv;
  constructor(kv) {
    super(kv);
    this.#kv = kv;
  }
  async commit(key, expectedVersion, nextState, change) {
    const k = this.kvKey(key);
    const old = await this.#kv.get(k);
    const value = change.kind === 'set' ? this.encodeValue(change.value) : change.kind === 'delete' ? null : (old.value?.value ?? null);
    await new Promise((r) => setTimeout(r, 1));
    await this.#kv.set(k, { state: JSON.stringify(nextState), value });
    return true;
  }
}

const make = (kv) => (variant === 'lying' ? new LyingKvStore(kv) : new DenoKvStore(kv));

const target = {
  shape: 'cas',
  async open() {
    const path = `${dir}/store-${n++}.kv`;
    const kvs = [await Deno.openKv(path)];
    const kv = () => kvs[kvs.length - 1];
    const store = make(kv());
    return {
      store,
      // close the KV file and open it again: a process restart
      reopen: async () => {
        kv().close();
        kvs.push(await Deno.openKv(path));
        return make(kv());
      },
      raw: async (key) => {
        let e;
        try {
          e = await kv().get(store.kvKey(key));
        } catch (err) {
          // a key longer than Deno KV keys can be (2 KiB) cannot have been stored
          if (/Key too large/.test(err.message)) return null;
          throw err;
        }
        return e.versionstamp === null ? null : { state: e.value.state, value: e.value.value };
      },
      putRaw: async (key, state, value) => {
        await kv().set(store.kvKey(key), { state, value: value ?? null });
      },
      close: async () => {
        try {
          kv().close();
        } catch {
          // already closed
        }
      },
    };
  },
};

const only = variant === 'lying' ? JSON.parse(Deno.args[2]) : undefined;
console.log(JSON.stringify(await runCases(target, only)));
