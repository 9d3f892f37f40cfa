// The engines the history workload runs on: one entry each. An entry starts
// its server(s) in a scratch directory and returns a handle:
//   { spec(port?)  the store spec clients open (stores.mjs), through the proxy port when given
//     direct       the spec without the proxy (the runner's own final reads, the restore drill)
//     port         the server's port (the proxy's upstream), or null: no network (SQLite)
//     faults       the fault kinds this engine supports besides the client ones
//     guard        (per engine) true: run.mjs --guard installs the database guard on it (rogue.mjs writes it)
//     restart()    stop the server hard and start it again on the same port and data
//     stop()       async stop; stopSync() the same from an exit handler }
//   restartGapMs (per engine, default 2000) the least time between two restarts
//     killLeader()  (replicated engines, fault kind `leader`) kill the leader member,
//                   wait for a new leader, restart it; resolves to a description
//   and per engine: stopDir(dir) stops what a start() cut short left behind (Ctrl-C
//   during a start). Adding an engine is one more entry here plus its `kind` in stores.mjs.
import { spawn, spawnSync, execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

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
    guard: true,
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
    guard: true,
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

  // etcd (Debian etcd-server 3.4) through scripts/etcd-cluster.sh: one member,
  // or three on loopback. Members are SIGKILLed (a crash) and started again on
  // the same ports and data dir; each gets its own proxy (`port` is a list).
  etcd: etcdEngine(1),
  'etcd-cluster': etcdEngine(3),
};

const clusterScript = fileURLToPath(new URL('../../scripts/etcd-cluster.sh', import.meta.url));
const execFileP = promisify(execFile);

/** Kills (SIGKILL) every member whose pid file is in `cdir`: synchronous, for exit handlers. */
function killMembersSync(cdir) {
  let files = [];
  try {
    files = fs.readdirSync(cdir).filter((f) => /^m[0-9]+\.pid$/.test(f));
  } catch {
    return;
  }
  for (const f of files) {
    try {
      process.kill(Number(fs.readFileSync(path.join(cdir, f), 'utf8')), 'SIGKILL');
    } catch {}
  }
}

function etcdEngine(n) {
  const cdirOf = (dir) => path.join(dir, 'etcd');
  return {
    faults: n === 1 ? ['proxy', 'restart'] : ['proxy', 'restart', 'leader'],
    // a member takes about 2 s to restart (and a leader kill about 1 s of election): at least 4 s between them
    restartGapMs: 4000,
    stopDir: (dir) => killMembersSync(cdirOf(dir)),
    async start(dir, { rand = Math.random } = {}) {
      const cdir = cdirOf(dir);
      const sh = async (...args) => (await execFileP('bash', [clusterScript, ...args], { encoding: 'utf8' })).stdout.trim();
      await sh('start', cdir, String(n));
      const members = Array.from({ length: n }, (_, i) => i + 1);
      const urls = members.map((i) => fs.readFileSync(path.join(cdir, `m${i}.url`), 'utf8').trim());
      const ports = urls.map((u) => Number(new URL(u).port));
      const pidOf = (i) => {
        try {
          return Number(fs.readFileSync(path.join(cdir, `m${i}.pid`), 'utf8'));
        } catch {
          return null;
        }
      };
      // every member answers and the cluster has a leader (the script's own check)
      const healthy = async () => {
        const until = Date.now() + 30000;
        for (;;) {
          const ok = await execFileP('etcdctl', [`--endpoints=${urls.join(',')}`, '--command-timeout=2s', 'endpoint', 'health'], { env: { ...process.env, ETCDCTL_API: '3' } }).then(
            () => true,
            () => false,
          );
          if (ok) return;
          if (Date.now() > until) throw new Error(`etcd: members ${urls.join(',')} not healthy after 30 s`);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      const leader = async () => {
        for (let i = 0; i < 100; i++) {
          const l = await sh('leader', cdir).catch(() => '');
          if (/^[0-9]+$/.test(l)) return Number(l);
          await new Promise((r) => setTimeout(r, 100));
        }
        throw new Error('etcd: no leader after 10 s');
      };
      const restartMember = async (i) => {
        await sh('stop-member', cdir, String(i)); // SIGKILL
        await sh('start-member', cdir, String(i));
        await healthy();
      };
      const spec = (p = ports) => ({ kind: 'etcd', hosts: p.map((x) => `http://127.0.0.1:${x}`) });
      return {
        spec,
        direct: spec(ports),
        port: ports,
        pids: () => members.map(pidOf).filter((x) => x !== null),
        async restart() {
          await restartMember(members[Math.floor(rand() * n)]);
        },
        async killLeader() {
          const old = await leader();
          await sh('stop-member', cdir, String(old));
          const next = await leader(); // the other two elect one (election timeout 500 ms)
          await sh('start-member', cdir, String(old));
          await healthy();
          return `m${old} (m${next} elected)`;
        },
        async stop() {
          await sh('stop', cdir);
        },
        stopSync: () => killMembersSync(cdir),
      };
    },
  };
}
