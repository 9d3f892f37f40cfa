// Extracts the fenced code blocks of README.md by the "## " heading they sit
// under, so tests run the README's examples exactly as printed.
import { readFileSync } from 'node:fs';

export function readmeBlocks(heading, lang = 'js') {
  const text = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const start = text.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README has no section "## ${heading}"`);
  const end = text.indexOf('\n## ', start + 4);
  const section = text.slice(start, end < 0 ? undefined : end);
  const blocks = [];
  const re = new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g');
  for (let m; (m = re.exec(section));) blocks.push(m[1]);
  if (blocks.length === 0) throw new Error(`README section "${heading}" has no ${lang} block`);
  return blocks;
}
