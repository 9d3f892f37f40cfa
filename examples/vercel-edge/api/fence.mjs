// A Vercel Edge Function. Vercel's edge bundler resolves `fencegate` through the
// `edge-light` export condition, which loads the entry that imports the .wasm
// as a module (edge runtimes refuse to compile Wasm from bytes).
//
// The marks here live in the isolate's memory (MemoryGate): this shows the
// entry and the token handling, not durable fencing. For durable marks, fence at
// the resource: a store with a compare-and-set or a transaction (docs/stores.md),
// or forward to the Durable Object in examples/edge-worker.
import { MemoryGate, parseToken, FencegateError } from 'fencegate';

export const config = { runtime: 'edge' };

const gate = new MemoryGate();

export default async function handler(request) {
  const key = new URL(request.url).searchParams.get('key') ?? 'default';
  const header = request.headers.get('Fencing-Token');
  let token;
  try {
    token = parseToken(header);
  } catch (e) {
    if (!(e instanceof FencegateError)) throw e;
    return Response.json({ key, code: e.code, token: header, mark: String(gate.mark(key)) }, { status: 400 });
  }
  const v = gate.write(key, token, await request.text());
  return Response.json(
    { key, outcome: v.outcome, code: v.code, token: String(v.token), mark: String(v.markAfter) },
    { status: v.ok ? 200 : 409 },
  );
}
