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
// Answers as in examples/edge-worker: 200, 409 STALE_TOKEN, 400 MISSING_TOKEN /
// MALFORMED_TOKEN, JSON { key, outcome, code, token, markBefore, mark }.
// Deno resolves `fencegate` through its `node` export condition (node_modules,
// or `npm:fencegate`); the entry reads the .wasm beside it, hence --allow-read.
// fencegate/deno-kv keeps state and value in one KV entry and commits each
// decision with `kv.atomic().check({ key, versionstamp })`.
import { Gate, parseToken, FencegateError } from 'fencegate';
import { DenoKvStore } from 'fencegate/deno-kv';

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
  const header = request.headers.get('Fencing-Token');
  let token;
  try {
    token = parseToken(header); // strict decimal: no sign, leading zero, space, fraction, exponent
  } catch (e) {
    if (!(e instanceof FencegateError)) throw e;
    const mark = String(await gate.mark(key));
    return json({ key, outcome: 'reject', code: e.code, token: header, markBefore: mark, mark }, 400);
  }
  let v;
  if (request.method === 'PUT' && action === undefined) v = await gate.write(key, token, await request.text());
  else if (request.method === 'POST' && action === 'establish') v = await gate.establish(key, token);
  else if (request.method === 'DELETE' && action === undefined) v = await gate.delete(key, token);
  else return json({ code: 'NOT_FOUND' }, 404);
  return json(
    { key, outcome: v.outcome, code: v.code, token: String(v.token), markBefore: String(v.markBefore), mark: String(v.markAfter) },
    v.ok ? 200 : 409,
  );
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
