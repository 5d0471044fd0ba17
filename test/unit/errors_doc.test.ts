/**
 * docs/errors.md against the one error table (src/errors.ts), both ways: every
 * code of the table has a row with its HTTP status, every row names a code of
 * the table with that status, and the black-box test a row cites exists under
 * that name (as test/blackbox/metrics.test.ts ties docs/metrics.md to what is
 * served). A code added to the table without its row, or a row left behind by a
 * removed code or a renamed test, fails here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERRORS, type ErrorCode } from '../../src/errors';

const ROOT = join(__dirname, '..', '..', '..');
const DOC = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');

interface Row { code: string; status: number; line: number; cells: string[] }

/** The table rows of the doc whose first cell is a code: `| \`code\` | 404 ... | produced by | test |`. */
function rows(): Row[] {
  const out: Row[] = [];
  DOC.split('\n').forEach((text, i) => {
    const m = /^\| `([a-z0-9_]+)` \| (\d{3})\b/.exec(text);
    if (m === null) return;
    out.push({ code: m[1], status: Number(m[2]), line: i + 1, cells: text.split(' | ') });
  });
  return out;
}

test('every code of src/errors.ts has a row in docs/errors.md with its HTTP status', () => {
  const documented = new Map<string, Row[]>();
  for (const r of rows()) documented.set(r.code, [...(documented.get(r.code) ?? []), r]);
  for (const code of Object.keys(ERRORS) as ErrorCode[]) {
    const found = documented.get(code);
    assert.ok(found !== undefined, `${code} (${ERRORS[code].status}) has no row in docs/errors.md`);
    for (const r of found) assert.equal(r.status, ERRORS[code].status, `docs/errors.md:${r.line}: ${code} is ${ERRORS[code].status} in src/errors.ts`);
  }
});

test('every row of docs/errors.md names a code of src/errors.ts', () => {
  const all = rows();
  assert.ok(all.length >= Object.keys(ERRORS).length, `only ${all.length} rows parsed`);
  for (const r of all) assert.ok(r.code in ERRORS, `docs/errors.md:${r.line}: ${r.code} is not in src/errors.ts`);
});

test('the tests docs/errors.md cites exist under the names it quotes', () => {
  const files = new Map<string, string>();
  const read = (name: string): string | undefined => {
    if (!files.has(name)) {
      const hit = [join(ROOT, 'test', 'blackbox', name), join(ROOT, 'test', name), join(ROOT, name)].find((p) => existsSync(p));
      files.set(name, hit === undefined ? '' : readFileSync(hit, 'utf8'));
    }
    return files.get(name) || undefined;
  };
  let checked = 0;
  const problems: string[] = [];
  for (const r of rows()) {
    const cell = r.cells[r.cells.length - 1].replace(/\s*\|\s*$/, '');
    // `file.test.ts` "name", "name"; `other.test.ts` "name" ...: each quoted name belongs to the file named before it.
    let file: string | undefined;
    for (const m of cell.matchAll(/`([\w/.]+\.test\.ts)`|"([^"]+)"/g)) {
      if (m[1] !== undefined) {
        file = m[1];
        if (read(file) === undefined) problems.push(`docs/errors.md:${r.line}: no test file ${file}`);
        continue;
      }
      if (file === undefined || read(file) === undefined) continue;
      // A name shortened with "..." or "…" is checked piece by piece.
      const text = read(file)!;
      for (const piece of m[2].split(/\.\.\.|…/).map((x) => x.trim()).filter((x) => x.length >= 8)) {
        if (!text.includes(piece)) problems.push(`docs/errors.md:${r.line}: ${file} has no test named "${m[2]}" ("${piece}")`);
        checked++;
      }
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(checked > 50, `only ${checked} test names checked`);
});
