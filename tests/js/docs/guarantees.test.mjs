// docs/guarantees.md (issue 17): every row of its table names evidence that
// exists. A row without evidence, a file that is not there, or a test name the
// file does not contain fails this test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const doc = readFileSync(join(root, 'docs/guarantees.md'), 'utf8');

/** The rows of the table under "## The table": { n, guarantee, evidence: [{ file, name }], conditions }. */
export function parseRows(text) {
  const start = text.indexOf('\n## The table');
  assert.ok(start >= 0, 'docs/guarantees.md has a "## The table" section');
  const rest = text.slice(start + 1);
  const end = rest.indexOf('\n## ', 3);
  const section = end < 0 ? rest : rest.slice(0, end);
  const rows = [];
  for (const line of section.split('\n')) {
    const m = /^\|\s*(\d+)\s*\|(.*)\|\s*$/.exec(line);
    if (!m) continue;
    const cells = m[2].split(' | ').map((c) => c.trim());
    assert.equal(cells.length, 3, `row ${m[1]} has guarantee, evidence and conditions: ${line}`);
    const evidence = [...cells[1].matchAll(/`([^`]+?)::([^`]+)`/g)].map(([, file, name]) => ({ file, name }));
    rows.push({ n: Number(m[1]), guarantee: cells[0], evidence, conditions: cells[2] });
  }
  return rows;
}

/** Whether `file` (repository-relative) contains the test or property `name`. */
export function hasEvidence(file, name) {
  const path = join(root, file);
  if (!existsSync(path)) return { ok: false, why: `${file} does not exist` };
  const text = readFileSync(path, 'utf8');
  if (file.endsWith('.rs')) {
    const found = /^[a-z_][a-z0-9_]*$/.test(name)
      ? new RegExp(`\\bfn ${name}\\s*\\(`).test(text)
      : text.includes(JSON.stringify(name));
    return found ? { ok: true } : { ok: false, why: `${file} has no fn ${name} / property "${name}"` };
  }
  return text.includes(name) ? { ok: true } : { ok: false, why: `${file} has no test named ${JSON.stringify(name)}` };
}

test('docs/guarantees.md: every row names evidence, and every file and test name exists', () => {
  const rows = parseRows(doc);
  assert.equal(rows.length, 39);
  assert.deepEqual(rows.map((r) => r.n), rows.map((_, i) => i + 1));
  const missing = [];
  for (const r of rows) {
    if (r.evidence.length === 0) missing.push(`row ${r.n} has no evidence`);
    if (r.conditions === '') missing.push(`row ${r.n} has no conditions (write — when there are none)`);
    for (const e of r.evidence) {
      const h = hasEvidence(e.file, e.name);
      if (!h.ok) missing.push(`row ${r.n}: ${h.why}`);
    }
  }
  assert.deepEqual(missing, []);
});

test('the check has teeth: a renamed test, a missing file and a row without evidence are caught', () => {
  assert.deepEqual(hasEvidence('src/decision.rs', 'mark_never_decreases'), { ok: true });
  assert.equal(hasEvidence('src/decision.rs', 'mark_never_decrease').ok, false);
  assert.equal(hasEvidence('src/nope.rs', 'x').ok, false);
  assert.equal(hasEvidence('tests/js/gate/gate.test.mjs', 'a rejected first write creates no state').ok, true);
  assert.equal(hasEvidence('tests/js/gate/gate.test.mjs', 'a rejected first write creates no stat!').ok, false);
  assert.equal(hasEvidence('model/src/lib.rs', 'a refusal writes nothing').ok, true);
  assert.equal(hasEvidence('model/src/lib.rs', 'a refusal writes everything').ok, false);
  const rows = parseRows('x\n## The table\n\n| # | g | e | c |\n|---|---|---|---|\n| 1 | a | none | — |\n| 2 | b | `src/decision.rs::table` | — |\n## After\n| 3 | c | d | e |\n');
  assert.deepEqual(rows.map((r) => [r.n, r.evidence.length]), [[1, 0], [2, 1]]);
});
