/**
 * Shard worker entry (a one-thread piscina pool per shard): recovers at module
 * load (so a replaced thread recovers by itself), starts the timers that run
 * between batches, and hands every batch that arrives on the pipe (the serve
 * task's port) to the Shard (shard.ts), where batch execution lives.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { faultyFs, realFs, scanRegistryLogLenient } from '../wal';
import type { RegistryState } from '../registry/model';
import { createLogger } from '../log';
import type { MessagePort } from 'node:worker_threads';
import { ITEM_PUSH, type ShardBatchAnswer, type ShardBatchWire, type ShardBatchFailed, type ShardHello, type ShardInit, type ShardItem, type ShardTask } from '../protocol/messages';
import { ShardBatchDecoder, shardInit } from '../protocol/shard_calls';
import { COLD_SWEEP_INTERVAL_MS, WAL_FAULT_FILE_POLL_MS } from '../limits';
import { ColdFiles } from './cold/cold_files';
import { DedupeLog } from './state/dedupe_log';
import { Shard } from './shard';
import { ShardState } from './state/state';
import { ShardStore } from './persist/store';
import { ThreadSampler } from '../admin/thread_stats';
import { flushTimeline, RunQueueProbe, startTimeline, TIMELINE_ON, TL, tlNow, tlSpan } from '../timeline';
import { ClockFault, ServerClock } from '../clock';

const init = shardInit();
ClockFault.install(init.clockFaultFile ?? null); // test hook only (SERVICE_FAULT_CLOCK_FILE)
startTimeline(`shard-${init.shardId}`);
// A shard thread replaced after a crash starts with the boot-time workerData: the
// registry may have moved on since. In disk mode the registry log (fsynced before
// any version reaches a shard) has every version; read it without modifying it.
refreshRegistry(init);
const log = createLogger(init.logLevel, { thread: `shard-${init.shardId}` });
// Disk mode: cold entities leave memory for <data>/shard-<i>/cold/ (a cache of the
// WAL and snapshots, emptied here before recovery refills it from the snapshot).
/** Test hook only (SERVICE_FAULT_WAL_FILE): ENOSPC / EIO in the fault file fail cold-store writes too. */
const coldFaults = init.faultFile === null || init.memoryOnly ? null : faultyFs(realFs);
const coldFiles = init.memoryOnly ? null : ColdFiles.open(join(init.dataDir, `shard-${init.shardId}`, 'cold'), log, undefined, coldFaults ?? realFs);
const state = new ShardState({ shardId: init.shardId, shardCount: init.shardCount, memoryGovEnforce: init.memoryGovEnforce, partitions: init.partitions, coldFiles });
const dedupe = new DedupeLog();
/** Server time as the front's clock gives it (clock/server_clock.ts); this thread never reads the wall clock. */
const clock = init.clock === undefined ? ServerClock.owner() : ServerClock.view(init.clock);
let store: ShardStore | null = null;
let recovered = { lastLsn: 0, records: 0, ms: 0 };
if (!init.memoryOnly) {
  const opened = ShardStore.open(init, state, dedupe, log, clock);
  store = opened.store;
  recovered = opened.info;
}
state.install(init.current);
const shard = new Shard({ init, state, dedupe, store, coldFiles, log, recovered, sampler: new ThreadSampler(`shard-${init.shardId}`), clock });

if (store !== null && init.walSync === 'batch') {
  // Batch mode acks after write(); fdatasync follows within a few ms.
  const s = store;
  setInterval(() => {
    try { s.syncInBackground(); } catch (err) { s.syncFailed(err); }
  }, init.walSyncIntervalMs).unref();
}
if (store !== null && init.faultFile !== null) {
  // Test hook only: arm or clear injected WAL faults from the control file.
  const s = store;
  setInterval(() => { const io = s.pollFaultFile(); coldFaults?.failWrites(io); }, WAL_FAULT_FILE_POLL_MS).unref();
}
setInterval(() => shard.memoryTick(), COLD_SWEEP_INTERVAL_MS).unref();

function refreshRegistry(i: ShardInit): void {
  if (i.memoryOnly) return;
  const path = join(i.dataDir, 'registry', 'registry.log');
  if (!existsSync(path)) return;
  // Lenient: damage is the boot verdict's to judge (coordinator/boot_losses.ts), not a reason for this thread to die.
  const entries = scanRegistryLogLenient(readFileSync(path)).entries as RegistryState[];
  const known = new Set(i.history.map((s) => s.version));
  for (const e of entries) {
    if (typeof e !== 'object' || e === null || !Array.isArray(e.nodes) || known.has(e.version)) continue;
    i.history.push(e);
    if (e.version > i.current.version) i.current = e;
  }
}

/** The thread's one entry (called through protocol/shard_calls.ts). */
export default function handle(task: ShardTask): ShardHello | Promise<void> {
  return 'hello' in task ? shard.hello() : serve(task.serve);
}

/** Each batch's bytes, in one buffer the thread reuses (ShardBatchWire). */
const batches = new ShardBatchDecoder();
/** STREAMFEAT_DEBUG_TIMELINE: the thread's run-queue waits around each batch. */
const runq = new RunQueueProbe();

/** The batch pipe (shard_calls.ts openShardPipe): each batch answered on the port, in order, until the front closes it. */
function serve(port: MessagePort): Promise<void> {
  port.on('message', (wire: ShardBatchWire) => {
    const t0 = tlNow();
    if (TIMELINE_ON) runq.start(t0);
    let answer: ShardBatchAnswer;
    try {
      answer = shard.runBatch(batches.decode(wire));
    } catch (err) {
      answer = batchFailed(err);
    }
    try {
      port.postMessage(answer);
    } catch (err) {
      port.postMessage(batchFailed(err)); // an answer that cannot be cloned: a bug, answered as one
    }
    if (TIMELINE_ON) {
      const pushes = pushesIn(wire.items);
      tlSpan(TL.BATCH, t0, wire.items.length, pushes);
      runq.end(pushes);
    }
  });
  // The front closes the pipe at shutdown, before the pool terminates this thread (no 'exit' event then).
  return new Promise((resolve) => port.once('close', () => { flushTimeline(); resolve(); }));
}

/** Pushes in a batch's items (the timeline's batch event). */
function pushesIn(items: ShardItem[]): number {
  let n = 0;
  for (const it of items) if (it.k === ITEM_PUSH) n += it.n;
  return n;
}

/** The front logs it (shard.task_failed) and answers the batch's items internal_error. */
function batchFailed(err: unknown): ShardBatchFailed {
  return { failed: { message: String((err as Error)?.message ?? err), stack: String((err as Error)?.stack ?? err) } };
}

process.on('exit', () => {
  try { store?.syncIfDirty(); store?.close(); coldFiles?.close(); } catch { /* exiting */ }
});
