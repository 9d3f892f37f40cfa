// The one extractor of fenced code blocks from the repository's Markdown, so
// tests run (or compare) the docs' examples exactly as printed.
import { readFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);

/**
 * Every fenced block of the repository file `file` (e.g. `docs/issuer.md`), in
 * order, as `{ lang, code, label, file, section, offset }`:
 * - `label`: `example: restore` when the block's first line is
 *   `// example: restore` (any `// word: name`); that line is not in `code`;
 * - `file`: `PATH` when the line above the fence is `<!-- file: PATH -->`;
 * - `section`: the `## ` heading the block sits under (null above the first);
 * - `offset`: where the block starts in the file's text.
 * `lang` and `section` filter (`section` exact, like `readmeBlocks`).
 */
export function docBlocks(file, { lang, section } = {}) {
  const text = readFileSync(new URL(file, root), 'utf8');
  const headings = [...text.matchAll(/^## (.*)$/gm)];
  const blocks = [];
  for (const m of text.matchAll(/```(\w*)\n([\s\S]*?)```/g)) {
    const heading = headings.filter((h) => h.index < m.index).pop();
    const first = /^\/\/ (\w+: [\w-]+)\n/.exec(m[2]);
    const marker = /<!-- file: (\S+) -->\n$/.exec(text.slice(Math.max(0, m.index - 300), m.index));
    blocks.push({
      lang: m[1],
      code: first === null ? m[2] : m[2].slice(first[0].length),
      label: first === null ? null : first[1],
      file: marker === null ? null : marker[1],
      section: heading === undefined ? null : heading[1],
      offset: m.index,
    });
  }
  return blocks.filter((b) => (lang === undefined || b.lang === lang) && (section === undefined || b.section === section));
}

/** The code of the one block of `file` labelled `label` (`// example: restore`); throws when there is none. */
export function docBlock(file, label) {
  const found = docBlocks(file).filter((b) => b.label === label);
  if (found.length !== 1) throw new Error(`${file} has ${found.length} blocks labelled "${label}", not one`);
  return found[0].code;
}

/** The code of README.md's `lang` blocks under `## heading`; throws when there is none. */
export function readmeBlocks(heading, lang = 'js') {
  const blocks = docBlocks('README.md', { lang, section: heading }).map((b) => b.code);
  if (blocks.length === 0) throw new Error(`README section "${heading}" has no ${lang} block`);
  return blocks;
}
