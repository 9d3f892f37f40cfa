// Fuzzers for what the JS side parses (issue 16 item 4), on fast-check:
//
//   parseToken   token header text (and any JS value) against an independent
//                oracle: canonical decimal 1..2^64−1 → that value (number up to
//                2^53−1, bigint above), anything else → FencegateError
//                MALFORMED_TOKEN / MISSING_TOKEN; nothing else, never a crash.
//   cli-args     the command line of `fencegate reconcile` (pkg/bin/args.mjs
//                parseCommand): any argv → a command or a UsageError, never
//                another error; any scopes and keys (any text) written as
//                --scope=S --key=K come back exactly.
//   cli-urls     URL and keyword passwords (secretsIn / redact / maskUserinfo):
//                maskUserinfo equals the URL_USERINFO regular expression on
//                short text; a password given in a store URL or keyword string
//                never survives redact, raw or percent-encoded; long text is
//                masked in linear time.
//
// Usage: node tests/fuzz/js.mjs [TARGET,…|all] [--runs N] [--seed S]
// Prints one line per target: executions, time, findings. Exit 1 on a finding
// (with the counterexample and the seed that replays it).
import fc from 'fast-check';
import { parseArgs } from 'node:util';
import { parseToken, FencegateError, errorCodes } from '../../pkg/node.mjs';
import { parseCommand, UsageError, secretsIn, redact, maskUserinfo, URL_USERINFO, MASK } from '../../pkg/bin/args.mjs';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: { runs: { type: 'string' }, seed: { type: 'string' } },
});
const targets = (positionals[0] ?? 'all').split(',');
const seed = opts.seed === undefined ? 16 : Number(opts.seed);
const RUNS = opts.runs === undefined ? null : Number(opts.runs);
if (RUNS !== null && !(Number.isSafeInteger(RUNS) && RUNS > 0)) throw new Error('--runs must be a positive integer');

const MAX_U64 = 2n ** 64n - 1n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

// ---- parseToken

function tokenOracle(text) {
  if (typeof text !== 'string' || !/^[1-9][0-9]*$/.test(text) || BigInt(text) > MAX_U64) return null;
  const n = BigInt(text);
  return n <= MAX_SAFE ? Number(n) : n;
}

const digits = fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 22 });
const near = fc
  .constantFrom(1n, 9n, 10n, MAX_SAFE - 1n, MAX_SAFE, MAX_SAFE + 1n, MAX_U64 - 1n, MAX_U64, MAX_U64 + 1n, 10n ** 19n, 10n ** 20n)
  .chain((n) => fc.bigInt({ min: -3n, max: 3n }).map((d) => String(n + d)));
const decorated = fc
  .tuple(fc.constantFrom('', '+', '-', ' ', '0', '00', '\t', '\u00a0', '\uff11', '٣', '1e', '0x', '\u0000'), fc.oneof(digits, near), fc.constantFrom('', ' ', '.0', 'n', '\n', '\u0000', 'e3', '\ufeff'))
  .map(([a, b, c]) => a + b + c);
const tokenText = fc.oneof(digits, near, decorated, fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ maxLength: 4 }));

function checkToken(input) {
  const expected = tokenOracle(input);
  let got;
  try {
    got = parseToken(input);
  } catch (e) {
    if (!(e instanceof FencegateError) || !errorCodes().includes(e.code)) throw new Error(`parseToken(${show(input)}) threw a non-FencegateError: ${e}`);
    if (expected !== null) throw new Error(`parseToken(${show(input)}) refused canonical text: ${e.code}`);
    const allowed = typeof input === 'string' ? ['MALFORMED_TOKEN'] : ['MALFORMED_TOKEN', 'MISSING_TOKEN'];
    if (!allowed.includes(e.code)) throw new Error(`parseToken(${show(input)}) threw ${e.code}, expected ${allowed.join(' or ')}`);
    return;
  }
  if (expected === null) throw new Error(`parseToken(${show(input)}) accepted non-canonical input as ${show(got)}`);
  if (typeof got !== typeof expected || got !== expected) throw new Error(`parseToken(${show(input)}) = ${show(got)}, expected ${show(expected)}`);
}

// ---- cli-args

const OPTION_NAMES = ['sqlite', 'redis', 'postgres', 'mysql', 'table', 'prefix', 'issuer-sqlite', 'issuer-redis', 'issuer-postgres', 'issuer-mysql', 'issuer-table', 'issuer-prefix', 'key-prefix', 'epochs', 'scope', 'key', 'keys', 'scopes', 'now', 'dry-run', 'help', 'bogus'];
const anyText = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom('', '-', '--', '-h', '--help', '=', '0', '9007199254740992', 'a.json', 'redis://u:p@h'));
const argItem = fc.oneof(
  fc.constantFrom(...OPTION_NAMES).map((n) => `--${n}`),
  fc.tuple(fc.constantFrom(...OPTION_NAMES), anyText).map(([n, v]) => `--${n}=${v}`),
  anyText,
);
const argv = fc.tuple(fc.oneof(fc.constant('reconcile'), anyText), fc.array(argItem, { maxLength: 14 })).map(([c, rest]) => [c, ...rest]);
const scopesFile = fc.oneof(
  fc.constant(null),
  fc.json(),
  fc.string({ maxLength: 30 }),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 })).map((o) => JSON.stringify(o)),
);

function isStoreSpec(s) {
  return s !== null && ['sqlite', 'redis', 'postgres', 'mysql'].includes(s.kind) && typeof s.target === 'string' &&
    (s.table === undefined || typeof s.table === 'string') && (s.prefix === undefined || typeof s.prefix === 'string');
}

function checkArgs([args, file]) {
  const readFile = () => {
    if (file === null) throw Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' });
    return file;
  };
  let cmd;
  try {
    cmd = parseCommand(args, readFile);
  } catch (e) {
    if (e instanceof UsageError && typeof e.message === 'string') return;
    throw new Error(`parseCommand(${show(args)}) threw ${e && e.name}: ${e && e.message}`);
  }
  if (cmd.help === true) {
    if (Object.keys(cmd).length !== 1) throw new Error(`help with extra fields: ${show(cmd)}`);
    return;
  }
  if (!isStoreSpec(cmd.resources)) throw new Error(`bad resources ${show(cmd.resources)} for ${show(args)}`);
  if (cmd.issuerStore !== null && !isStoreSpec(cmd.issuerStore)) throw new Error(`bad issuerStore for ${show(args)}`);
  if (cmd.now !== undefined && !(Number.isSafeInteger(cmd.now) && cmd.now >= 0)) throw new Error(`bad now ${show(cmd.now)} for ${show(args)}`);
  if (typeof cmd.dryRun !== 'boolean') throw new Error('dryRun is not a boolean');
  if (!args.some((a) => a.startsWith('--scopes'))) {
    // from --scope/--key: each scope has at least one key, all strings
    if (!Array.isArray(cmd.scopes) || cmd.scopes.length === 0) throw new Error(`no scopes for ${show(args)}`);
    for (const s of cmd.scopes) {
      if (typeof s.scope !== 'string' || !Array.isArray(s.keys) || s.keys.length === 0 || !s.keys.every((k) => typeof k === 'string')) {
        throw new Error(`bad scope entry ${show(s)} for ${show(args)}`);
      }
    }
  }
}

const mapping = fc.array(
  fc.record({ scope: fc.string({ unit: 'binary', maxLength: 10 }), keys: fc.array(fc.string({ unit: 'binary', maxLength: 10 }), { minLength: 1, maxLength: 4 }) }),
  { minLength: 1, maxLength: 4 },
);

function checkRoundTrip(list) {
  const args = ['reconcile', '--sqlite', 'app.db'];
  for (const { scope, keys } of list) {
    args.push(`--scope=${scope}`);
    for (const k of keys) args.push(`--key=${k}`);
  }
  const cmd = parseCommand(args, () => {
    throw new Error('no file');
  });
  if (JSON.stringify(cmd.scopes) !== JSON.stringify(list)) throw new Error(`round trip: ${show(list)} came back as ${show(cmd.scopes)}`);
}

// ---- cli-urls

const pwChar = fc.constantFrom(...'abcXYZ019-_.~!$&\'()+,;=:/?#[]@% "\\é€😀\u2028\u00a0\t');
const password = fc.string({ unit: pwChar, minLength: 1, maxLength: 16 });
const urlish = fc.string({ unit: fc.constantFrom(...'ab:/@x1+.-\' "?&;=\npwdpassword'), maxLength: 60 });

function checkUrl([pw, user, scheme, form]) {
  const enc = encodeURIComponent(pw);
  const given =
    form === 'url' ? `${scheme}://${user}:${enc}@db.example:5432/app?sslmode=require`
      : form === 'raw' ? `${scheme}://${user}:${pw}@db.example/app`
        : form === 'query' ? `${scheme}://db.example/app?user=${user}&password=${enc}`
          : form === 'env' ? `${scheme}://${user}@db.example/app`
            : `host=db.example user=${user} password='${pw.replaceAll("'", '')}' dbname=app`;
  const hidden = form === 'keyword' ? [pw.replaceAll("'", '')] : form === 'raw' || form === 'env' ? [pw] : [pw, enc];
  if (form === 'raw' && /[@\s]/.test(pw)) return; // not a URL the driver would read either
  if (form === 'keyword' && (hidden[0] === '' || /[\s]/.test(hidden[0]))) return;
  // the password in MYSQL_PWD / PGPASSWORD / REDISCLI_AUTH instead of the URL (form 'env')
  const env = form !== 'env' ? {} : { [scheme === 'mysql' ? 'MYSQL_PWD' : scheme.startsWith('redis') ? 'REDISCLI_AUTH' : 'PGPASSWORD']: pw };
  const secrets = secretsIn(['reconcile', `--${scheme === 'mysql' ? 'mysql' : 'postgres'}=${given}`], env);
  const printed = redact(`connect ${given} failed: password "${pw}" (${enc}) for ${user} rejected`, secrets);
  for (const h of hidden) {
    if (printed.includes(h)) throw new Error(`password ${show(h)} survives in ${show(printed)} (argument ${show(given)}, secrets ${show(secrets)})`);
  }
}

function checkMask(text) {
  const a = maskUserinfo(text);
  const b = text.replace(URL_USERINFO, `$1${MASK}@`);
  if (a !== b) throw new Error(`maskUserinfo(${show(text)}) = ${show(a)}, the regex gives ${show(b)}`);
  redact(text, secretsIn([text], { PGPASSWORD: text.slice(0, 3) })); // never throws
}

const longText = fc
  .tuple(fc.array(fc.constantFrom('a:', 'x:/', 'a', '://', ':', '@', 'p=', ' password=', '%', 'é'), { minLength: 1, maxLength: 4 }), fc.integer({ min: 30_000, max: 80_000 }))
  .map(([parts, n]) => parts.join('').repeat(Math.ceil(n / parts.join('').length)));

function checkLinear(text) {
  const t = process.hrtime.bigint();
  redact(text, secretsIn([text], {}));
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  // linear: under 100 ms here even on a loaded machine; the quadratic regex took 3–20 s at these sizes
  if (ms > 1500) throw new Error(`redact took ${ms.toFixed(0)} ms on ${text.length} chars: ${show(text.slice(0, 40))}…`);
}

// ---- runner

function show(v) {
  return typeof v === 'bigint' ? `${v}n` : JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x));
}

const TARGETS = {
  parseToken: [
    ['canonical text oracle', tokenText, checkToken, 40_000],
    ['any JS value', fc.anything(), checkToken, 10_000],
  ],
  'cli-args': [
    ['any argv', fc.tuple(argv, scopesFile), checkArgs, 20_000],
    ['--scope=S --key=K round trip', mapping, checkRoundTrip, 5_000],
  ],
  'cli-urls': [
    ['maskUserinfo equals the regex', urlish, checkMask, 30_000],
    ['passwords never printed', fc.tuple(password, fc.string({ unit: fc.constantFrom(...'usr-é'), maxLength: 6 }), fc.constantFrom('postgres', 'postgresql', 'redis', 'rediss', 'mysql', 'x+y.z-1'), fc.constantFrom('url', 'raw', 'query', 'keyword', 'env')), checkUrl, 20_000],
    ['linear time on long text', longText, checkLinear, 50],
  ],
};

let failed = false;
for (const [name, props] of Object.entries(TARGETS)) {
  if (!targets.includes('all') && !targets.includes(name)) continue;
  for (const [what, arb, check, ciRuns] of props) {
    const numRuns = RUNS === null ? ciRuns : Math.max(1, Math.round((RUNS * ciRuns) / props.reduce((n, p) => n + p[3], 0)));
    const started = Date.now();
    const out = fc.check(fc.property(arb, (x) => { check(x); }), { numRuns, seed, endOnFailure: true });
    const s = ((Date.now() - started) / 1000).toFixed(1);
    if (out.failed) {
      failed = true;
      console.log(`fuzz js ${name} / ${what}: FINDING after ${out.numRuns} executions (seed ${seed}, path ${out.counterexamplePath}): ${out.errorInstance?.message ?? out.error}`);
    } else {
      console.log(`fuzz js ${name} / ${what}: ${out.numRuns} executions in ${s} s (seed ${seed}), 0 findings`);
    }
  }
}
process.exit(failed ? 1 : 0);
