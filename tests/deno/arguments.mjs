// Wrong arguments to DenoKvStore, in Deno: each prints its FencegateError code.
import { DenoKvStore } from '../../pkg/adapters/deno-kv.mjs';
import { Gate } from '../../pkg/node.mjs';

const kv = await Deno.openKv(`${Deno.args[0]}/args.kv`);
const show = (label, f) => {
  try {
    f();
    console.log(label, 'no error');
  } catch (e) {
    console.log(label, e.code, e.option ?? e.message);
  }
};
show('null', () => new DenoKvStore(null));
show('object', () => new DenoKvStore({ get() {} }));
show('prefix', () => new DenoKvStore(kv, { prefix: 'fencegate' }));
show('prefix []', () => new DenoKvStore(kv, { prefix: [] }));
show('encode only', () => new DenoKvStore(kv, { encode: String }));
const gate = new Gate(new DenoKvStore(kv));
const e = await gate.write('k', 1, () => 1).catch((x) => x);
console.log('function value', e.code, (await gate.read('k')).mark);
kv.close();
