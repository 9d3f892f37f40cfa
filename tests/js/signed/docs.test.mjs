// Runs the complete examples (```js blocks that start with `import`) of
// docs/signed-tokens.md against the built package.
import { test } from 'node:test';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { docBlocks } from '../../doc-blocks.mjs';

const pkg = new URL('../../../pkg/node.mjs', import.meta.url).href;
const blocks = docBlocks('docs/signed-tokens.md', { lang: 'js' }).map((b) => b.code).filter((b) => b.startsWith('import'));

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
