// Runs the complete examples (```js blocks that start with `import`) of
// docs/signed-tokens.md against the built package.
import { test } from 'node:test';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const doc = readFileSync(new URL('../../../docs/signed-tokens.md', import.meta.url), 'utf8');
const pkg = new URL('../../../pkg/node.mjs', import.meta.url).href;
const blocks = [...doc.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]).filter((b) => b.startsWith('import'));

test('docs/signed-tokens.md has runnable examples', () => {
  if (blocks.length === 0) throw new Error('no runnable example found');
});

blocks.forEach((code, i) => {
  test(`docs/signed-tokens.md example ${i + 1} runs`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fencegate-doc-'));
    const file = join(dir, `example-${i}.mjs`);
    writeFileSync(file, code.replaceAll("from 'fencegate'", `from '${pkg}'`));
    await import(pathToFileURL(file).href);
  });
});
