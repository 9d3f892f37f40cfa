// A client of the fenced service that owns a key for a while: acquire a lease
// (its epoch is the fencing token), establish the epoch on the key (the barrier),
// then work and write with that token, renewing the lease as it goes.
// When a write comes back 409 it has been fenced out: a newer owner exists, so
// it stops at once. Prints one JSON line per event.
//
//   node holder.mjs --url http://127.0.0.1:8080 --key report --holder A \
//     [--ttl-ms 1500] [--writes 3] [--work-ms 1000]
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

const { values: o } = parseArgs({
  options: {
    url: { type: 'string' },
    key: { type: 'string' },
    holder: { type: 'string' },
    'ttl-ms': { type: 'string', default: '1500' },
    writes: { type: 'string', default: '3' },
    'work-ms': { type: 'string', default: '1000' },
  },
});
const ttlMs = Number(o['ttl-ms']);
const key = encodeURIComponent(o.key);
const log = (event) => console.log(JSON.stringify(event));

async function call(method, path, { token, json } = {}) {
  const headers = { 'content-type': 'application/json' };
  if (token !== undefined) headers['fencing-token'] = token;
  const r = await fetch(new URL(path, o.url), { method, headers, body: json === undefined ? undefined : JSON.stringify(json) });
  return { status: r.status, body: await r.json() };
}

// 1. acquire: wait out a live lease held by someone else (bounded)
const requestId = `${o.holder}-${process.pid}-${Date.now()}`;
let lease;
for (let attempt = 1; ; attempt++) {
  const r = await call('POST', `/leases/${key}`, { json: { holder: o.holder, ttlMs, requestId } });
  if (r.status === 200) {
    lease = r.body;
    break;
  }
  log({ event: 'waiting', code: r.body.code, holder: r.body.holder, expiresAt: r.body.expiresAt });
  if (r.body.code !== 'LEASE_HELD' || attempt === 20) process.exit(2);
  await sleep(Math.max(10, r.body.expiresAt - Date.now()));
}
log({ event: 'acquired', epoch: lease.epoch, leaseId: lease.leaseId, expiresAt: lease.expiresAt });

// 2. the barrier: the key refuses every older epoch from now on
const est = await call('POST', `/kv/${key}/establish`, { token: lease.epoch });
log({ event: 'established', status: est.status, mark: est.body.mark });
if (est.status !== 200) process.exit(3);

// 3. work and write with the epoch; renew when the lease runs low
for (let i = 1; i <= Number(o.writes); i++) {
  if (lease.expiresAt - Date.now() < ttlMs / 2) {
    const r = await call('POST', `/leases/${key}/renew`, { json: { leaseId: lease.leaseId, holder: lease.holder, ttlMs } });
    if (r.status !== 200) {
      log({ event: 'lost', status: r.status, code: r.body.code });
      process.exit(4); // the lease is gone: stop working
    }
    lease = r.body;
    log({ event: 'renewed', status: r.status, expiresAt: lease.expiresAt });
  }
  log({ event: 'working', i });
  await sleep(Number(o['work-ms'])); // the work; a GC pause, a stall or SIGSTOP can land here
  const w = await call('PUT', `/kv/${key}`, { token: lease.epoch, json: { by: o.holder, epoch: lease.epoch, i } });
  log({ event: 'write', i, status: w.status, code: w.body.code, token: w.body.token, mark: w.body.mark });
  if (w.status === 409) {
    log({ event: 'fenced', mark: w.body.mark }); // a newer owner exists: stop, do not retry
    process.exit(0);
  }
}
await call('POST', `/leases/${key}/release`, { json: { leaseId: lease.leaseId, holder: lease.holder } });
log({ event: 'released' });
