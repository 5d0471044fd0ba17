/**
 * `npm run bench -- smoke` (and the last step of `npm test`): every bench of this
 * directory runs once on a small parameter, so that a bench that no longer starts,
 * throws, or reads a number its neighbours stopped printing fails CI instead of
 * rotting until someone needs it. It measures nothing: the figures are discarded.
 *
 * Each step is a child process (its own process group, killed whole on a timeout),
 * two at a time on a 2-core machine. A step fails on a non-zero exit; the scenario
 * runs of run.js pass --check (errors, nothing answered or pushes never visible fail
 * it), and bench/target_table.sh --smoke runs the target table's commands on tiny
 * sizes and then builds the Current page from their output (current_table.js
 * --check fails when a row cannot be read). The k6 scripts, which need k6, are only
 * parsed (static_checks.ts).
 *
 * What is left out, and why: `hardening.js --only compile,finding4,finding4big` (their
 * registries of thousands of expressions are the point of those measures: 6-7 s
 * each), and the 3-node takeover of cluster.js (cluster.test.ts covers it).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { staticChecks } from './static_checks';

/** dist/bench (where the compiled benches are) and the repository root (where target_table.sh and bench/k6 are). */
const DIST_BENCH = __dirname;
const ROOT = join(__dirname, '..', '..');
/** Steps in flight: many steps wait more than they compute (server starts, paced loads), and nothing here is measured. */
const JOBS = 3;
/** A step that takes longer than this is killed and fails (the whole smoke takes well under a minute). */
const STEP_TIMEOUT_MS = 120_000;
/** Lines of a failed step's output that are printed. */
const TAIL_LINES = 30;

/** Options every run.js scenario of the smoke gets: one second, tiny loads, and the check. */
const RUN_SMALL = ['--duration', '1', '--warmup', '0', '--preload', '200', '--entities', '10000', '--connections', '4', '--bg-rate', '200', '--probes', '2', '--check'];

interface Step {
  name: string;
  /** Commands run one after the other (argv, node scripts relative to dist/bench); the first failure ends the step. */
  cmds: Array<{ argv: string[]; env?: Record<string, string> }>;
}

const node = (script: string, ...args: string[]): string[] => [process.execPath, join(DIST_BENCH, script), ...args];
const run = (scenario: string, ...args: string[]): string[] => node('run.js', scenario, ...RUN_SMALL, ...args);

function steps(tmp: string): Step[] {
  const tl = join(tmp, 'timeline');
  const heapA = join(tmp, 'a.heapsnapshot');
  const heapB = join(tmp, 'b.heapsnapshot');
  return [
    // The longest step first, so that the other lane runs everything else beside it.
    { name: 'target_table.sh --smoke (run.js http-push, tcp-push, push-latency, ceiling; memory, recovery, replay_cpu, snapshot_pause, churn; current_table)', cmds: [{ argv: ['bash', join(ROOT, 'bench', 'target_table.sh'), '--smoke', join(tmp, 'table')] }] },
    { name: 'run.js baselines', cmds: [{ argv: run('baselines') }] },
    { name: 'run.js http-push --gen autocannon', cmds: [{ argv: run('http-push', '--gen', 'autocannon') }] },
    { name: 'run.js get', cmds: [{ argv: run('get') }] },
    { name: 'run.js batch-get', cmds: [{ argv: run('batch-get') }] },
    { name: 'run.js mixed', cmds: [{ argv: run('mixed') }] },
    { name: 'run.js freshness', cmds: [{ argv: run('freshness') }] },
    { name: 'run.js http-engines', cmds: [{ argv: run('http-engines', '--workload', 'small') }] },
    { name: 'run.js soak', cmds: [{ argv: node('run.js', 'soak', '--connections', '20', '--rate', '400', '--duration', '1', '--warmup', '0', '--check') }] },
    {
      name: 'timeline.js (over a traced push-latency run)',
      cmds: [
        { argv: run('push-latency', '--workload', 'medium'), env: { STREAMFEAT_DEBUG_TIMELINE: tl, BENCH_LOAD_TRACE: tl } },
        { argv: node('timeline.js', tl) },
      ],
    },
    { name: 'cold_freeze.js', cmds: [{ argv: [process.execPath, '--expose-gc', join(DIST_BENCH, 'cold_freeze.js'), '--entities', '2000', '--rounds', '1'] }] },
    { name: 'growth.js', cmds: [{ argv: node('growth.js', '20000') }] },
    { name: 'shard_gc.js', cmds: [{ argv: node('shard_gc.js', '--pushes', '5000', '--rounds', '1') }] },
    { name: 'push_path.js', cmds: [{ argv: node('push_path.js', '--pushes', '5000', '--rounds', '1') }] },
    { name: 'front_cost.js (bare and this build)', cmds: [{ argv: node('front_cost.js', '--duration', '1', '--warmup', '0', '--rounds', '1', '--rate', '1000', '--cli', `bare,${join(DIST_BENCH, '..', 'src', 'cli.js')}`) }] },
    { name: 'snapshot_cpu.js', cmds: [{ argv: node('snapshot_cpu.js', '--entities', '5000') }] },
    { name: 'forget.js (forget next to push)', cmds: [{ argv: node('forget.js', '--entities', '2000', '--requests', '500', '--rounds', '1') }] },
    { name: 'window_ops.js', cmds: [{ argv: [process.execPath, '--expose-gc', join(DIST_BENCH, 'window_ops.js'), '2000'] }] },
    { name: 'hardening.js --only finding1,finding2,finding3,finding8,transfer', cmds: [{ argv: node('hardening.js', '--only', 'finding1,finding2,finding3,finding8,transfer') }] },
    { name: 'hardening_net.js trickle deep logblock', cmds: [{ argv: node('hardening_net.js', 'trickle', 'deep', 'logblock', '--resets', '200') }] },
    { name: 'cluster.js --nodes 1', cmds: [{ argv: node('cluster.js', '--nodes', '1', '--duration', '0.5', '--connections', '4', '--partitions', '4') }] },
    { name: 'fuzz.js', cmds: [{ argv: node('fuzz.js', '--seconds', '1') }] },
    {
      name: 'heap_diff.js (two heap snapshots of a small process)',
      cmds: [
        { argv: [process.execPath, '-e', `const v8 = require('node:v8'); v8.writeHeapSnapshot(${JSON.stringify(heapA)}); globalThis.kept = Array.from({ length: 20000 }, (_, i) => ({ i })); v8.writeHeapSnapshot(${JSON.stringify(heapB)});`] },
        { argv: node('heap_diff.js', heapA, heapB) },
      ],
    },
  ];
}

/** Installs `pkg` with apt-get when `bin` is missing, as the tests do (a step never skips for a missing tool). */
function ensureTool(bin: string, pkg: string, log: (line: string) => void): void {
  if (spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0) return;
  log(`-- installing ${pkg} (apt-get)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (spawnSync('apt-get', ['install', '-y', '-qq', pkg], { stdio: 'ignore', env }).status !== 0) {
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env });
    spawnSync('apt-get', ['install', '-y', '-qq', pkg], { stdio: 'ignore', env });
  }
}

interface Outcome { name: string; ok: boolean; ms: number; output: string }

/** Runs one command in its own process group; resolves with its exit status (null on timeout) and output. */
function runCmd(argv: string[], env: Record<string, string> | undefined, deadline: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const chunks: string[] = [];
    child.stdout.on('data', (d: Buffer) => chunks.push(d.toString()));
    child.stderr.on('data', (d: Buffer) => chunks.push(d.toString()));
    const killGroup = (): void => {
      try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* already gone */ }
    };
    const timer = setTimeout(() => { chunks.push(`\n(killed after ${STEP_TIMEOUT_MS / 1000} s)\n`); killGroup(); }, Math.max(0, deadline - Date.now()));
    running.add(killGroup);
    child.on('close', (code) => {
      clearTimeout(timer);
      running.delete(killGroup);
      // A bench that exits leaves no server behind: its process group goes with it.
      killGroup();
      resolve({ code, output: chunks.join('') });
    });
  });
}

/** The process groups of the steps in flight: killed if the smoke itself is stopped. */
const running = new Set<() => void>();

async function runStep(s: Step): Promise<Outcome> {
  const t0 = Date.now();
  const deadline = t0 + STEP_TIMEOUT_MS;
  let output = '';
  for (const c of s.cmds) {
    const r = await runCmd(c.argv, c.env, deadline);
    output += `$ ${c.argv.map((a) => a.replace(ROOT + '/', '')).join(' ')}\n${r.output}`;
    if (r.code !== 0) return { name: s.name, ok: false, ms: Date.now() - t0, output };
  }
  return { name: s.name, ok: true, ms: Date.now() - t0, output };
}

/** Runs the smoke; returns the exit code (1 if any step failed). */
export async function runSmoke(log: (line: string) => void): Promise<number> {
  const t0 = Date.now();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => { for (const k of running) k(); process.exit(130); });
  ensureTool('wrk', 'wrk', log);
  ensureTool('nats-server', 'nats-server', log);
  const failures: Outcome[] = [];
  const problems = staticChecks();
  log(problems.length === 0 ? 'ok     0.0 s  static checks: k6 scripts parse, k6 fraud registration matches' : problems.map((p) => `FAIL   static: ${p}`).join('\n'));
  if (problems.length > 0) failures.push({ name: 'static checks', ok: false, ms: 0, output: problems.join('\n') });
  const tmp = mkdtempSync(join(tmpdir(), 'streamfeat-smoke-'));
  try {
    const queue = steps(tmp);
    const total = queue.length + 1;
    const lane = async (): Promise<void> => {
      for (let s = queue.shift(); s !== undefined; s = queue.shift()) {
        const o = await runStep(s);
        log(`${o.ok ? 'ok  ' : 'FAIL'} ${(o.ms / 1000).toFixed(1).padStart(5)} s  ${o.name}`);
        if (!o.ok) failures.push(o);
      }
    };
    await Promise.all(Array.from({ length: JOBS }, lane));
    for (const f of failures) {
      log(`\n== ${f.name}: failed; last lines of its output:`);
      log(f.output.trimEnd().split('\n').slice(-TAIL_LINES).join('\n'));
    }
    log(`\nsmoke: ${total - failures.length} of ${total} steps passed (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    return failures.length > 0 ? 1 : 0;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
