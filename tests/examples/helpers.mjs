// Shared by the example tests: install the packed tarball into a scratch
// project, send real HTTP requests on loopback, wait for servers, stop children.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * `npm pack`s pkg/ and installs the tarball into a new directory under build/
 * (inside the repo, so dev dependencies such as better-sqlite3 resolve from the
 * repo's node_modules). Returns the directory.
 */
export function scratchProject(prefix) {
  // FENCEGATE_TARBALL: test the examples against another build of the package
  const tarball = process.env.FENCEGATE_TARBALL || execFileSync('bash', [join(root, 'scripts/pack.sh')], { encoding: 'utf8' }).trim();
  mkdirSync(join(root, 'build'), { recursive: true });
  const dir = mkdtempSync(join(root, 'build', prefix));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent', tarball], { cwd: dir, stdio: 'inherit' });
  return dir;
}

/** One connection per request: servers may close a connection whose request body they did not read. */
export const agent = new http.Agent({ keepAlive: false });

/**
 * One HTTP request over a real socket. `headers` are sent exactly (an empty
 * string value is sent as an empty header). Resolves to { status, body }
 * (body parsed as JSON when it is JSON).
 */
export function request(base, method, path, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, base), { method, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let parsed = text;
        try {
          parsed = JSON.parse(text);
        } catch {}
        resolve({ status: res.statusCode, body: parsed });
      });
    });
    req.on('error', reject);
    // no test waits forever on a server that accepted the connection and never answers
    req.setTimeout(20_000, () => req.destroy(new Error(`no answer in 20 s: ${method} ${path}`)));
    req.end(body);
  });
}

/** A free TCP port on 127.0.0.1 (for programs that need a port number up front). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Polls `check()` until it resolves truthy, or throws after `ms`. */
export async function waitFor(check, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch {}
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Stops a child started with `detached: true` (its whole process group), then waits for it. */
export async function stopGroup(child, signal = 'SIGTERM') {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  try {
    process.kill(-child.pid, 'SIGCONT'); // a stopped process cannot act on SIGTERM
    process.kill(-child.pid, signal);
  } catch {}
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}
  }, 3000);
  await exited;
  clearTimeout(timer);
}

/** Reads a wrangler.jsonc (JSON with // line comments). */
export function parseJsonc(text) {
  return JSON.parse(text.replace(/^\s*\/\/.*$/gm, ''));
}

// fencegate/http answers (docs/http.md), as the examples send them.
const TITLES = {
  MISSING_TOKEN: 'Fencing token required',
  MALFORMED_TOKEN: 'Malformed fencing token',
  STALE_TOKEN: 'Stale fencing token',
};
const STATUS = { MISSING_TOKEN: 428, MALFORMED_TOKEN: 400, STALE_TOKEN: 409 };

/**
 * The expected body of a fenced answer: applied → `{ key, outcome, code: null,
 * token, markBefore, mark }`; refused → the RFC 9457 problem body without its
 * `detail` (prose, checked exactly in tests/js/integrations/http.test.mjs; see withoutDetail).
 */
export function fencedBody(key, outcome, code, token, markBefore, mark) {
  if (code === null) return { key, outcome, code, token, markBefore, mark };
  return {
    type: `urn:fencegate:problem:${code.toLowerCase().replaceAll('_', '-')}`,
    title: TITLES[code], status: STATUS[code], code, key, outcome, token, markBefore, mark,
  };
}

/** `{ status, body }` with a problem body's `detail` removed; throws unless it was a non-empty string. */
export function withoutDetail(answer) {
  const { body } = answer;
  if (body === null || typeof body !== 'object' || !('type' in body)) return answer;
  const { detail, ...rest } = body;
  if (typeof detail !== 'string' || detail.length === 0) throw new Error(`problem body without detail: ${JSON.stringify(body)}`);
  return { ...answer, body: rest };
}

/**
 * 20 concurrent PUTs to key `race` with tokens 1..20 in random order, through the service's
 * `put(key, token, value)` and `read(key)`: the key ends at mark 20 with token 20's value, the
 * applied writes form a serial history (each advance's markBefore is the previous applied
 * token), and every other write is a 409 STALE_TOKEN below the mark it met.
 */
export async function twentyRacingWrites(put, read) {
  const tokens = Array.from({ length: 20 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
  const answers = await Promise.all(tokens.map((t) => put('race', String(t), `value of ${t}`)));
  const history = answers.map((a, i) => ({ sent: tokens[i], status: a.status, ...a.body }));
  const why = `order ${tokens.join(',')}\n${JSON.stringify(history)}`;
  assert.deepEqual(await read('race'), { status: 200, body: { key: 'race', mark: '20', value: 'value of 20' } }, why);
  let prev = 0;
  for (const h of history.filter((x) => x.status === 200).sort((x, y) => x.sent - y.sent)) {
    assert.deepEqual([h.outcome, h.markBefore], ['advance', String(prev)], why);
    prev = h.sent;
  }
  for (const h of history.filter((x) => x.status !== 200)) {
    assert.deepEqual([h.status, h.code, h.mark], [409, 'STALE_TOKEN', h.markBefore], why);
    assert.ok(Number(h.markBefore) > h.sent, why);
  }
}
