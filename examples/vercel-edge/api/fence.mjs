// A Vercel Edge Function. Vercel's edge bundler resolves `fencegate` through the
// `edge-light` export condition, which loads the entry that imports the .wasm
// as a module (edge runtimes refuse to compile Wasm from bytes).
//
// The marks here live in the isolate's memory (MemoryGate): this shows the
// entry and the token handling, not durable fencing. For durable marks, fence at
// the resource: a store with a compare-and-set or a transaction (docs/stores.md),
// or forward to the Durable Object in examples/edge-worker.
import { MemoryGate } from 'fencegate';
import { fence } from 'fencegate/http';

export const config = { runtime: 'edge' };

const gate = new MemoryGate();

// Fencing-Token header → 200 applied, 409 stale, 428 missing, 400 malformed (RFC 9457 bodies)
export default async function handler(request) {
  const key = new URL(request.url).searchParams.get('key') ?? 'default';
  const value = await request.text();
  return fence(request, key, (token, options) => gate.write(key, token, value, options));
}
