#!/usr/bin/env node
// Runs every compiled test file under <root>/test with node's built-in runner, then
// (a full run, or the filter `bench-smoke` alone) the bench smoke: every bench of
// bench/ once on a small parameter (`npm run bench -- smoke`, bench/smoke.ts), so a
// bench that breaks fails CI.
// Usage: node scripts/run_tests.js [--root dist] [filter-substring ...] [bench-smoke]
// Plain JS (not compiled) so that `npm test` can call it right after tsc.
'use strict';
const { existsSync, readdirSync, statSync } = require('node:fs');
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
    // A compiled test whose source is gone (moved or deleted since the last build: tsc
    // never removes outputs) is stale, not a test: it would run code that no longer exists.
    else if (name.endsWith('.test.js') && existsSync(join('.', p.slice(root.length + 1)).replace(/\.js$/, '.ts'))) out.push(p);
  }
  return out;
}

const SMOKE = 'bench-smoke';
const smoke = filters.length === 0 || filters.includes(SMOKE);
const fileFilters = filters.filter((f) => f !== SMOKE);
const files = filters.length > 0 && fileFilters.length === 0 ? []
  : walk(join(root, 'test'), []).filter((f) => fileFilters.length === 0 || fileFilters.some((s) => f.includes(s)));
if (files.length === 0 && !smoke) {
  console.error(`no test files under ${root}/test matching ${filters.join(' ') || '*'}`);
  process.exit(1);
}
// The HTTP black-box files that run a second time against the node:net HTTP
// engine (SF_TEST_HTTP_ENGINE=net, test/harness/server.ts): routes, every error
// envelope, the data flow and robustness. Engine-specific behaviour has its own
// file (http_engine_net.test.ts); the rest of the suite runs on the default engine.
const NET_ENGINE_FILES = ['http_routes', 'errors_push', 'errors_get', 'errors_transport', 'data_flow', 'robustness', 'hardening_auth', 'http_framing']
  .map((n) => `${n}.test.js`);

// Two cores: run two files at a time; black-box files start their own servers.
const run = (list, env) => spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...list], { stdio: 'inherit', env: { ...process.env, ...env } });
let status = 0;
if (files.length > 0) {
  const res = run(files, {});
  status = res.status === null ? 1 : res.status;
}
const netFiles = files.filter((f) => NET_ENGINE_FILES.some((n) => f.endsWith(n)));
if (netFiles.length > 0) {
  console.log(`\n# again with --http-engine net: ${netFiles.map((f) => f.slice(f.lastIndexOf('/') + 1)).join(' ')}`);
  const net = run(netFiles, { SF_TEST_HTTP_ENGINE: 'net' });
  if (net.status !== 0) status = net.status === null ? 1 : net.status;
}
if (smoke) {
  console.log('\n# bench smoke (npm run bench -- smoke): every bench once on a small parameter');
  const r = spawnSync(process.execPath, [join(root, 'bench', 'run.js'), 'smoke'], { stdio: 'inherit' });
  if (r.status !== 0) status = r.status === null ? 1 : r.status;
}
process.exit(status);
