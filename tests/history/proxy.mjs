// A TCP proxy (node:net) between the history clients and the server, with
// faults armed from outside for a time window:
//   delay  every chunk in both directions waits `ms` before it is forwarded
//   drop   a reply to a request sent during the window is swallowed; the
//          connection is cut `ms` later (the client times out: a lost reply)
//   cut    a reply to a request sent during the window is not forwarded: both
//          sockets are destroyed when it arrives (the request ran, the reply is lost)
// `proxy.arm(kind, { ms, forMs })`; `proxy.counts` counts the connections hit.
import net from 'node:net';

export async function startProxy(upstreamPort) {
  const conns = new Set();
  let fault = null; // { kind, ms, until }
  const counts = { delay: 0, drop: 0, cut: 0 };
  const active = () => (fault && Date.now() < fault.until ? fault : null);

  const server = net.createServer((down) => {
    const up = net.connect(upstreamPort, '127.0.0.1');
    const pair = { down, up, armed: null };
    // Forwarding keeps each direction's byte order across delayed and prompt chunks.
    const queue = (to) => {
      let last = 0;
      return (chunk, ms) => {
        const now = Date.now();
        last = Math.max(last, now + ms);
        if (last <= now) to.write(chunk);
        else setTimeout(() => to.write(chunk), last - now);
      };
    };
    const toUp = queue(up);
    const toDown = queue(down);
    conns.add(pair);
    const end = () => {
      conns.delete(pair);
      down.destroy();
      up.destroy();
    };
    down.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
    down.on('data', (chunk) => {
      const f = active();
      if (f && (f.kind === 'drop' || f.kind === 'cut') && !pair.armed && (!f.match || f.match.test(chunk.toString('latin1')))) pair.armed = f.kind;
      toUp(chunk, f && f.kind === 'delay' ? f.ms : 0);
    });
    up.on('data', (chunk) => {
      if (pair.armed === 'cut') {
        counts.cut += 1;
        end();
        return;
      }
      if (pair.armed === 'drop') {
        counts.drop += 1;
        pair.armed = 'dropped';
        setTimeout(end, fault ? fault.ms : 100);
        return;
      }
      if (pair.armed === 'dropped') return;
      const f = active();
      if (f && f.kind === 'delay') counts.delay += 1;
      toDown(chunk, f && f.kind === 'delay' ? f.ms : 0);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port,
    counts,
    /** `match`: a RegExp; drop/cut only a request whose bytes (latin1) match it. */
    arm(kind, { ms = 100, forMs = 200, match } = {}) {
      fault = { kind, ms, until: Date.now() + forMs, match };
    },
    /** Cuts every open connection now (no request in flight needed). */
    cutAll() {
      for (const p of conns) {
        p.down.destroy();
        p.up.destroy();
      }
    },
    close() {
      this.cutAll();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/**
 * One proxy per upstream port (the members of a cluster), driven as one:
 * `arm` arms every proxy (whichever member a client talks to is hit),
 * `counts` sums them, `ports` lists the proxy ports in the upstreams' order.
 */
export async function startProxies(upstreamPorts) {
  const all = await Promise.all(upstreamPorts.map((p) => startProxy(p)));
  return {
    ports: all.map((x) => x.port),
    get counts() {
      const c = { delay: 0, drop: 0, cut: 0 };
      for (const x of all) for (const k of Object.keys(c)) c[k] += x.counts[k];
      return c;
    },
    arm: (kind, opts) => all.forEach((x) => x.arm(kind, opts)),
    cutAll: () => all.forEach((x) => x.cutAll()),
    close: () => Promise.all(all.map((x) => x.close())),
  };
}
