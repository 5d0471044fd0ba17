/**
 * The client's type tests, beyond `npm test`'s tsc (which already fails on a
 * `@ts-expect-error` line that compiles): the fixture test/types/typed_client.ts
 * is compiled with its directives removed, and each error must fall on a line
 * that was marked, each marked line must have one, and nothing else may fail.
 * So a marked line cannot be "failing" for an unrelated reason elsewhere.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const ROOT = join(__dirname, '..', '..', '..', '..');
const FIXTURE = join(ROOT, 'test', 'types', 'typed_client.ts');
const DIRECTIVE = '// @ts-expect-error';

test('typed client fixture: every marked line fails to compile on that line, the rest compiles', () => {
  const text = readFileSync(FIXTURE, 'utf8');
  const lines = text.split('\n');
  const marked = new Map<number, string>(); // 0-based line that must fail -> why
  lines.forEach((l, i) => { if (l.trim().startsWith(DIRECTIVE)) marked.set(i + 1, l.trim().slice(DIRECTIVE.length).replace(/^\s*--\s*/, '')); });
  assert.ok(marked.size >= 10, `the fixture marks ${marked.size} lines`);
  const stripped = lines.map((l) => (l.trim().startsWith(DIRECTIVE) ? '' : l)).join('\n');

  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, incremental: false, tsBuildInfoFile: undefined };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  host.readFile = (f) => (f === FIXTURE ? stripped : read(f));
  const program = ts.createProgram([FIXTURE], options, host);
  const diags = ts.getPreEmitDiagnostics(program).filter((d) => d.file?.fileName === FIXTURE);
  const byLine = new Map<number, string[]>();
  for (const d of diags) {
    const line = d.file!.getLineAndCharacterOfPosition(d.start!).line;
    byLine.set(line, [...(byLine.get(line) ?? []), ts.flattenDiagnosticMessageText(d.messageText, ' ')]);
  }
  const unexpected = [...byLine].filter(([line]) => !marked.has(line));
  assert.deepEqual(unexpected.map(([l, m]) => `${l + 1}: ${m.join(' | ')}`), [], 'errors only on marked lines');
  for (const [line, why] of marked) {
    assert.ok(byLine.has(line), `line ${line + 1} (${why}) compiles but must not`);
  }
  const external = ts.getPreEmitDiagnostics(program).filter((d) => d.file !== undefined && d.file.fileName !== FIXTURE);
  assert.deepEqual(external.map((d) => ts.flattenDiagnosticMessageText(d.messageText, ' ')), [], 'the client sources compile');
});
