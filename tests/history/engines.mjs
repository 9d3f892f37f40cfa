// The engines the history workload runs on: one entry each. An entry starts
// its server(s) in a scratch directory and returns a handle:
//   { spec(port?)  the store spec clients open (stores.mjs), through the proxy port when given
//     direct       the spec without the proxy (the runner's own final reads, the restore drill)
//     port         the server's port (the proxy's upstream), or null: no network (SQLite)
//     faults       the fault kinds this engine supports besides the client ones
//     restart()    stop the server hard and start it again on the same port and data
//     stop()       async stop; stopSync() the same from an exit handler }
// Adding an engine (etcd, a 3-member etcd cluster) is one more entry here plus
// its `kind` in stores.mjs: see the TODO entries below.
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function waitPort(port, ms = 15000) {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise((r) => {
      const c = net.connect(port, '127.0.0.1');
      c.on('connect', () => (c.destroy(), r(true)));
      c.on('error', () => r(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function pgBin() {
  const root = '/usr/lib/postgresql';
  const v = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(a) - Number(b)).pop() : undefined;
  if (!v) throw new Error('PostgreSQL is not installed (bash scripts/services.sh install)');
  return path.join(root, v, 'bin');
}

const asPostgres = (cmd, args) => (process.getuid() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]);

export const ENGINES = {
  sqlite: {
    faults: [], // in-process: no server to restart, no connection to cut
    async start(dir) {
      const file = path.join(dir, 'history.db');
      const spec = { kind: 'sqlite', file };
      return { spec: () => spec, direct: spec, port: null, pids: () => [], restart: async () => {}, stop: async () => {}, stopSync() {} };
    },
  },

  redis: {
    faults: ['proxy', 'restart'],
    async start(dir) {
      const port = await freePort();
      let child = null;
      const launch = async () => {
        // appendfsync always: an acknowledged write is in the AOF before the reply.
        child = spawn(
          'redis-server',
          ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir, '--logfile', path.join(dir, 'redis.log')],
          { stdio: 'ignore' },
        );
        child.on('error', () => {});
        await waitPort(port);
      };
      const kill = () => {
        if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      };
      await launch();
      const url = (p) => `redis://127.0.0.1:${p}`;
      return {
        spec: (p = port) => ({ kind: 'redis', url: url(p) }),
        direct: { kind: 'redis', url: url(port) },
        port,
        pids: () => (child ? [child.pid] : []),
        async restart() {
          const c = child;
          kill();
          if (c.exitCode === null && c.signalCode === null) await new Promise((r) => c.once('exit', r));
          await launch();
        },
        async stop() {
          const c = child;
          kill();
          if (c && c.exitCode === null && c.signalCode === null) await new Promise((r) => c.once('exit', r));
        },
        stopSync: kill,
      };
    },
  },

  postgres: {
    faults: ['proxy', 'restart'],
    async start(dir) {
      const bin = pgBin();
      const pgdir = path.join(dir, 'pg');
      fs.mkdirSync(pgdir, { recursive: true });
      fs.chmodSync(dir, 0o755);
      if (process.getuid() === 0) execFileSync('chown', ['postgres:', pgdir]);
      const data = path.join(pgdir, 'data');
      const run = (cmd, args) => {
        const [c, a] = asPostgres(path.join(bin, cmd), args);
        return spawnSync(c, a, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
      };
      const init = run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
      if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
      const port = await freePort();
      // fsync off (test data, the machine does not crash); synchronous_commit ON:
      // an acknowledged commit survives an immediate-mode server stop.
      const opts = `-p ${port} -k ${pgdir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200`;
      const launch = async () => {
        const r = run('pg_ctl', ['-D', data, '-l', path.join(pgdir, 'server.log'), '-w', '-t', '60', '-o', opts, 'start']);
        if (r.status !== 0) throw new Error(`pg_ctl start failed: ${r.stderr}${fs.readFileSync(path.join(pgdir, 'server.log'), 'utf8').slice(-2000)}`);
        await waitPort(port);
      };
      const stopSync = () => {
        if (fs.existsSync(path.join(data, 'postmaster.pid'))) run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      };
      await launch();
      const url = (p) => `postgres://postgres@127.0.0.1:${p}/postgres`;
      return {
        spec: (p = port) => ({ kind: 'pg', url: url(p) }),
        direct: { kind: 'pg', url: url(port) },
        port,
        pids: () => {
          try {
            return [Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0])];
          } catch {
            return [];
          }
        },
        async restart() {
          stopSync(); // immediate mode: a crash as far as the data is concerned
          await launch();
        },
        stop: async () => stopSync(),
        stopSync,
      };
    },
  },

  // TODO(issue 16, etcd; branch i16a builds the adapter and the cluster script):
  //   etcd: { faults: ['proxy', 'restart'], start(dir) { one `etcd` member on free
  //     client/peer ports, data dir under `dir`; spec: { kind: 'etcd', hosts } } },
  //   'etcd-cluster': { faults: ['proxy', 'restart', 'leader'], start(dir) { three
  //     members; restart() restarts a random member; the `leader` fault kind makes
  //     run.mjs call `await handle.killLeader()` (kill the leader member, restart
  //     it, resolve to its name) } },
  // and `case 'etcd'` in stores.mjs (and the engine names in scripts/history.sh's
  // default list). Nothing else in tests/history changes.
};
