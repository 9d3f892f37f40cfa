// Runs the store conformance suite (tests/js/stores/cases.mjs) inside workerd,
// in a Durable Object, against fencegate/durable-object on that object's
// storage. Bundled and started by tests/js/stores/durable-object.test.mjs.
// POST {"variant":"real"|"lying","only":[names]?} → [{ name, ok, … }].
import { DurableObjectStore, fencedFetch, fencedWorker } from 'fencegate/durable-object';
import { Gate } from 'fencegate';
import { runCases } from '../js/stores/run-cases.mjs';

/** Drops the precondition: reads outside any transaction, then puts unconditionally. */
class LyingStore extends DurableObjectStore {
  #storage;
  constructor(storage, options) {
    super(storage, options);
    this.#storage = storage;
  }
  async transaction(key, fn) {
    const k = this.storageKey(key);
    const entry = (await this.#storage.get(k)) ?? null;
    const out = fn(entry === null ? null : entry.state);
    if (out === null) return false;
    await new Promise((r) => setTimeout(r, 1));
    const value = out.change.kind === 'set' ? this.encodeValue(out.change.value) : out.change.kind === 'delete' ? null : (entry?.value ?? null);
    await this.#storage.put(k, { state: JSON.stringify(out.nextState), value });
    return true;
  }
}

export class Runner {
  constructor(ctx) {
    this.storage = ctx.storage;
    this.n = 0;
  }

  async fetch(request) {
    const { variant, only } = await request.json();
    const storage = this.storage;
    if (variant === 'arguments') return Response.json(await this.wrongArguments());
    const Store = variant === 'lying' ? LyingStore : DurableObjectStore;
    const target = {
      shape: 'transaction',
      open: async () => {
        const options = { prefix: `case-${this.n++}:` }; // a fresh key space per case
        const store = new Store(storage, options);
        const get = async (key) => {
          try {
            return await storage.get(store.storageKey(key));
          } catch (e) {
            // a key longer than Durable Object storage keys can be (2 KiB) cannot have been stored
            if (/key.*(too large|exceeds|length)/i.test(e.message)) return undefined;
            throw e;
          }
        };
        return {
          store,
          // a new store object on the same storage (the runtime restart is in durable-object.test.mjs)
          reopen: async () => new Store(storage, options),
          raw: async (key) => {
            const e = await get(key);
            return e === undefined ? null : { state: e.state, value: e.value };
          },
          putRaw: async (key, state, value) => {
            await storage.put(store.storageKey(key), { state, value: value ?? null });
          },
          close: async () => {},
        };
      },
    };
    return Response.json(await runCases(target, only));
  }
}

Runner.prototype.wrongArguments = async function () {
  const out = [];
  const show = async (label, f) => {
    try {
      await f();
      out.push([label, 'no error']);
    } catch (e) {
      out.push([label, e.code ?? e.name, e.message]);
    }
  };
  await show('no storage', () => new DurableObjectStore(undefined));
  await show('a map', () => new DurableObjectStore(new Map()));
  await show('prefix 1', () => new DurableObjectStore(this.storage, { prefix: 1 }));
  await show('decode only', () => new DurableObjectStore(this.storage, { decode: JSON.parse }));
  await show('fencedFetch without a gate', () => fencedFetch(null, new Request('http://x/'), { key: 'k' }));
  const gate = new Gate(new DurableObjectStore(this.storage, { prefix: 'args:' }));
  await show('fencedFetch without a key', () => fencedFetch(gate, new Request('http://x/'), {}));
  await show('fencedWorker(3)', () => fencedWorker(3));
  const e = await gate.write('f', 1, () => 1).catch((x) => x);
  out.push(['a function value', e.code, String((await gate.read('f')).mark)]);
  return out;
};

export default {
  fetch(request, env) {
    return env.RUNNER.get(env.RUNNER.idFromName(new URL(request.url).pathname)).fetch(request);
  },
};
