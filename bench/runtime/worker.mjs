// The Durable Object half of bench/runtime-stores.mjs (bundled for workerd).
import { Gate } from 'fencegate';
import { DurableObjectStore } from 'fencegate/durable-object';
import { pair } from './kernel.mjs';

export class Bench {
  constructor(ctx) {
    this.storage = ctx.storage;
  }
  async fetch(request) {
    const n = Number(new URL(request.url).searchParams.get('n'));
    const storage = this.storage;
    const rawWrite = (i, v) => storage.transaction(async (txn) => txn.put('raw', { state: '', value: JSON.stringify(v) }));
    return Response.json(await pair(new Gate(new DurableObjectStore(storage)), rawWrite, n));
  }
}

export default { fetch: (request, env) => env.BENCH.get(env.BENCH.idFromName('bench')).fetch(request) };
