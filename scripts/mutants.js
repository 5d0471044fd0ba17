#!/usr/bin/env node
// Mutation sweep: does the suite notice when one operator of a compiled file changes?
// Each mutant is one site (one occurrence of an operator) of `dist/<file>` with it swapped (< / <=, > / >=,
// === / !==, + 1 / + 0, - 1 / - 0, && / ||), run against a test set; a mutant the
// tests pass is a survivor: either an equivalent change or a gap in the tests.
// Works on a copy of dist (.mutants/<pid>/dist, removed at the end), so the build is
// never left mutated, even when the sweep is killed, and sweeps can run side by side.
// Needs `npx tsc` first.
//
//   node scripts/mutants.js <file under dist> [--sites N] [--skip K] [--seed S] [--tests dir,dir,...] [--later]
//       sweep N sites (seeded shuffle; default all; --skip K leaves out the first K, to continue
//       an earlier partial sweep with the same seed: of the same compiled file, since any change
//       to its operators reorders the sites) against the test files under the
//       given dirs (or files) of dist/test (default unit/ops,unit/shard); prints each survivor.
//       --later: only the second and later occurrences of an operator on a line (sweeps made
//       before the tool counted every occurrence mutated only the first one on each line)
//   node scripts/mutants.js <file under dist> --line L --from TEXT --to TEXT [--whole]
//       one mutant (the first TEXT on line L) against the same tests, or with --whole
//       against the whole suite (scripts/run_tests.js)
//
// Example: node scripts/mutants.js src/shard/intern.js --sites 40 --seed 7
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..');
const COPY = path.join(ROOT, '.mutants', String(process.pid));
/** A test run longer than this is a hang (a mutant that stops a loop): counted as killed. */
const TEST_TIMEOUT_MS = 30_000;
/** A progress line (stderr) after this many mutants. */
const PROGRESS_EVERY = 10;
const OPS = [[/ <= /, ' < '], [/ < /, ' <= '], [/ >= /, ' > '], [/ > /, ' >= '], [/ === /, ' !== '], [/ !== /, ' === '],
  [/ \+ 1\b/, ' + 0'], [/ - 1\b/, ' - 0'], [/ && /, ' || '], [/ \|\| /, ' && ']];

function flags(argv) {
  const out = { file: argv[0], sites: Infinity, skip: 0, seed: 1, tests: 'unit/ops,unit/shard', line: 0, from: '', to: '', whole: false, later: false };
  for (let i = 1; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    if (k === 'whole' || k === 'later') out[k] = true;
    else out[k] = k === 'sites' || k === 'skip' || k === 'seed' || k === 'line' ? Number(argv[++i]) : argv[++i];
  }
  if (!out.file) throw new Error('usage: node scripts/mutants.js <file under dist> [--sites N] [--skip K] [--seed S] [--tests dirs] [--later] | --line L --from X --to Y [--whole]');
  return out;
}

/** What `npm pack` takes besides dist: copied, not linked (it skips a linked directory, and the packaging test checks the list). */
const PACKED = ['docs', 'package.json', 'README.md', 'LICENSE'];

/**
 * A fresh copy of dist to mutate, beside links to the rest of the checkout (examples,
 * scripts: what the black-box tests and the server read) and copies of what the
 * package holds; node_modules is found in the checkout above it.
 */
function copyDist() {
  fs.rmSync(COPY, { recursive: true, force: true });
  fs.mkdirSync(COPY, { recursive: true });
  fs.cpSync(path.join(ROOT, 'dist'), path.join(COPY, 'dist'), { recursive: true });
  for (const name of fs.readdirSync(ROOT)) {
    if (['dist', 'node_modules', 'data', '.git', '.mutants'].includes(name)) continue;
    if (PACKED.includes(name)) fs.cpSync(path.join(ROOT, name), path.join(COPY, name), { recursive: true });
    else fs.symlinkSync(path.join(ROOT, name), path.join(COPY, name));
  }
}

function testFiles(dirs) {
  const out = [];
  for (const d of dirs.split(',')) {
    const dir = path.join('dist', 'test', d);
    if (d.endsWith('.js')) { out.push(dir); continue; }
    for (const f of fs.readdirSync(path.join(COPY, dir)).sort()) if (f.endsWith('.test.js')) out.push(path.join(dir, f));
  }
  return out;
}

/**
 * Kills every process still running from the copy. A test file the runner stops on a
 * timeout (a mutant that loops forever in a server) leaves the servers it started
 * behind, each spinning on a core.
 */
function killStrays() {
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    let cmd;
    try { cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'); } catch { continue; }
    if (cmd.includes(COPY + path.sep)) try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
  }
}

/** Runs the tests in the copy: true when any failed, was cancelled (a hang) or the run died. */
function killed(o, files) {
  try { return testsFail(o, files); } finally { killStrays(); }
}

function testsFail(o, files) {
  const r = o.whole
    ? spawnSync(process.execPath, ['scripts/run_tests.js'], { cwd: COPY, encoding: 'utf8', maxBuffer: 1 << 28 })
    : spawnSync(process.execPath, ['--test', `--test-timeout=${TEST_TIMEOUT_MS}`, ...files], { cwd: COPY, encoding: 'utf8', maxBuffer: 1 << 28, timeout: 4 * TEST_TIMEOUT_MS });
  const sum = (re) => [...(r.stdout || '').matchAll(re)].reduce((a, m) => a + Number(m[1]), 0);
  return r.status !== 0 || sum(/^# fail (\d+)/gm) + sum(/^# cancelled (\d+)/gm) > 0;
}

function main() {
  const o = flags(process.argv.slice(2));
  copyDist();
  try { sweep(o); } finally { fs.rmSync(COPY, { recursive: true, force: true }); }
}

function sweep(o) {
  const target = path.join(COPY, 'dist', o.file);
  const orig = fs.readFileSync(target, 'utf8');
  const lines = orig.split('\n');
  const files = testFiles(o.tests);
  // The tests must pass before any mutant, or every mutant would count as killed.
  if (killed(o, files)) throw new Error(`the tests fail without a mutant: ${o.whole ? 'the whole suite' : o.tests}`);
  /** Line `i` with `len` characters at `at` replaced by `to`. */
  const mutated = (i, at, len, to) => lines[i].slice(0, at) + to + lines[i].slice(at + len);
  const run = (i, line) => {
    const m = lines.slice();
    m[i] = line;
    fs.writeFileSync(target, m.join('\n'));
    try { return killed(o, files); } finally { fs.writeFileSync(target, orig); }
  };
  if (o.line > 0) {
    const i = o.line - 1;
    const at = lines[i].indexOf(o.from);
    if (at < 0) throw new Error(`line ${o.line} has no ${JSON.stringify(o.from)}: ${lines[i].trim()}`);
    const k = run(i, mutated(i, at, o.from.length, o.to));
    console.log(`${o.file}:${o.line} ${o.from} -> ${o.to}: ${k ? 'killed' : 'SURVIVED'} (${o.whole ? 'whole suite' : o.tests})`);
    return;
  }
  // A site is one occurrence of an operator: a line with two `<` has two sites (with
  // --later, only the second one).
  const sites = [];
  lines.forEach((l, i) => {
    const t = l.trim();
    if (t.startsWith('//') || t.startsWith('*') || t.startsWith('/*') || /assert/.test(t) || /require\(/.test(t)) return;
    OPS.forEach(([re, to]) => {
      let k = 0;
      for (const m of l.matchAll(new RegExp(re.source, 'g'))) if (k++ > 0 || !o.later) sites.push([i, m.index, m[0].length, to]);
    });
  });
  // Seeded shuffle (a 31-bit LCG), so a partial sweep can be repeated or continued with another seed.
  let s = o.seed;
  const rnd = () => { s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648; };
  for (let i = sites.length - 1; i > 0; i--) { const j = Math.floor(rnd() * (i + 1)); [sites[i], sites[j]] = [sites[j], sites[i]]; }
  const chosen = sites.slice(o.skip, o.skip + o.sites);
  const n = chosen.length;
  console.log(`${o.file}: ${sites.length} ${o.later ? 'later-occurrence ' : ''}sites, testing ${n}${o.skip > 0 ? ` (after the first ${o.skip} of seed ${o.seed}'s order)` : ''} against ${o.whole ? 'the whole suite' : o.tests}`);
  let survived = 0;
  let done = 0;
  for (const [i, at, len, to] of chosen) {
    const line = mutated(i, at, len, to);
    if (!run(i, line)) {
      survived++;
      console.log(`SURVIVED ${i + 1}: ${lines[i].trim()}  =>  ${line.trim()}`);
    }
    // Progress on stderr every PROGRESS_EVERY mutants: a sweep of a large file runs for an hour.
    if (++done % PROGRESS_EVERY === 0) process.stderr.write(`${done}/${n} tested, ${survived} survived so far\n`);
  }
  console.log(`killed ${n - survived}, survived ${survived}`);
}

main();
