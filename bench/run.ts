/**
 * Entry of the benchmark suite: `npm run bench -- <scenario> [options]`
 * (compiled to dist/bench/run.js). `list` shows the scenarios; `all` runs the
 * whole plan and prints a summary with every target's PASS/MISS; `smoke` runs
 * every bench once on a small parameter and exits non-zero if any broke
 * (bench/smoke.ts; `npm test` ends with it). See bench/README.md.
 */
import { ALL_DURATION_S, ALL_WARMUP_S, DEFAULTS, parseArgs, USAGE, type Opts, type Parsed } from './args';
import { killChildrenOnExit } from './procs';
import { appendMarkdown, formatBlock, formatRounds, formatSummary, type ScenarioResult } from './report';
import { appendFileSync } from 'node:fs';
import { PLAN, scenarioNamed, SCENARIOS, type Ctx } from './scenarios';
import { runSmoke } from './smoke';
import { wrkAvailable } from './wrk';

function log(line: string): void {
  process.stdout.write(line + '\n');
}

function pick(p: Parsed): Partial<Opts> {
  const out: Partial<Opts> = {};
  for (const k of p.given) (out as Record<string, unknown>)[k] = p.opts[k];
  return out;
}

async function runScenario(name: string, o: Opts, ctx: Ctx, date: string): Promise<ScenarioResult[]> {
  const s = scenarioNamed(name);
  if (s === undefined) throw new Error(`unknown scenario '${name}' (npm run bench -- list)`);
  const rounds: ScenarioResult[][] = [];
  for (let i = 1; i <= o.rounds; i++) {
    log(`-- ${name} (workload ${o.workload}, ${o.durationS}s per run${o.rounds > 1 ? `, round ${i} of ${o.rounds}` : ''})`);
    // A later round measures its baseline again: a cached one would not alternate.
    const results = await s.run(o, o.rounds > 1 ? { ...ctx, baselines: new Map() } : ctx);
    for (const r of results) {
      log(formatBlock(r));
      log('');
      if (o.out !== undefined) appendMarkdown(o.out, r, date);
      if (o.json !== undefined) appendFileSync(o.json, `${JSON.stringify({ date, round: i, ...r })}\n`);
    }
    rounds.push(results);
  }
  if (o.rounds > 1) for (const line of formatRounds(rounds)) log(line);
  return rounds.flat();
}

/** Problems that make a `--check` run fail (the smoke's scenario runs): errors or nothing measured. */
function smokeProblems(r: ScenarioResult): string[] {
  const out: string[] = [];
  if (r.subject.ok === 0) out.push(`${r.subjectName}: no successful request`);
  if (r.subject.errors > 0 && r.errorsExpected !== true) out.push(`${r.subjectName}: ${r.subject.errors} errors (${r.subject.firstError})`);
  if (r.baseline !== null && r.baseline.errors > 0) out.push(`${r.baselineName}: ${r.baseline.errors} errors (${r.baseline.firstError})`);
  const never = r.subject.extra.never_fresh ?? 0;
  if (never > 0) out.push(`${never} pushes never became visible`);
  return out;
}

async function runPlan(p: Parsed, date: string): Promise<number> {
  const base: Opts = { ...DEFAULTS, durationS: ALL_DURATION_S, warmupS: ALL_WARMUP_S, ...pick(p) };
  const ctx: Ctx = { baselines: new Map(), log };
  const all: ScenarioResult[] = [];
  const failures: string[] = [];
  const t0 = Date.now();
  if (!wrkAvailable()) log('note: wrk is not installed (apt-get install wrk): HTTP loads use autocannon');
  for (const [name, over] of PLAN) {
    const o: Opts = { ...base, ...over };
    const label = `${name} ${Object.entries(over).map(([k, v]) => `${k}=${v}`).join(' ')}`.trim();
    try {
      const rs = await runScenario(name, o, ctx, date);
      all.push(...rs);
      if (o.check) {
        for (const r of rs) {
          for (const prob of smokeProblems(r)) {
            failures.push(`${label}: ${prob}`);
          }
        }
      }
    } catch (err) {
      failures.push(`${label}: ${(err as Error).message}`);
      log(`!! ${label} failed: ${(err as Error).stack ?? err}`);
      log('');
    }
  }
  log(formatSummary(all));
  log(`\n(${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  if (failures.length > 0) {
    log('\n== all: failures');
    for (const f of failures) log(`FAIL  ${f}`);
  }
  return failures.length > 0 ? 1 : 0;
}

async function main(): Promise<number> {
  let p: Parsed;
  try {
    p = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
  switch (p.scenario) {
    case 'help':
      log(USAGE);
      return 0;
    case 'list':
      for (const s of SCENARIOS) log(`${s.name.padEnd(13)} ${s.summary}`);
      log(`${'all'.padEnd(13)} every scenario above (${PLAN.length} runs, ${ALL_DURATION_S}s each), then a summary with every target's PASS/MISS`);
      log(`${'smoke'.padEnd(13)} every bench once on a small parameter (part of npm test); exits non-zero if any broke`);
      log(`\nwrk: ${wrkAvailable() ? 'installed' : 'not installed (HTTP loads fall back to autocannon)'}`);
      return 0;
    case 'all':
      return runPlan(p, date);
    case 'smoke':
      return runSmoke(log);
    default:
      if (scenarioNamed(p.scenario) === undefined) {
        process.stderr.write(`unknown scenario '${p.scenario}' (npm run bench -- list)\n`);
        return 2;
      }
      try {
        const results = await runScenario(p.scenario, p.opts, { baselines: new Map(), log }, date);
        const problems = p.opts.check ? results.flatMap(smokeProblems) : [];
        for (const prob of problems) log(`FAIL  ${p.scenario}: ${prob}`);
        return problems.length > 0 ? 1 : 0;
      } catch (err) {
        process.stderr.write(`${(err as Error).stack ?? err}\n`);
        return 1;
      }
  }
}

// `npm run bench -- list | head`: the reader going away ends the run quietly (the servers die with it).
killChildrenOnExit();

main().then((code) => process.exit(code), (err: unknown) => {
  process.stderr.write(`${(err as Error)?.stack ?? err}\n`);
  process.exit(1);
});
