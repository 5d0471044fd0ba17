/**
 * How long a periodic snapshot stalls its shard thread: the longest event-loop
 * pause while a fuzzy snapshot of `--entities` entities is encoded in slices,
 * compressed and written to disk, next to the same measure over an equal window
 * without a snapshot (the floor pushes alone cause: their own GCs).
 *
 * In process, with the shard's own pieces (ShardState, ShardStore.beginSnapshot /
 * writeJob) and the shard's driving loop (shard.ts: one step of SNAPSHOT_SLICE_MS
 * per event-loop turn, then the write): a 1 ms timer applies `--rate` pushes per
 * second in 1 ms batches, like a shard fed batches; every late tick is a pause.
 * Measures, per window: the largest gap between two ticks beyond the 1 ms period
 * (what a batch waited), the event-loop delay histogram (perf_hooks
 * monitorEventLoopDelay, 1 ms resolution) max and p99, and every GC pause V8
 * reported (PerformanceObserver 'gc') with its kind. On a shared machine a gap also
 * holds time the thread was not scheduled, so each gap is also measured as the
 * main thread's own CPU time (/proc/self/task/<pid>/schedstat: its time on a CPU,
 * in ns; GC helper threads and lz4's threadpool are not in it): the "CPU" figures.
 *
 *   node --expose-gc dist/bench/snapshot_pause.js [--entities 1000000] [--events 3000000] [--rate 20000] [--runs 3] [--build <dist dir of another checkout>]
 *
 * `--build` loads the state and store code from another build (same API shape),
 * for a before/after on the same machine: run both, interleaved.
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver, performance } from 'node:perf_hooks';
import { RECOVERY_NODES } from './recovery_registry';
import { SNAPSHOT_SLICE_MS } from '../src/limits';
import { flagPairs } from './flags';
import { buildPushRow, requireBuild } from './build_require';

const args = flagPairs();
const ENTITIES = Number(args.get('entities') ?? 1_000_000);
const EVENTS = Number(args.get('events') ?? 3 * ENTITIES);
const RATE = Number(args.get('rate') ?? 20_000);
const RUNS = Number(args.get('runs') ?? 3);
const BUILD = args.get('build') ?? join(__dirname, '..');
/** The shard's slice budget. */
const SLICE_MS = SNAPSHOT_SLICE_MS;

const REGISTRY = { version: 1, nodes: RECOVERY_NODES };
/* eslint-disable @typescript-eslint/no-require-imports */
const { ShardState } = requireBuild<typeof import('../src/shard/state/state')>(BUILD, 'src/shard/state/state');
const { ShardStore } = requireBuild<typeof import('../src/shard/persist/store')>(BUILD, 'src/shard/persist/store');
const { DedupeLog } = requireBuild<typeof import('../src/shard/state/dedupe_log')>(BUILD, 'src/shard/state/dedupe_log');
const pushRow = buildPushRow(BUILD);
type Store = import('../src/shard/persist/store').ShardStore;
type Job = NonNullable<ReturnType<Store['beginSnapshot']>>;

const GC_KINDS: Record<number, string> = { 1: 'scavenge', 2: 'minor-mc', 4: 'mark-compact', 8: 'incremental', 16: 'weakcb' };

/** The main thread's time on a CPU so far, in ms (Linux schedstat); 0 where unavailable. */
const schedFd = ((): number => { try { return openSync(`/proc/self/task/${process.pid}/schedstat`, 'r'); } catch { return -1; } })();
const schedBuf = Buffer.alloc(128);
function threadCpuMs(): number {
  if (schedFd < 0) return 0;
  const n = readSync(schedFd, schedBuf, 0, schedBuf.length, 0);
  return Number(schedBuf.toString('latin1', 0, n).split(' ')[0]) / 1e6;
}

interface Window {
  maxGapMs: number;
  /** The largest main-thread CPU time spent within one gap between ticks (beyond the tick's own work). */
  maxGapCpuMs: number;
  /** Gaps over 10 ms of main-thread CPU. */
  gapsOver10Cpu: number;
  eldMaxMs: number;
  eldP99Ms: number;
  gcs: Array<{ kind: string; ms: number; at: number }>;
  /** The gaps of over 5 ms of main-thread CPU, with the GCs that started inside each. */
  long: Array<{ cpuMs: number; wallMs: number; gcs: string }>;
  ms: number;
}

/** Pushes at RATE in 1 ms ticks while `during` runs; the pauses the ticks saw. */
async function measure(push: () => void, during: () => Promise<void>): Promise<Window> {
  const gcs: Array<{ kind: string; ms: number; at: number }> = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ kind: GC_KINDS[(e as unknown as { detail: { kind: number } }).detail?.kind] ?? '?', ms: e.duration, at: e.startTime });
  });
  const longGaps: Array<{ from: number; to: number; cpu: number }> = [];
  obs.observe({ entryTypes: ['gc'] });
  const eld = monitorEventLoopDelay({ resolution: 1 });
  eld.enable();
  let last = performance.now();
  let lastCpu = threadCpuMs();
  let maxGap = 0;
  let maxGapCpu = 0;
  let over10 = 0;
  let owed = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    const cpu = threadCpuMs();
    const gap = now - last - 1;
    if (gap > maxGap) maxGap = gap;
    const gapCpu = cpu - lastCpu;
    if (gapCpu > maxGapCpu) maxGapCpu = gapCpu;
    if (gapCpu > 10) over10++;
    if (gapCpu > 5) longGaps.push({ from: last, to: now, cpu: gapCpu });
    owed += (now - last) * RATE / 1000;
    for (; owed >= 1; owed--) push();
    last = performance.now();
    lastCpu = threadCpuMs();
  }, 1);
  const t0 = performance.now();
  await during();
  const ms = performance.now() - t0;
  clearInterval(timer);
  eld.disable();
  // GC entries are delivered asynchronously.
  await new Promise((r) => setTimeout(r, 20));
  obs.disconnect();
  const long = longGaps.sort((a, b) => b.cpu - a.cpu).slice(0, 5).map((g) => ({
    cpuMs: g.cpu, wallMs: g.to - g.from,
    gcs: gcs.filter((x) => x.at >= g.from && x.at <= g.to).map((x) => `${x.kind} ${x.ms.toFixed(1)}`).join('+') || 'no GC',
  }));
  return { long, maxGapMs: maxGap, maxGapCpuMs: maxGapCpu, gapsOver10Cpu: over10, eldMaxMs: eld.max / 1e6, eldP99Ms: eld.percentile(99) / 1e6, gcs, ms };
}

/** The shard's driver (shard.ts #stepSnapshotJob): one slice per turn, then the write. */
function runSnapshot(store: Store, state: InstanceType<typeof ShardState>, job: Job): Promise<void> {
  const dedupe = new DedupeLog();
  return new Promise((resolve, reject) => {
    const step = (): void => {
      if (!job.step(SLICE_MS)) {
        const waitable = job as unknown as { whenRoom?: (f: () => void) => void };
        if (typeof waitable.whenRoom === 'function') waitable.whenRoom(step);
        else setImmediate(step);
        return;
      }
      // Builds before streamed snapshots took the slice budget for joining the body.
      (store.writeJob as (...a: unknown[]) => Promise<void>).call(store, job, state, dedupe, SLICE_MS).then(resolve, reject);
    };
    setImmediate(step);
  });
}

function fmt(w: Window): string {
  const big = w.gcs.filter((g) => g.ms >= 2).sort((a, b) => b.ms - a.ms).slice(0, 5).map((g) => `${g.kind} ${g.ms.toFixed(1)}`).join(', ');
  const mc = w.gcs.filter((g) => g.kind === 'mark-compact').length;
  const long = w.long.map((g) => `${g.cpuMs.toFixed(1)}/${g.wallMs.toFixed(1)} (${g.gcs})`).join(', ');
  return `gaps over 5 ms CPU (CPU/wall, GCs in them): ${long || 'none'}; longest pause ${w.maxGapMs.toFixed(1)} ms wall, ${w.maxGapCpuMs.toFixed(1)} ms main-thread CPU (${w.gapsOver10Cpu} over 10 ms CPU) (event-loop delay max ${w.eldMaxMs.toFixed(1)}, p99 ${w.eldP99Ms.toFixed(1)} ms); ${w.gcs.length} GCs (${mc} mark-compact), largest: ${big || 'none >= 2 ms'}; window ${w.ms.toFixed(0)} ms`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sf-snappause-'));
  const lines: Array<Record<string, unknown>> = [];
  const log = {
    info: (o: Record<string, unknown>) => { lines.push(o); }, warn: () => {}, error: (o: unknown) => { console.error(o); }, debug: () => {},
  } as unknown as import('../src/log').Logger;
  try {
    const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
    const init = {
      shardId: 0, shardCount: 1, dataDir: dir, memoryOnly: false, memoryLimitBytes: 0, memoryGovEnforce: true, logLevel: 'silent', walSync: 'batch' as const,
      walSyncTimeoutMs: 1000, walSyncIntervalMs: 5, walSegmentBytesMax: 64 << 20, faultFile: null, partitions: 0, history: [REGISTRY], current: REGISTRY,
    };
    const { store } = ShardStore.open(init, state, new DedupeLog(), log);
    state.install(REGISTRY);
    const t0 = Date.now() - 30 * 60_000;
    let lsn = 0;
    const push = (): void => {
      lsn++;
      pushRow(state, 'Txn', { user: `user${(lsn * 2654435761) % ENTITIES}`, amount: (lsn % 997) + 0.5 }, t0 + Math.floor(lsn / 1000), lsn);
    };
    for (let i = 0; i < EVENTS; i++) push();
    console.log(`${BUILD}: ${ENTITIES.toLocaleString()} entities (${EVENTS.toLocaleString()} pushes), ${RATE.toLocaleString()} pushes/s during the windows, slice ${SLICE_MS} ms`);
    for (let r = 0; r < RUNS; r++) {
      (globalThis as { gc?: () => void }).gc?.();
      let snapMs = 0;
      const snap = await measure(push, async () => {
        const job = store.beginSnapshot(state)!;
        const s = performance.now();
        await runSnapshot(store, state, job);
        snapMs = performance.now() - s;
      });
      const line = lines[lines.length - 1];
      const shardSaw = line.loopDelayMaxMs === undefined ? '' : `, shard's own loop delay max ${line.loopDelayMaxMs} ms`;
      console.log(`  run ${r + 1} snapshot: ${fmt(snap)}; job's longest slice ${line.maxSliceMs} ms${shardSaw}, encode ${line.encodeMs} ms, ${(Number(line.raw_bytes) / 1e6).toFixed(1)} MB raw, ${(Number(line.bytes) / 1e6).toFixed(1)} MB file`);
      (globalThis as { gc?: () => void }).gc?.();
      const idle = await measure(push, () => new Promise((res) => setTimeout(res, snapMs)));
      console.log(`  run ${r + 1} no snapshot, same window: ${fmt(idle)}`);
    }
    store.close();
    if (schedFd >= 0) closeSync(schedFd);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
