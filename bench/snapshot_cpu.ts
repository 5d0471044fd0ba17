/**
 * Snapshot encode and restore of a shard's state, in process, in CPU time: what a
 * fuzzy periodic snapshot costs the shard thread slice by slice, and what a
 * restore costs at boot, without process start, disk or lz4 (bench/recovery.ts
 * measures those end to end, in wall time). On a shared machine wall time
 * includes time the process was not scheduled; process CPU time does not (it
 * does include V8's GC helper threads, so a slice's CPU can exceed its wall share).
 *
 * Table as bench/recovery.ts: `U` keyed by user with count over 1h, a lifetime
 * sum, max over 1h; `--events` pushes spread over `--entities` users through
 * ShardState.apply. The snapshot runs in SNAPSHOT_SLICE_MS steps with pushes in
 * between, like a live shard, into memory (a periodic snapshot streams to its file
 * instead: bench/snapshot_pause.ts measures its pauses); then the body is restored
 * into a fresh state.
 *
 *   node dist/bench/snapshot_cpu.js [--entities 1000000] [--events 3000000] [--build <dist dir of another checkout>]
 *
 * `--build` loads ShardState and the snapshot code from another build (the same
 * API as this one), for a before/after on the same machine.
 */
import { join } from 'node:path';
import { RECOVERY_NODES } from './recovery_registry';
import { flagPairs } from './flags';
import { buildPushRow, requireBuild } from './build_require';

const args = flagPairs();
const ENTITIES = Number(args.get('entities') ?? 1_000_000);
const EVENTS = Number(args.get('events') ?? 3 * ENTITIES);
const BUILD = args.get('build') ?? join(__dirname, '..');
/** The shard's slice budget (src/limits.ts SNAPSHOT_SLICE_MS). */
const SLICE_MS = 4;
/** Pushes applied between two slices. */
const PUSHES_BETWEEN_SLICES = 500;

const REGISTRY = { version: 1, nodes: RECOVERY_NODES };

/* eslint-disable @typescript-eslint/no-require-imports */
const { ShardState } = requireBuild<typeof import('../src/shard/state/state')>(BUILD, 'src/shard/state/state');
const { SnapshotJob, restoreSnapshot } = requireBuild<typeof import('../src/shard/persist/snapshot_job')>(BUILD, 'src/shard/persist/snapshot_job');
const { DedupeLog } = requireBuild<typeof import('../src/shard/state/dedupe_log')>(BUILD, 'src/shard/state/dedupe_log');
const pushRow = buildPushRow(BUILD);

function cpuMs(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

function main(): void {
  const t0 = Date.now() - 30 * 60_000;
  const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  state.install(REGISTRY);
  let lsn = 0;
  const push = (amount: number): void => {
    lsn++;
    pushRow(state, 'Txn', { user: `user${(lsn * 2654435761) % ENTITIES}`, amount }, t0 + Math.floor(lsn / 1000), lsn);
  };
  let c = process.cpuUsage();
  for (let i = 0; i < EVENTS; i++) push((i % 997) + 0.5);
  console.log(`${BUILD}: ${EVENTS.toLocaleString()} pushes over ${ENTITIES.toLocaleString()} entities: ${cpuMs(c).toFixed(0)} ms CPU`);
  const job = new SnapshotJob(state);
  const slices: number[] = [];
  c = process.cpuUsage();
  let encode = 0;
  for (;;) {
    const s = process.cpuUsage();
    const done = job.step(SLICE_MS);
    const ms = cpuMs(s);
    slices.push(ms);
    encode += ms;
    if (done) break;
    for (let i = 0; i < PUSHES_BETWEEN_SLICES; i++) push(1.5);
  }
  c = process.cpuUsage();
  const { body } = job.finish(new DedupeLog());
  const finish = cpuMs(c);
  slices.sort((a, b) => a - b);
  console.log(`  snapshot: ${encode.toFixed(0)} ms CPU in ${slices.length} slices (CPU per slice p50 ${pct(slices, 0.5).toFixed(1)}, p99 ${pct(slices, 0.99).toFixed(1)}, max ${slices[slices.length - 1].toFixed(1)} ms; longest wall slice ${job.maxSliceMs.toFixed(1)} ms); join ${finish.toFixed(0)} ms; ${(body.length / 1e6).toFixed(1)} MB raw`);
  const restored = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  c = process.cpuUsage();
  const w = performance.now();
  restoreSnapshot(restored, body, () => REGISTRY);
  console.log(`  restore: ${cpuMs(c).toFixed(0)} ms CPU (${(performance.now() - w).toFixed(0)} ms wall), ${restored.entityCount().toLocaleString()} entities`);
}

main();
