// The pure part of the `fencegate` command line: the secrets its arguments and
// environment carry (masked in every output), and the parsing of the
// arguments into a command. No I/O except `readFile` for --scopes; no process
// exit: a usage error is a thrown `UsageError`. Fuzzed by tests/fuzz/js.mjs (scripts/fuzz.sh).
import { parseArgs } from 'node:util';

export const MASK = '***';
/** Query or keyword parameters that carry a secret (libpq and redis URL forms). */
const SECRET_PARAM = /((?:^|[?&;\s])(?:password|passwd|pwd|pass|sslpassword|auth|secret|token)\s*=\s*)('[^']*'|[^&;\s'"]*)/gi;
const SECRET_PARAM_WIDE = /((?:^|[?&;\s])(?:password|passwd|pwd|pass|sslpassword|auth|secret|token)\s*=\s*)(\S*)/gi;
/**
 * `scheme://user:password@` and `scheme:/:password@` (any number of slashes): the
 * regular expression `URL_USERINFO` describes what `maskUserinfo` masks. It is
 * not run: V8 backtracks on it in quadratic time (found by tests/fuzz/js.mjs;
 * docs/decisions/cli-secrets-and-keys.md); `maskUserinfo` gives the same answer in one pass.
 */
export const URL_USERINFO = /([A-Za-z][A-Za-z0-9+.-]*:\/*[^\s:/@'"]*:)([^\s@'"]+)@/g;

const BREAK = /[\s'"]/;
const SCHEME_CHAR = /[A-Za-z0-9+.-]/;
const LETTER = /[A-Za-z]/;

/**
 * The index of the colon that ends the user part of the leftmost
 * `scheme:/*user:password` in text[s, e) that ends at e (where an '@' stands),
 * or -1. text[s, e) holds no whitespace, quote or '@'.
 */
function userinfoColon(text, s, e) {
  let letter = -1; // the first letter of the current run of scheme characters
  for (let i = s; i < e; i++) {
    const ch = text[i];
    if (ch !== ':') {
      if (!SCHEME_CHAR.test(ch)) letter = -1;
      else if (letter < 0 && LETTER.test(ch)) letter = i;
      continue;
    }
    if (letter >= 0) {
      // scheme text[letter, i) and its colon; then slashes, a user without ':' or '/', ':', a password
      let j = i + 1;
      while (j < e && text[j] === '/') j++;
      while (j < e && text[j] !== ':' && text[j] !== '/') j++;
      if (j < e && text[j] === ':' && j + 1 < e) return j;
    }
    letter = -1; // every start in this run ends at this colon: none matches
  }
  return -1;
}

/** `text.replace(URL_USERINFO, '$1***@')`, in linear time. */
export function maskUserinfo(text) {
  let out = '';
  let copied = 0;
  let segment = 0;
  for (let p = 0; p < text.length; p++) {
    const ch = text[p];
    if (ch !== '@') {
      if (BREAK.test(ch)) segment = p + 1;
      continue;
    }
    const colon = userinfoColon(text, segment, p);
    if (colon >= 0) {
      out += `${text.slice(copied, colon + 1)}${MASK}@`;
      copied = p + 1;
    }
    segment = p + 1;
  }
  return out + text.slice(copied);
}

function decoded(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Every secret in `args` (URL passwords, raw and percent-decoded; password parameters) and the environment. */
export function secretsIn(args, env) {
  const secrets = new Set();
  for (let arg of args) {
    if (typeof arg !== 'string') continue;
    arg = arg.replace(/^--[A-Za-z-]+=/, '');
    const at = arg.lastIndexOf('@');
    if (at > 0) {
      // userinfo: after `scheme:` and its slashes (however many), before the last '@'
      const userinfo = arg.slice(0, at).replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/*/, '');
      const colon = userinfo.indexOf(':');
      if (colon >= 0 && colon < userinfo.length - 1) {
        const password = userinfo.slice(colon + 1);
        secrets.add(password);
        secrets.add(decoded(password));
      }
    }
    for (const m of arg.matchAll(SECRET_PARAM)) {
      const value = m[2].replace(/^'(.*)'$/, '$1');
      if (value !== '') {
        secrets.add(value);
        secrets.add(decoded(value));
      }
    }
    // The same parameters read wider: up to the next '&' or whitespace (a query
    // value with a quote or ';' in it), and up to whitespace (a libpq keyword
    // value with '&' or ';'). Masking more is safe; found by tests/fuzz/js.mjs.
    for (const m of arg.matchAll(SECRET_PARAM_WIDE)) {
      for (const value of [m[2], m[2].split('&')[0]]) {
        if (value !== '') {
          secrets.add(value);
          secrets.add(decoded(value));
        }
      }
    }
  }
  for (const name of ['PGPASSWORD', 'REDISCLI_AUTH', 'MYSQL_PWD']) {
    if (typeof env[name] === 'string' && env[name] !== '') secrets.add(env[name]);
  }
  secrets.delete('');
  return [...secrets].sort((a, b) => b.length - a.length); // longest first: no partial leftovers
}

/** `text` with every known secret and every URL-shaped password masked. */
export function redact(text, secrets) {
  let out = String(text);
  for (const secret of secrets) out = out.split(secret).join(MASK);
  return maskUserinfo(out).replace(SECRET_PARAM, `$1${MASK}`);
}

// ---- arguments

/** A usage error: the message is printed (masked) before the usage text; exit status 2. */
export class UsageError extends Error {
  constructor(message) {
    super(message);
    this.name = 'UsageError';
  }
}

function fail(message) {
  throw new UsageError(message);
}

/** `[{ scope, keys }]` from --scope/--key in command-line order, or from --scopes FILE. */
function scopesOf(values, tokens, readFile) {
  if (values.keys !== undefined) {
    fail('--keys (a comma-separated list) is refused: it cannot name a key that contains a comma. Name each key with --key KEY (repeat it after its --scope), or list them in --scopes FILE.json');
  }
  if (values.scopes !== undefined) {
    if (values.scope !== undefined || values.key !== undefined) fail('give either --scopes FILE or --scope/--key, not both');
    let text;
    try {
      text = readFile(values.scopes);
    } catch (e) {
      fail(`cannot read --scopes ${values.scopes}: ${e.message}`);
    }
    try {
      return JSON.parse(text);
    } catch (e) {
      fail(`--scopes ${values.scopes} is not JSON: ${e.message}`);
    }
  }
  const list = [];
  for (const t of tokens) {
    if (t.kind !== 'option') continue;
    if (t.name === 'scope') list.push({ scope: t.value, keys: [] });
    else if (t.name === 'key') {
      if (list.length === 0) fail('each --key belongs to the --scope before it: give --scope first');
      list.at(-1).keys.push(t.value);
    }
  }
  if (list.length === 0) fail('name the scopes and keys: --scope SCOPE --key KEY …, or --scopes FILE.json');
  for (const s of list) if (s.keys.length === 0) fail(`give --scope ${JSON.stringify(s.scope)} at least one --key`);
  return list;
}

const STORES = ['sqlite', 'redis', 'postgres', 'mysql'];

/** The store named by --<pfx>sqlite / --<pfx>redis / --<pfx>postgres / --<pfx>mysql: `{ kind, target, table, prefix }`, or null. */
function storeOf(values, pfx) {
  const given = STORES.filter((k) => values[pfx + k] !== undefined);
  if (given.length > 1) fail(`give one of --${pfx}sqlite, --${pfx}redis, --${pfx}postgres, --${pfx}mysql`);
  if (given.length === 0) return null;
  return { kind: given[0], target: values[pfx + given[0]], table: values[`${pfx}table`], prefix: values[`${pfx}prefix`] };
}

/**
 * Parses the command line (without `node` and the script): `{ help: true }`, or
 * `{ help: false, resources, issuerStore, scopes, now, keyPrefix, epochs, dryRun }`.
 * Throws UsageError. `readFile(path)` reads --scopes FILE as text.
 */
export function parseCommand(argv, readFile) {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help' || (command === 'reconcile' && (rest.includes('--help') || rest.includes('-h')))) {
    return { help: true };
  }
  if (command === undefined) fail('');
  if (command === 'guard') return parseGuard(rest);
  if (command !== 'reconcile') fail(`unknown command ${JSON.stringify(command)}`);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      strict: true,
      tokens: true,
      options: {
        sqlite: { type: 'string' },
        redis: { type: 'string' },
        postgres: { type: 'string' },
        mysql: { type: 'string' },
        table: { type: 'string' },
        prefix: { type: 'string' },
        'issuer-sqlite': { type: 'string' },
        'issuer-redis': { type: 'string' },
        'issuer-postgres': { type: 'string' },
        'issuer-mysql': { type: 'string' },
        'issuer-table': { type: 'string' },
        'issuer-prefix': { type: 'string' },
        'key-prefix': { type: 'string' },
        epochs: { type: 'string' },
        scope: { type: 'string', multiple: true },
        key: { type: 'string', multiple: true },
        keys: { type: 'string', multiple: true },
        scopes: { type: 'string' },
        now: { type: 'string' },
        'dry-run': { type: 'boolean' },
      },
    });
  } catch (e) {
    fail(e.message);
  }
  const { values, tokens } = parsed;
  const scopes = scopesOf(values, tokens, readFile);
  let now;
  if (values.now !== undefined) {
    if (!/^(0|[1-9][0-9]*)$/.test(values.now) || !Number.isSafeInteger(Number(values.now))) fail('--now is host time in ms');
    now = Number(values.now);
  }
  if (values.epochs !== undefined && values.epochs !== 'number' && values.epochs !== 'bigint') fail(`--epochs is number or bigint, got ${JSON.stringify(values.epochs)}`);
  const resources = storeOf(values, '');
  if (resources === null) fail('name the store: --sqlite FILE, --redis URL, --postgres URL or --mysql URL');
  const issuerStore = storeOf(values, 'issuer-');
  return {
    help: false,
    resources,
    issuerStore,
    scopes,
    now,
    keyPrefix: values['key-prefix'],
    epochs: values.epochs,
    dryRun: values['dry-run'] === true,
  };
}

/**
 * `fencegate guard` (docs/guard.md): `{ help: false, command: 'guard', store, table,
 * key, fenceTable, remove, fence, dryRun }` (store: `{ kind, target }`, sqlite,
 * postgres or mysql), or `{ help: true, command: 'guard' }`. Throws UsageError.
 */
export function parseGuard(argv) {
  if (argv.includes('--help') || argv.includes('-h')) return { help: true, command: 'guard' };
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      options: {
        sqlite: { type: 'string' },
        postgres: { type: 'string' },
        mysql: { type: 'string' },
        table: { type: 'string' },
        key: { type: 'string' },
        'fence-table': { type: 'string' },
        remove: { type: 'boolean' },
        fence: { type: 'boolean' },
        'dry-run': { type: 'boolean' },
      },
    }));
  } catch (e) {
    fail(e.message);
  }
  const given = ['sqlite', 'postgres', 'mysql'].filter((k) => values[k] !== undefined);
  if (given.length !== 1) fail('name the database: one of --sqlite FILE, --postgres URL, --mysql URL');
  const remove = values.remove === true;
  if (values.fence === true && !remove) fail('--fence goes with --remove (installing always guards the fence table)');
  if (remove) {
    if (values.key !== undefined) fail('--remove takes no --key');
    if (values.table === undefined && values.fence !== true) fail('--remove needs --table NAME, or --fence, or both');
  } else {
    if (values.table === undefined) fail('name the protected table: --table NAME');
    if (values.key === undefined) fail("give the fence key of a row as an SQL expression: --key \"'orders/' || id\"");
  }
  return {
    help: false,
    command: 'guard',
    store: { kind: given[0], target: values[given[0]] },
    table: values.table,
    key: values.key,
    fenceTable: values['fence-table'],
    remove,
    fence: values.fence === true,
    dryRun: values['dry-run'] === true,
  };
}
