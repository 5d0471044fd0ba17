/**
 * Modules export values, not re-exported bindings. A re-export (`export { X }` of
 * an import, `export { X } from './y'`) compiles to an accessor on the module's
 * exports object, which turns that object into a slow one for every name read
 * from it: each `mod_1.f(...)` of the code that imports the module becomes a
 * dictionary lookup. One such re-export in wal/constants.ts made WAL replay spend
 * ~13% more CPU (bench/replay_cpu.ts). Only the modules below may re-export: a
 * package's or folder's public face (index.ts) and entry points read once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { filesUnder } from '../../harness/files';

const SRC = join(__dirname, '..', '..', '..', 'src');
/** Read once per process or per call of a command, not per event. */
const ENTRY_POINTS = new Set(['server.js', 'config.js', 'cluster/node.js', 'client/cli_commands.js']);
const ACCESSOR = /Object\.defineProperty\(exports, "(\w+)", \{ enumerable: true, get:/g;

test('no module outside the index and entry files re-exports a binding (an accessor on its exports object)', () => {
  const found: string[] = [];
  let files = 0;
  for (const file of filesUnder(SRC, '.js')) {
    const rel = relative(SRC, file);
    files++;
    if (rel.endsWith('index.js') || ENTRY_POINTS.has(rel)) continue;
    for (const m of readFileSync(file, 'utf8').matchAll(ACCESSOR)) found.push(`${rel}: ${m[1]}`);
  }
  assert.ok(files > 100, `${files} compiled modules looked at`);
  assert.deepEqual(found, [], 'export the value (`export const X = ...`) or import it from where it is defined');
});
