// The history workload (tests/history/run.mjs) as a command: a deliberately
// broken host (its commit ignores the expected version) is caught by the
// checker, on the run and again on the saved file; the own-data mode on
// SQLite, PostgreSQL and Redis, and with the database guard and its rogue
// writer (and the unguarded control); Ctrl-C stops every client and server
// the workload started.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkFile } from '../../history/check.mjs';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const run = path.join(root, 'tests/history/run.mjs');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fencegate-history-test-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const alive = (pid) => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};
const pidsOf = (file) =>
  fs.existsSync(file)
    ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
    : [];

test('a broken host (commit ignores the expected version) is caught: violations (a) and (d), exit 1, same on the saved file', () => {
  const out = path.join(tmp, 'broken.jsonl');
  // Short leases: owners change every few operations, so writes of old and new owners overlap.
  const r = spawnSync(process.execPath, [run, '--engine', 'sqlite', '--broken', '--ops', '1000', '--procs', '4', '--keys', '2', '--ttl', '20', '--seed', '16', '--out', out], {
    encoding: 'utf8',
    timeout: 180_000,
  });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /seed 16, BROKEN host/);
  assert.match(r.stdout, /VIOLATION \(a\) k[01]: write with token \d+ applied after mark \d+ was established\n {4}L\d+: \{"ev":"invoke"/);
  assert.match(r.stdout, /VIOLATION \(d\) k[01]: mark went back: /);
  const summary = JSON.parse(r.stdout.match(/history: summary (.*)/)[1]);
  assert.ok(summary.violations > 0);
  // the checker alone, on the saved history: the same count
  const c = spawnSync(process.execPath, [path.join(root, 'tests/history/check.mjs'), out], { encoding: 'utf8' });
  assert.equal(c.status, 1);
  assert.match(c.stdout, new RegExp(`check: ${summary.violations} violation\\(s\\)`));
  assert.deepEqual(pidsOf(`${out}.pids`).filter((p) => alive(p.pid)), []);
});

test("own data (--own-data, gate.transaction into the caller's tables): 0 violations under SIGSTOP, SIGKILL and the restore drill; a host that checks outside the transaction is caught", () => {
  const out = path.join(tmp, 'own.jsonl');
  const r = spawnSync(process.execPath, [run, '--engine', 'sqlite', '--own-data', '--ops', '500', '--procs', '4', '--seed', '16', '--out', out], { encoding: 'utf8', timeout: 180_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /own data \(gate\.transaction\)/);
  const summary = JSON.parse(r.stdout.match(/history: summary (.*)/)[1]);
  assert.equal(summary.violations, 0);
  assert.ok(summary.faults.sigstop > 0 && summary.faults.sigkill > 0, JSON.stringify(summary.faults));
  // the final lines carry the caller's log, which the checker read
  const finals = fs.readFileSync(out, 'utf8').split('\n').filter((l) => l.includes('"ev":"final"')).map((l) => JSON.parse(l));
  assert.equal(finals.length, 3);
  assert.ok(finals.every((f) => Array.isArray(f.ownLog)) && finals.some((f) => f.ownLog.length > 0));

  const bad = path.join(tmp, 'own-broken.jsonl');
  const b = spawnSync(process.execPath, [run, '--engine', 'sqlite', '--own-data', '--broken', '--ops', '1000', '--procs', '4', '--keys', '2', '--ttl', '20', '--seed', '16', '--out', bad], { encoding: 'utf8', timeout: 180_000 });
  assert.equal(b.status, 1, b.stdout + b.stderr);
  assert.match(b.stdout, /VIOLATION \(a\) k[01]: write with token \d+ applied after mark \d+ was established/);
});

const installed = {
  sqlite: true,
  redis: spawnSync('redis-server', ['--version']).status === 0,
  postgres: fs.existsSync('/usr/lib/postgresql'),
  'etcd-cluster': spawnSync('etcd', ['--version']).status === 0,
};
const requireServices = process.env.FENCEGATE_REQUIRE_SERVICES === '1';

test('own data on PostgreSQL: 0 violations under SIGSTOP, SIGKILL, lost replies and restarts; the check-outside-the-transaction host is caught', { skip: !installed.postgres && !requireServices && 'PostgreSQL is not installed' }, () => {
  const go = (name, extra) =>
    spawnSync(process.execPath, [run, '--engine', 'postgres', '--own-data', ...extra, '--procs', '4', '--seed', '16', '--out', path.join(tmp, name)], { encoding: 'utf8', timeout: 180_000 });
  const r = go('own-pg.jsonl', ['--ops', '500']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const summary = JSON.parse(r.stdout.match(/history: summary (.*)/)[1]);
  assert.equal(summary.violations, 0);
  assert.equal(summary.crashes, 0);
  assert.ok(summary.faults.restart > 0 && summary.faults.sigstop > 0, JSON.stringify(summary.faults));
  const b = go('own-pg-broken.jsonl', ['--broken', '--ops', '1000', '--keys', '2', '--ttl', '20']);
  assert.equal(b.status, 1, b.stdout + b.stderr);
  assert.match(b.stdout, /VIOLATION \(a\) k[01]: write with token \d+ applied after mark \d+ was established/);
});

test('own data on Redis (the command list run inside the fence script): 0 violations under SIGSTOP, SIGKILL, lost replies and restarts; the check-outside-the-transaction host is caught', { skip: !installed.redis && !requireServices && 'redis-server is not installed' }, () => {
  const go = (name, extra) =>
    spawnSync(process.execPath, [run, '--engine', 'redis', '--own-data', ...extra, '--procs', '4', '--seed', '16', '--out', path.join(tmp, name)], { encoding: 'utf8', timeout: 180_000 });
  const r = go('own-redis.jsonl', ['--ops', '500']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const summary = JSON.parse(r.stdout.match(/history: summary (.*)/)[1]);
  assert.equal(summary.violations, 0);
  assert.equal(summary.crashes, 0);
  assert.ok(summary.faults.restart > 0 && summary.faults.sigstop > 0, JSON.stringify(summary.faults));
  // the final lines carry the caller's keys as read back (items:<key>, item_log:<key>)
  const finals = fs.readFileSync(path.join(tmp, 'own-redis.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"ev":"final"')).map((l) => JSON.parse(l));
  assert.equal(finals.length, 3);
  assert.ok(finals.every((f) => Array.isArray(f.ownLog) && f.hasValue === true && f.ownLog.includes(f.value.w)), JSON.stringify(finals).slice(0, 400));
  const b = go('own-redis-broken.jsonl', ['--broken', '--ops', '1000', '--keys', '2', '--ttl', '20']);
  assert.equal(b.status, 1, b.stdout + b.stderr);
  assert.match(b.stdout, /VIOLATION \(a\) k[01]: write with token \d+ applied after mark \d+ was established/);
});

for (const engine of ['sqlite', 'postgres']) {
  const kinds = {
    sqlite: ['fence-delete', 'fence-garbage', 'fence-lower', 'items-delete', 'items-delete-all', 'items-update', 'items-upsert', 'log-delete', 'log-insert', 'log-update'],
    postgres: ['cross-key', 'fence-delete', 'fence-garbage', 'fence-lower', 'fence-truncate', 'items-delete', 'items-truncate', 'items-update', 'items-upsert', 'log-delete', 'log-insert', 'log-update'],
  }[engine];
  test(`the guard on ${engine} (--guard): every raw write of the rogue writer refused by the database, none landed, 0 violations; without the guard (--unguarded) its writes land and are caught`, { skip: !installed[engine] && !requireServices && `${engine} is not installed` }, () => {
    const go = (name, extra) =>
      spawnSync(process.execPath, [run, '--engine', engine, '--own-data', '--guard', ...extra, '--ops', '500', '--procs', '4', '--seed', '16', '--out', path.join(tmp, name)], { encoding: 'utf8', timeout: 180_000 });
    const r = go(`guard-${engine}.jsonl`, []);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /guard \+ rogue writer/);
    const summary = JSON.parse(r.stdout.match(/history: summary (.*)/)[1]);
    assert.equal(summary.violations, 0);
    assert.equal(summary.crashes, 0);
    assert.equal(summary.rogue.landed, 0);
    assert.equal(summary.rogue.refused + summary.rogue.lost, summary.rogue.attempts);
    assert.ok(summary.rogue.refused >= 30, JSON.stringify(summary.rogue));
    // every kind of raw write was tried and refused, with the refusal it expected
    const lines = fs.readFileSync(path.join(tmp, `guard-${engine}.jsonl`), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const refusedKinds = new Set();
    const codes = new Set();
    const inv = new Map(lines.filter((l) => l.op === 'rogue' && l.ev === 'invoke').map((l) => [l.id, l]));
    for (const l of lines.filter((x) => x.op === 'rogue' && x.ev === 'fail' && !x.lost)) {
      assert.equal(l.code, inv.get(l.id).expect.code, JSON.stringify(l));
      refusedKinds.add(l.kind);
      codes.add(l.code);
    }
    // SQLite: the garbage state is an upsert over an existing fence row, which the guard turns into
    // no change at all (docs/guard.md): every such attempt answered with 0 rows changed
    if (engine === 'sqlite') {
      const garbage = lines.filter((x) => x.op === 'rogue' && x.ev === 'ok' && x.kind === 'fence-garbage');
      assert.ok(garbage.length > 0 && garbage.every((x) => x.rows === 0), JSON.stringify(garbage.slice(0, 3)));
      refusedKinds.add('fence-garbage');
    }
    assert.deepEqual([...refusedKinds].sort(), kinds);
    assert.deepEqual([...codes].sort(), engine === 'sqlite' ? ['GUARD_REFUSED', 'SQLITE_CONSTRAINT_TRIGGER', 'SQLITE_ERROR'] : ['FG001', 'FG002']);
    assert.ok(lines.some((l) => l.ev === 'guard'));

    // the control: the same rogue writer and no guard
    const c = go(`guard-${engine}-control.jsonl`, ['--unguarded']);
    assert.equal(c.status, 1, c.stdout + c.stderr);
    assert.match(c.stdout, /rogue writer with NO guard \(control\)/);
    const control = JSON.parse(c.stdout.match(/history: summary (.*)/)[1]);
    const others = fs.readFileSync(path.join(tmp, `guard-${engine}-control.jsonl`), 'utf8').split('\n').filter((l) => l.includes('"op":"rogue"') && l.includes('"ev":"fail"') && !l.includes('"lost":true'));
    assert.equal(control.rogue.landed, control.rogue.attempts - control.rogue.lost, others.slice(0, 5).join('\n'));
    assert.ok(control.rogue.landed > 0);
    // each landed attempt is a violation (g) (the report prints the first 50 violations: read the saved file)
    const landed = checkFile(path.join(tmp, `guard-${engine}-control.jsonl`)).violations.filter((v) => v.rule === 'g' && / landed: (\d+ row\(s\) changed|it ran) with no fence$/.test(v.message));
    assert.equal(landed.length, control.rogue.landed);
    assert.match(landed[0].message, /^the rogue writer's [a-z-]+ on (items|item_log|res) \(k[0-2]\) landed: /);
  });
}

for (const engine of ['sqlite', 'redis', 'postgres', 'etcd-cluster']) {
  const skip = !installed[engine] && !requireServices && `${engine} is not installed (bash scripts/services.sh install, scripts/etcd-cluster.sh install)`;
  test(`Ctrl-C (SIGINT to the process group) stops every client and the ${engine} server(s)`, { skip }, async () => {
    const out = path.join(tmp, `sigint-${engine}.jsonl`);
    // its own process group, as a shell gives a foreground job
    const child = spawn(process.execPath, [run, '--engine', engine, '--ops', '1000000', '--procs', '4', '--seed', '7', '--out', out], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.stderr.on('data', (d) => (text += d));
    const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
    const until = Date.now() + 60_000;
    const servers = { sqlite: 0, redis: 1, postgres: 1, 'etcd-cluster': 3 }[engine];
    const want = 4 + servers; // 4 clients + the server(s)
    while (pidsOf(`${out}.pids`).length < want || fs.readFileSync(out, 'utf8').split('\n').length < 200) {
      assert.ok(Date.now() < until, `the workload did not get going: ${text}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const pids = pidsOf(`${out}.pids`);
    process.kill(-child.pid, 'SIGINT');
    const { code } = await Promise.race([exited, new Promise((r) => setTimeout(() => r({ code: 'timeout' }), 30_000))]);
    if (code === 'timeout') process.kill(-child.pid, 'SIGKILL');
    assert.equal(code, 130, text);
    assert.match(text, /SIGINT: stopping clients and servers/);
    // every process it started, listed as it started them, is gone
    await new Promise((r) => setTimeout(r, 300));
    const left = pidsOf(`${out}.pids`).filter((p) => alive(p.pid));
    assert.deepEqual(left, []);
    assert.ok(pids.some((p) => p.what === `client p0`));
    assert.ok(pids.filter((p) => p.what === `${engine} server`).length >= servers, JSON.stringify(pids));
  });
}
