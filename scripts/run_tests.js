#!/usr/bin/env node
// Runs every compiled test file under <root>/test with node's built-in runner.
// Usage: node scripts/run_tests.js [--root dist] [filter-substring ...]
// Plain JS (not compiled) so that `npm test` can call it right after tsc.
'use strict';
const { readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');

const args = process.argv.slice(2);
let root = 'dist';
const filters = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--root') root = args[++i];
  else filters.push(args[i]);
}

function walk(dir, out) {
  let names;
  try { names = readdirSync(dir); } catch { return out; }
  for (const name of names.sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const files = walk(join(root, 'test'), []).filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)));
if (files.length === 0) {
  console.error(`no test files under ${root}/test matching ${filters.join(' ') || '*'}`);
  process.exit(1);
}
// Two cores: run two files at a time; black-box files start their own servers.
const res = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...files], { stdio: 'inherit' });
process.exit(res.status === null ? 1 : res.status);
