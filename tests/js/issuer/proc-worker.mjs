// A separate OS process driving an Issuer over a shared host store.
//   node proc-worker.mjs race '<json config>'   random acquire/renew/release; one JSON event per stdout line
//   node proc-worker.mjs kill '<json config>'   acquire `before` epochs (each printed as received), then
//                                               acquire once more and die (SIGKILL) right after the commit,
//                                               before the reply reaches this program
// config.store: a spec for openStore() in open-store.mjs (file, sqlite, redis, pg).
import { Issuer } from '../../../pkg/node.mjs';
import { openStore } from './open-store.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const [mode, json] = process.argv.slice(2);
const config = JSON.parse(json);
const { store, close } = await openStore(config.store);
const out = (event) => process.stdout.write(`${JSON.stringify(event, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))}\n`);

if (mode === 'race') {
  const { w, scopes, ops, ttlMs, deadlineMs } = config;
  const issuer = new Issuer(store, { maxRetries: 100 });
  const held = new Map();
  const stopAt = Date.now() + deadlineMs;
  for (let i = 0; i < ops && Date.now() < stopAt; i++) {
    const scope = scopes[Math.floor(Math.random() * scopes.length)];
    const mine = held.get(scope);
    const now = Date.now();
    try {
      if (mine && Math.random() < 0.6) {
        const r = await issuer.renew({ scope, leaseId: mine, holder: `w${w}`, ttlMs, now });
        out({ w, op: 'renew', scope, now, ...r });
        if (!r.ok) held.delete(scope);
      } else if (mine && Math.random() < 0.5) {
        const r = await issuer.release({ scope, leaseId: mine, holder: `w${w}` });
        out({ w, op: 'release', scope, now, ...r, leaseId: mine });
        held.delete(scope);
      } else {
        // A lost reply or conflict is retried with the same request id.
        const requestId = `w${w}-${i}`;
        for (let attempt = 0; ; attempt++) {
          try {
            const at = Date.now();
            const r = await issuer.acquire({ scope, holder: `w${w}`, ttlMs, now: at, requestId });
            out({ w, op: 'acquire', scope, now: at, ...r, attempt });
            if (r.ok) held.set(scope, r.leaseId);
            break;
          } catch (e) {
            out({ w, op: 'error', scope, code: e.code, message: e.message });
            if (attempt >= 3) break;
          }
        }
      }
    } catch (e) {
      out({ w, op: 'error', scope, code: e.code, message: e.message });
    }
    await sleep(Math.random() * 3);
  }
} else if (mode === 'kill') {
  const { scope, before, ttlMs } = config;
  const issuer = new Issuer(store);
  for (let i = 0; i < before; i++) {
    const r = await issuer.acquire({ scope, holder: 'victim', ttlMs, now: config.now, requestId: `v${i}` });
    out({ op: 'acquire', ...r });
    await issuer.release({ scope, leaseId: r.leaseId, holder: 'victim' });
  }
  // Dies between the host's commit and the reply, in either callback shape.
  const killing =
    typeof store.transaction === 'function'
      ? {
          async transaction(...args) {
            await store.transaction(...args);
            process.kill(process.pid, 'SIGKILL');
          },
        }
      : {
          load: (k) => store.load(k),
          async commit(...args) {
            const committed = await store.commit(...args);
            process.kill(process.pid, 'SIGKILL');
            return committed;
          },
        };
  const r = await new Issuer(killing).acquire({ scope, holder: 'victim', ttlMs, now: config.now, requestId: 'v-last' });
  out({ op: 'acquire', ...r, note: 'must never be printed' });
}
await close();
