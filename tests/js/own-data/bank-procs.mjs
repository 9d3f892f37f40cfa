// The bank-transfer race's writers as OS processes (Node or Deno), on one line protocol over
// stdio: the process gets its config as JSON in its last argument, prints `ready` when it is
// connected, starts on a line `go` on its stdin, and prints its outcomes as one JSON line last.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** Starts `[command, args]` for each config, waits until all are ready, says go; resolves to each one's outcomes. */
export async function runProcs(commands, { cwd, env = process.env } = {}) {
  const procs = commands.map(([command, args]) => {
    const child = spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = [];
    let onLine = () => {};
    createInterface({ input: child.stdout }).on('line', (l) => {
      lines.push(l);
      onLine();
    });
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const ready = new Promise((resolve, reject) => {
      onLine = () => lines.includes('ready') && resolve();
      exited.then(({ code, signal }) => reject(new Error(`${command} exited (${code ?? signal}) before it was ready: ${lines.join('\n')}`)));
    });
    return { child, lines, exited, ready };
  });
  try {
    await Promise.all(procs.map((p) => p.ready));
  } catch (e) {
    for (const p of procs) p.child.kill();
    throw e;
  }
  for (const p of procs) p.child.stdin.end('go\n');
  return Promise.all(procs.map(async (p) => {
    const { code, signal } = await p.exited;
    if (code !== 0) throw new Error(`a writer exited with ${code ?? signal}: ${p.lines.join('\n')}`);
    return JSON.parse(p.lines.at(-1));
  }));
}

/** In a Node writer: resolves at the `go` line on stdin. */
export function go() {
  return new Promise((resolve) => {
    let text = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d) => {
      text += d;
      if (text.includes('go\n')) resolve();
    });
  });
}
