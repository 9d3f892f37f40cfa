// Runs a documentation example as printed, in a fresh project directory: a
// package.json with "type": "module", node_modules/fencegate = the built
// package (its exports map decides what each import gets), nothing injected
// into the environment. The directory is inside the repository's build/ so the
// clients (better-sqlite3, ioredis, redis, pg, postgres, mysql2) resolve from the repository's
// node_modules, as they would from the project's own.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs `code` as `example.mjs` (`node`, or `deno run …` / `bun` when `runtime` says so); returns its stdout. */
export function runExample(code, { runtime = 'node' } = {}) {
  const deno = runtime === 'deno';
  mkdirSync(join(root, 'build'), { recursive: true });
  const dir = mkdtempSync(join(root, 'build', 'doc-example-'));
  try {
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'doc-example', private: true, type: 'module' }));
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(join(root, 'pkg'), join(dir, 'node_modules', 'fencegate'), 'dir');
    writeFileSync(join(dir, 'example.mjs'), code);
    const env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('EXAMPLE_')) delete env[k];
    const [cmd, args] = deno
      ? [join(root, 'node_modules/.bin/deno'), ['run', '--quiet', '--unstable-kv', '-A', 'example.mjs']]
      : runtime === 'bun'
        ? [join(root, 'node_modules/.bin/bun'), ['example.mjs']]
        : [process.execPath, ['example.mjs']];
    return execFileSync(cmd, args, { cwd: dir, encoding: 'utf8', env: deno ? { ...env, NO_COLOR: '1' } : env });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The `// expected` comments of the `console.log(...)` lines of `code`. */
export function expectedOutput(code) {
  return code
    .split('\n')
    .filter((l) => l.startsWith('console.log(') && l.includes('// '))
    .map((l) => l.slice(l.lastIndexOf('// ') + 3).trim());
}
