/**
 * The client ships on its own (package export ./client): walking the compiled
 * require graph from src/client/index.js must reach only the client's own files,
 * the shared leaf modules (errors, types, frame, cli_args), and Node built-ins — never server code or a
 * runtime dependency of the server.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';

const SRC = resolve(__dirname, '..', '..', '..', 'src');
const SHARED = new Set(['errors.js', 'types.js', 'cli_args.js', join('protocol', 'frame.js')]);

function requiresOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]);
}

function walk(entry: string): Set<string> {
  const seen = new Set<string>();
  const todo = [entry];
  while (todo.length > 0) {
    const file = todo.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of requiresOf(file)) {
      if (spec.startsWith('node:') || builtinModules.includes(spec)) continue;
      assert.ok(spec.startsWith('.'), `${relative(SRC, file)} requires the package ${spec}`);
      const target = resolve(dirname(file), spec);
      const path = existsSync(`${target}.js`) ? `${target}.js` : join(target, 'index.js');
      todo.push(path);
    }
  }
  return seen;
}

test('the client library reaches no server code and no npm package', () => {
  const files = walk(join(SRC, 'client', 'index.js'));
  files.add(join(SRC, 'client', 'cli_commands.js'));
  for (const f of walk(join(SRC, 'client', 'cli_commands.js'))) files.add(f);
  for (const file of files) {
    const rel = relative(SRC, file);
    assert.ok(rel.split(sep)[0] === 'client' || SHARED.has(rel), `client reaches ${rel}`);
  }
  assert.ok(files.size > 10);
});
