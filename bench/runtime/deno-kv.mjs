// deno run --unstable-kv -A bench/runtime/deno-kv.mjs <dir> <n>
import { Gate } from '../../pkg/node.mjs';
import { DenoKvStore } from '../../pkg/adapters/deno-kv.mjs';
import { pair } from './kernel.mjs';

const [dir, n] = Deno.args;
const kv = await Deno.openKv(`${dir}/bench.kv`);
const store = new DenoKvStore(kv);
const rawKey = ['raw', 'bench'];
console.log(JSON.stringify(await pair(new Gate(store), (i, v) => kv.set(rawKey, { state: '', value: JSON.stringify(v) }), Number(n))));
kv.close();
