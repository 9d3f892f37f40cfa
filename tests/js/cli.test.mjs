// The `fencegate` command line (issue 13 items 5 and 6): no password on any
// output path, every key can be named, `--help` exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Gate, Issuer } from '../../pkg/node.mjs';
import { SqliteStore } from '../../pkg/adapters/sqlite.mjs';

const require = createRequire(import.meta.url);
const CLI = new URL('../../pkg/bin/fencegate.mjs', import.meta.url).pathname;
const T = 1_000_000;

function cli(args, env = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('fencegate --help prints the usage on stdout and exits 0', () => {
  for (const args of [['--help'], ['-h'], ['reconcile', '--help']]) {
    const r = cli(args);
    assert.equal(r.status, 0);
    assert.match(r.stdout, /^usage: fencegate reconcile/);
    assert.match(r.stdout, /--key KEY/);
    assert.equal(r.stderr, '');
  }
  const none = cli([]);
  assert.deepEqual([none.status, none.stdout], [2, '']);
});

// ## Item 6: a key list that cannot name every key

async function fixture() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fencegate-cli-keys-'));
  const file = path.join(dir, 'app.db');
  const Database = require('better-sqlite3');
  const db = new Database(file);
  const store = new SqliteStore(db);
  // The input: an issuer at epoch 5, key `orders/1,2` at mark 3, key `2` (of another scope) at mark 9.
  await new Issuer(store).raise({ scope: 'orders', atLeast: 5, now: T });
  await new Gate(store).establish('orders/1,2', 3);
  await new Gate(store).establish('2', 9);
  db.close();
  const state = async () => {
    const d = new Database(file);
    try {
      const s = new SqliteStore(d);
      const gate = new Gate(s);
      return {
        issuer: (await new Issuer(s).current('orders')).epoch,
        keys: await Promise.all(['orders/1,2', '2', 'orders/1'].map(async (k) => {
          const r = await gate.inspect(k);
          return [k, r.exists, r.mark, r.quarantine];
        })),
      };
    } finally {
      d.close();
    }
  };
  return { dir, file, state, done: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

const UNTOUCHED = { issuer: 5, keys: [['orders/1,2', true, 3, null], ['2', true, 9, null], ['orders/1', false, 0, null]] };

test('issue 32 item 15: exit 2 for every usage error (the command line, or an argument the library refused: INVALID_ARGUMENT), 1 for a failure while running, nothing changed', async () => {
  const f = await fixture();
  try {
    const run = (...args) => cli(['reconcile', '--sqlite', f.file, ...(args.includes('--now') ? [] : ['--now', String(T)]), ...args]);
    const usage = [
      [['--scope', 'orders', '--key', 'a', '--frobnicate'], null],
      [['--scope', 'orders', '--key', 'a', '--now', '1.5'], null],
      [['--scope', 'orders', '--key', 'a', '--epochs', 'float'], null],
      [['--scope', 'orders', '--key', ''], 'INVALID_ARGUMENT'],
      [['--scope', 'orders', '--key', 'issuer:orders'], 'INVALID_ARGUMENT'],
      [['--scope', '', '--key', 'a'], 'INVALID_ARGUMENT'],
      [['--scope', 'orders', '--key', 'a', '--table', 'no such table'], 'INVALID_ARGUMENT'],
    ];
    for (const [args, code] of usage) {
      const r = run(...args);
      assert.deepEqual([r.status, r.stdout], [2, ''], `${args.join(' ')}: ${r.stderr}`);
      if (code === null) assert.match(r.stderr, /^fencegate: .*\nusage: fencegate reconcile/s, args.join(' '));
      else assert.equal(JSON.parse(r.stderr).error.code, code, args.join(' '));
    }
    assert.deepEqual(await f.state(), UNTOUCHED);
    // A failure while running (the store file does not exist): exit 1 with the JSON error.
    const missing = cli(['reconcile', '--sqlite', path.join(f.dir, 'none.db'), '--scope', 'orders', '--key', 'a', '--now', String(T)]);
    assert.deepEqual([missing.status, missing.stdout], [1, '']);
    assert.equal(typeof JSON.parse(missing.stderr).error.message, 'string');
  } finally {
    f.done();
  }
});

test('--keys "orders/1,2" is refused (exit 2) and changes nothing: the issuer is not raised from key 2 nobody named', async () => {
  const f = await fixture();
  try {
    const r = cli(['reconcile', '--sqlite', f.file, '--scope', 'orders', '--keys', 'orders/1,2', '--now', String(T)]);
    assert.equal(r.status, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^fencegate: --keys \(a comma-separated list\) is refused: it cannot name a key that contains a comma/);
    assert.deepEqual(await f.state(), UNTOUCHED);
    // Without a comma too: the form is refused, not guessed at.
    assert.equal(cli(['reconcile', '--sqlite', f.file, '--scope', 'orders', '--keys', 'orders/1']).status, 2);
    assert.deepEqual(await f.state(), UNTOUCHED);
  } finally {
    f.done();
  }
});

test('--key names the key "orders/1,2" exactly: it is quarantined at the issuer\'s 5, the issuer stays 5, key 2 is not read', async () => {
  const f = await fixture();
  try {
    const expected = [{ scope: 'orders', target: 'resource', key: 'orders/1,2', action: 'quarantine', markBefore: 3, markAfter: 5, floor: 5 }];
    const dry = cli(['reconcile', '--sqlite', f.file, '--scope', 'orders', '--key', 'orders/1,2', '--now', String(T), '--dry-run']);
    assert.equal(dry.status, 0, dry.stderr);
    assert.deepEqual(JSON.parse(dry.stdout).changes, expected);
    assert.deepEqual(await f.state(), UNTOUCHED);
    const r = cli(['reconcile', '--sqlite', f.file, '--scope', 'orders', '--key', 'orders/1,2', '--now', String(T)]);
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.deepEqual(report.changes, expected);
    assert.deepEqual(report.scopes.map((s) => [s.scope, s.keys.map((k) => k.key)]), [['orders', ['orders/1,2']]]);
    assert.deepEqual(await f.state(), { issuer: 5, keys: [['orders/1,2', true, 5, 5], ['2', true, 9, null], ['orders/1', false, 0, null]] });
  } finally {
    f.done();
  }
});

test('--scopes FILE.json names keys of any form; --key needs its --scope; a scope needs a key', async () => {
  const f = await fixture();
  try {
    const json = path.join(f.dir, 'scopes.json');
    fs.writeFileSync(json, JSON.stringify({ orders: ['orders/1,2'] }));
    const r = cli(['reconcile', '--sqlite', f.file, '--scopes', json, '--now', String(T), '--dry-run']);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout).changes, [{ scope: 'orders', target: 'resource', key: 'orders/1,2', action: 'quarantine', markBefore: 3, markAfter: 5, floor: 5 }]);
    fs.writeFileSync(json, JSON.stringify([{ scope: 'orders', keys: ['orders/1,2', ' spaced key '] }]));
    const list = cli(['reconcile', '--sqlite', f.file, '--scopes', json, '--now', String(T), '--dry-run']);
    assert.equal(list.status, 0, list.stderr);
    assert.deepEqual(JSON.parse(list.stdout).scopes[0].keys.map((k) => [k.key, k.mark]), [['orders/1,2', 3], [' spaced key ', 0]]);
    // Usage errors (exit 2), nothing changed.
    for (const args of [
      ['--key', 'orders/1,2', '--scope', 'orders'],
      ['--scope', 'orders'],
      ['--scope', 'orders', '--key', 'a', '--scope', 'mail'],
      ['--scopes', json, '--scope', 'orders', '--key', 'a'],
      ['--scopes', path.join(f.dir, 'missing.json')],
    ]) {
      const u = cli(['reconcile', '--sqlite', f.file, ...args, '--now', String(T)]);
      assert.deepEqual([u.status, u.stdout], [2, ''], args.join(' '));
    }
    fs.writeFileSync(json, '{"orders": ["a",');
    assert.equal(cli(['reconcile', '--sqlite', f.file, '--scopes', json]).status, 2);
    // A file whose keys are not all strings: INVALID_ARGUMENT (a usage error: exit 2), checked before anything is read.
    fs.writeFileSync(json, JSON.stringify({ orders: ['orders/1,2', 7] }));
    const bad = cli(['reconcile', '--sqlite', f.file, '--scopes', json, '--now', String(T)]);
    assert.equal(bad.status, 2);
    assert.equal(JSON.parse(bad.stderr).error.code, 'INVALID_ARGUMENT');
    assert.deepEqual(await f.state(), UNTOUCHED);
  } finally {
    f.done();
  }
});

// ## Item 5: passwords in CLI output

const pg = process.env.FENCEGATE_PG_URL ? new URL(process.env.FENCEGATE_PG_URL) : null;
const redis = process.env.FENCEGATE_REDIS_URL ? new URL(process.env.FENCEGATE_REDIS_URL) : null;
const mysqlUrl = process.env.FENCEGATE_MYSQL_URL ? new URL(process.env.FENCEGATE_MYSQL_URL) : null;
const pgEnv = pg && { PGHOST: pg.hostname, PGPORT: pg.port, PGUSER: pg.username || 'postgres' };

/** [what, arguments, environment, the secrets that must not appear, exit status]. */
const CASES = [
  ['redis: a malformed URL (one slash) becomes a socket path', ['--redis', 'redis:/:S3cretPW@127.0.0.1:6379'], {}, ['S3cretPW'], 1],
  ['redis: nothing listens on the port', ['--redis', 'redis://:S3cretPW@127.0.0.1:1'], {}, ['S3cretPW'], 1],
  ['redis: user and password, nothing listens', ['--redis', 'redis://app:Pa55-word@127.0.0.1:1/0'], {}, ['Pa55-word'], 1],
  ['redis: the issuer store malformed', ['--sqlite', '/nonexistent/x.db', '--issuer-redis', 'rediss:/:IssuerPW@127.0.0.1:1'], {}, ['IssuerPW'], 1],
  ['postgres: nothing listens on the port', ['--postgres', 'postgresql://appuser:supersecret@127.0.0.1:1/db'], {}, ['supersecret'], 1],
  ['postgres: a percent-encoded password', ['--postgres', 'postgres://u:p%40ss%2Fw0rd@127.0.0.1:1/db'], {}, ['p%40ss%2Fw0rd', 'p@ss/w0rd'], 1],
  ['postgres: a password parameter', ['--postgres', 'postgres://127.0.0.1:1/db?password=qu3ryS3cret'], {}, ['qu3ryS3cret'], 1],
  ['postgres: a URL that does not parse', ['--postgres', 'postgres://u:Br0kenPW@[::1/db'], {}, ['Br0kenPW'], 1],
  ['postgres: PGPASSWORD in the environment', ['--postgres', 'postgres://u@127.0.0.1:1/db'], { PGPASSWORD: 'EnvS3cret' }, ['EnvS3cret'], 1],
  ['postgres: --postgres=URL form', ['--postgres=postgresql://appuser:EqS3cret@127.0.0.1:1/db'], {}, ['EqS3cret'], 1],
  ['mysql: nothing listens on the port', ['--mysql', 'mysql://app:MyS3cretPW@127.0.0.1:1/db'], {}, ['MyS3cretPW'], 1],
  ['mysql: a percent-encoded password', ['--mysql', 'mysql://app:my%40pw%2F1@127.0.0.1:1/db'], {}, ['my%40pw%2F1', 'my@pw/1'], 1],
  ['mysql: MYSQL_PWD in the environment', ['--mysql', 'mysql://app@127.0.0.1:1/db'], { MYSQL_PWD: 'MyEnvS3cret' }, ['MyEnvS3cret'], 1],
  ['mysql: the issuer store', ['--sqlite', '/nonexistent/x.db', '--issuer-mysql', 'mysql://app:IssMyPW@127.0.0.1:1/db'], {}, ['IssMyPW'], 1],
  ['usage: a URL as an unknown command', null, {}, ['CmdS3cret'], 2],
  ['usage: a URL in a misspelled option', ['--postgress', 'postgres://u:OptS3cret@127.0.0.1:1/db'], {}, ['OptS3cret'], 2],
  ...(pg
    ? [
        // The input: PGHOST/PGPORT/PGUSER reach a real server, which answers that the database `appuser:supersecret@…` does not exist.
        ['postgres (real): a malformed URL becomes a database name', ['--postgres', 'postgresql:/appuser:supersecret@localhost:5432/db'], pgEnv, ['supersecret'], 1],
        ['postgres (real): a password the server ignores, no table', ['--postgres', `postgres://${pgEnv.PGUSER}:Tru5tIgnored@${pg.host}/postgres`, '--table', 'fg_no_such_table'], {}, ['Tru5tIgnored'], 1],
        ['postgres (real): a database that does not exist', ['--postgres', `postgres://${pgEnv.PGUSER}:DbS3cret@${pg.host}/no_such_db`], {}, ['DbS3cret'], 1],
      ]
    : []),
  ...(mysqlUrl
    ? [
        // The real server refuses the wrong password (1045 access denied) and the right user with no such database.
        ['mysql (real): a wrong password', ['--mysql', `mysql://${mysqlUrl.username}:Wr0ngMyPW@${mysqlUrl.host}/fencegate`], {}, ['Wr0ngMyPW'], 1],
        ['mysql (real): a table that does not exist', ['--mysql', process.env.FENCEGATE_MYSQL_URL, '--table', 'fg_no_such_table'], {}, [mysqlUrl.password], 1],
      ]
    : []),
  ...(redis
    ? [
        // Redis without requirepass: ioredis's AUTH is refused, the connection works on, the report prints (exit 0).
        ['redis (real): a password the server has none for', ['--redis', `redis://:NoAuthS3cret@${redis.host}`], {}, ['NoAuthS3cret'], 0],
        ['redis (real): a malformed URL to a real port', ['--redis', `redis:/:S3cretPW@${redis.host}`], {}, ['S3cretPW'], 1],
      ]
    : []),
];

test('no password reaches stdout or stderr, whatever fails (bad URLs, refused connections, driver errors)', { timeout: 240_000 }, () => {
  if (process.env.FENCEGATE_REQUIRE_SERVICES === '1') {
    assert.ok(pg && redis && mysqlUrl, 'the real-service cases need FENCEGATE_PG_URL, FENCEGATE_REDIS_URL and FENCEGATE_MYSQL_URL');
  }
  for (const [what, args, env, secrets, status] of CASES) {
    const argv = args === null ? ['postgres://u:CmdS3cret@127.0.0.1/db'] : ['reconcile', ...args, '--scope', 's', '--key', 'k', '--now', '1'];
    const r = cli(argv, env);
    const out = r.stdout + r.stderr;
    assert.equal(r.status, status, `${what}: ${out}`);
    for (const secret of secrets) assert.ok(!out.includes(secret), `${what}: the secret ${secret} was printed:\n${out}`);
    assert.ok(!out.includes('Unhandled error event'), `${what}: ${out}`);
    if (status === 1) {
      const error = JSON.parse(r.stderr).error; // one JSON error, nothing else on stderr
      assert.equal(typeof error.message, 'string', what);
      assert.equal(r.stdout, '', what);
    }
  }
});

test('--mysql reads back what MysqlStore wrote: the issuer is raised to the key\'s mark, the password never printed', { skip: !mysqlUrl && 'FENCEGATE_MYSQL_URL is not set' }, async () => {
  const mysql = require('mysql2/promise');
  const { MysqlStore } = await import('../../pkg/adapters/mysql.mjs');
  const table = `fg_cli_${process.pid}`;
  const pool = mysql.createPool(process.env.FENCEGATE_MYSQL_URL);
  try {
    const store = await new MysqlStore(pool, { table }).init();
    await new Issuer(store).raise({ scope: 'orders', atLeast: 5, now: T });
    await new Gate(store).write('orders/1', 7, 'paid');
    const args = ['reconcile', '--mysql', process.env.FENCEGATE_MYSQL_URL, '--table', table, '--scope', 'orders', '--key', 'orders/1', '--now', '1'];
    const dry = cli([...args, '--dry-run']);
    assert.equal(dry.status, 0, dry.stderr);
    assert.equal((await new Issuer(store).current('orders')).epoch, 5, 'a dry run changes nothing');
    const r = cli(args);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout).changes, [
      { scope: 'orders', target: 'issuer', action: 'raise', epochBefore: 5, epochAfter: 7, revoked: null },
    ]);
    assert.ok(!(r.stdout + r.stderr + dry.stdout + dry.stderr).includes(mysqlUrl.password));
    assert.equal((await new Issuer(store).current('orders')).epoch, 7);
    assert.deepEqual(await new Gate(store).read('orders/1'), { mark: 7, value: 'paid', hasValue: true });
    assert.equal(JSON.parse(cli(args).stdout).changed, false);
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await pool.end();
  }
});

// ## Issue 16 item 4: what the fuzzer (tests/fuzz/js.mjs cli-urls) found

test('a query or keyword password with a quote, ";" or "&" in it is masked whole (fuzz finding)', async () => {
  const { secretsIn, redact } = await import('../../pkg/bin/args.mjs');
  // before: the parameter pattern stopped at the quote and collected nothing, so the whole password was printed
  const arg = "--postgres=postgres://db.example/app?user=u&password='p;w%C3%A9&sslmode=require";
  const secrets = secretsIn(['reconcile', arg], {});
  assert.deepEqual(secrets, ["'p;w%C3%A9&sslmode=require", "'p;wé&sslmode=require", "'p;w%C3%A9", "'p;wé"]);
  assert.equal(redact(`failed: ${arg.slice(11)} pw='p;wé`, secrets), 'failed: postgres://db.example/app?user=u&password=*** pw=***');
  // libpq keyword form: before, only "ab" was collected and "&c;d" was printed
  const k = 'host=h password=ab&c;d dbname=x';
  assert.equal(redact(`conn ${k}`, secretsIn([k], {})), 'conn host=h password=*** dbname=x');
});

test('URL passwords are masked in linear time (fuzz finding: the regex backtracked quadratically)', async () => {
  const { redact, secretsIn, maskUserinfo, URL_USERINFO } = await import('../../pkg/bin/args.mjs');
  for (const text of ['x:/'.repeat(16_000), 'a:'.repeat(24_000), 'a'.repeat(48_000)]) {
    const t = process.hrtime.bigint();
    assert.equal(redact(text, secretsIn([text], {})), text); // nothing to mask
    assert.ok(Number(process.hrtime.bigint() - t) / 1e6 < 1000); // about 10 ms; 2.7 s (first text) before
  }
  for (const [text, masked] of [
    ['postgres://u:p@h/db', 'postgres://u:***@h/db'],
    ['redis://:secret@127.0.0.1:6379', 'redis://:***@127.0.0.1:6379'],
    ['x a:/:pw@h and b://us:er:pa@ss@x', 'x a:/:***@h and b://us:***@ss@x'],
    ['"a:b:c@d"', '"a:b:***@d"'],
    ['a:b:@c', 'a:b:@c'],
    ['a:/b/c:d@e', 'a:/b/c:d@e'],
    ['1a:b:c@d', '1a:b:***@d'],
  ]) {
    assert.equal(maskUserinfo(text), masked);
    assert.equal(text.replace(URL_USERINFO, '$1***@'), masked);
  }
});
