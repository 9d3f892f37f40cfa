// A fenced HTTP API on Deno: values and marks in Deno KV, one compare-and-set
// per write (an atomic operation checked on the fence record's versionstamp).
//
//   deno run --unstable-kv --allow-net=127.0.0.1 --allow-env=PORT,KV_PATH \
//     --allow-read --allow-write=. server.mjs
//
//   PUT    /resources/<key>            body = the new value (text); header Fencing-Token
//   POST   /resources/<key>/establish  raise the mark, no data change
//   DELETE /resources/<key>            fenced delete: clears the value, keeps the mark
//   GET    /resources/<key>            { key, mark, value }
//
// Answers as in examples/edge-worker (fencegate/http): 200 applied, refusals as
// RFC 9457 problem bodies (409 STALE_TOKEN, 428 MISSING_TOKEN, 400 MALFORMED_TOKEN).
// Deno resolves `fencegate` through its `node` export condition (node_modules,
// or `npm:fencegate`); the entry reads the .wasm beside it, hence --allow-read.
// fencegate/deno-kv keeps state and value in one KV entry and commits each
// decision with `kv.atomic().check({ key, versionstamp })`.
import { Gate, FencegateError } from 'fencegate';
import { DenoKvStore } from 'fencegate/deno-kv';
import { fence } from 'fencegate/http';

const kv = await Deno.openKv(Deno.env.get('KV_PATH') ?? 'fenced.kv');
const gate = new Gate(new DenoKvStore(kv)); // one atomic check on the entry's versionstamp per write
const json = (body, status = 200) => Response.json(body, { status });

async function handle(request) {
  const [, kind, encoded, action, extra] = new URL(request.url).pathname.split('/');
  if (kind !== 'resources' || !encoded || extra !== undefined) return json({ code: 'NOT_FOUND' }, 404);
  let key;
  try {
    key = decodeURIComponent(encoded);
  } catch {
    return json({ code: 'BAD_KEY' }, 400);
  }
  if (request.method === 'GET' && action === undefined) {
    const { mark, value } = await gate.read(key);
    return json({ key, mark: String(mark), value: value ?? null });
  }
  const body = await request.text();
  let run;
  if (request.method === 'PUT' && action === undefined) run = (token, o) => gate.write(key, token, body, o);
  else if (request.method === 'POST' && action === 'establish') run = (token, o) => gate.establish(key, token, o);
  else if (request.method === 'DELETE' && action === undefined) run = (token, o) => gate.delete(key, token, o);
  else return json({ code: 'NOT_FOUND' }, 404);
  return fence(request, key, run); // the Fencing-Token header, strict decimal
}

Deno.serve(
  {
    hostname: '127.0.0.1',
    port: Number(Deno.env.get('PORT') ?? 8000),
    onListen: ({ hostname, port }) => console.log(`listening on http://${hostname}:${port}`),
  },
  async (request) => {
    try {
      return await handle(request);
    } catch (e) {
      return json({ code: e instanceof FencegateError ? e.code : 'INTERNAL', message: e.message }, 500);
    }
  },
);
