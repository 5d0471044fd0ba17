/**
 * The shard's garbage collections while it applies a workload, in process, per
 * build: what sets the shard's stalls without the machine's noise (bench/DECISIONS.md
 * "GC, memory and growth").
 *
 *   node dist/bench/shard_gc.js [--workload fraud] [--pushes 300000] [--batch 16] [--rounds 2] [--build <dist>[,<dist>...]]
 *
 * Each (round, build) runs in a fresh child process (young generation sized as a
 * shard thread's, SHARD_YOUNG_GENERATION_MB), builds in turn round by round.
 * The child builds every PUSH record with the build's own front code first (Zipf
 * keys over 1M entities, as the load runs), collects, then applies them batch by
 * batch through ShardState/PushApplier (the shard's path, WAL and pipe aside; a
 * batch's bytes are a view of one buffer, as the shard thread decodes them) while
 * a PerformanceObserver counts the GCs of that phase. Prints per run the GCs by
 * kind (count, total and longest pause) and the CPU µs per push of the phase.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { SHARD_YOUNG_GENERATION_MB } from '../src/limits';
import { FRAME_LENGTH_CRC_BYTES } from '../src/wal/constants';
import { flagPairs } from './flags';
import { requireBuild } from './build_require';

const args = flagPairs();
const WORKLOAD = args.get('workload') ?? 'fraud';
const PUSHES = Number(args.get('pushes') ?? 300_000);
const BATCH = Number(args.get('batch') ?? 16);
const ROUNDS = Number(args.get('rounds') ?? 2);

interface Gcs { n: number; totalMs: number; maxMs: number }
interface ChildResult { usPerPush: number; wallMs: number; scavenge: Gcs; major: Gcs }

const GC_MAJOR = 2;
const GC_INCREMENTAL = 4;
const GC_MINOR = 1;

function child(dist: string): void {
  const req = <T>(p: string): T => require(join(dist, p)) as T;
  const { compileRegistry } = req<typeof import('../src/registry/compile')>('src/registry/compile');
  const { PushRoute } = req<typeof import('../src/front/routing')>('src/front/routing');
  const { PushFrameWriter, sealFrame, frameEnd } = req<typeof import('../src/wal/push_record')>('src/wal/push_record');
  const { ShardState } = requireBuild<typeof import('../src/shard/state/state')>(dist, 'src/shard/state/state');
  const { PushApplier } = requireBuild<typeof import('../src/shard/state/push_apply')>(dist, 'src/shard/state/push_apply');
  const { BodyGen, workloadNamed } = req<typeof import('./workloads')>('bench/workloads');
  const wl = workloadNamed(WORKLOAD);
  const state = { version: 1, nodes: wl.register.nodes } as import('../src/registry/model').RegistryState;
  const front = compileRegistry(state, { memoryGovEnforce: true, pushValidators: true, features: false });
  const gen = new BodyGen(wl, 'zipf', 1_000_000, 1, 7);
  const route = new PushRoute();
  const w = new PushFrameWriter();
  const t0 = Date.now() - PUSHES;
  // Every batch's frames, back to back in one buffer: [start, end) per batch.
  const chunks: Uint8Array[] = [];
  const bounds: number[] = [0];
  let total = 0;
  for (let i = 0; i < PUSHES; i++) {
    const body = JSON.parse(gen.push()) as { event: string; data: unknown };
    const plan = front.events.get(body.event)!;
    route.route(plan, plan.validator!.validate(body.data), 1);
    route.write(w, 0, plan, i + 1, t0 + i, 1, null);
    if ((i + 1) % BATCH === 0 || i === PUSHES - 1) {
      const b = w.take();
      chunks.push(b);
      total += b.byteLength;
      bounds.push(total);
    }
  }
  const all = Buffer.concat(chunks);
  chunks.length = 0;
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  const shard = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  shard.install(state);
  const applier = new PushApplier(shard);
  const scavenge: Gcs = { n: 0, totalMs: 0, maxMs: 0 };
  const major: Gcs = { n: 0, totalMs: 0, maxMs: 0 };
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      const g = kind === GC_MINOR ? scavenge : kind === GC_MAJOR || kind === GC_INCREMENTAL ? major : null;
      if (g === null) continue;
      g.n++;
      g.totalMs += e.duration;
      g.maxMs = Math.max(g.maxMs, e.duration);
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  for (let k = 0; k + 1 < bounds.length; k++) {
    const buf = all.subarray(bounds[k], bounds[k + 1]);
    for (let p = 0; p < buf.length;) p = sealFrame(buf, p);
    for (let p = 0; p < buf.length; p = frameEnd(buf, p)) applier.apply(buf, p + FRAME_LENGTH_CRC_BYTES, null);
  }
  const wallMs = performance.now() - w0;
  const cpu = process.cpuUsage(c0);
  // The observer reports after the GC: let the last ones arrive.
  setTimeout(() => {
    obs.disconnect();
    const out: ChildResult = { usPerPush: (cpu.user + cpu.system) / PUSHES, wallMs, scavenge, major };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  }, 50);
}

function fmt(g: Gcs): string {
  return `${g.n} (${g.totalMs.toFixed(1)} ms, longest ${g.maxMs.toFixed(1)} ms)`;
}

function main(): void {
  const builds = [join(__dirname, '..'), ...(args.get('build')?.split(',') ?? [])];
  console.log(`shard GCs in process: ${WORKLOAD}, ${PUSHES.toLocaleString()} pushes in batches of ${BATCH}, ${ROUNDS} rounds, builds in turn`);
  for (let r = 1; r <= ROUNDS; r++) {
    for (const dist of builds) {
      // A shard thread's young generation (SHARD_YOUNG_GENERATION_MB, worker resourceLimits) is three semi-spaces in V8.
      const semi = `--max-semi-space-size=${Math.max(1, Math.floor(SHARD_YOUNG_GENERATION_MB / 3))}`;
      const out = execFileSync(process.execPath, [semi, __filename, '--child', dist, '--workload', WORKLOAD, '--pushes', String(PUSHES), '--batch', String(BATCH)], { encoding: 'utf8', maxBuffer: 1 << 20 });
      const res = JSON.parse(out.trim().split('\n').pop()!) as ChildResult;
      console.log(`round ${r} ${dist}: mark-compacts ${fmt(res.major)}; scavenges ${fmt(res.scavenge)}; ${res.usPerPush.toFixed(2)} µs CPU/push`);
    }
  }
}

if (args.has('child')) child(args.get('child')!);
else main();
