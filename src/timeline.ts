/**
 * A thread's debug timeline, off by default: with STREAMFEAT_DEBUG_TIMELINE=<dir>
 * in the server's environment (read once, at module load, in every thread),
 * each thread records its shard batches, front dispatches and answers, its GCs
 * (a PerformanceObserver 'gc') and the rare stop-the-world steps of the shard's
 * data structures (slab and table doublings, rehashes, arena growth, WAL
 * segment rolls, snapshot slices, cold sweeps), and appends them every
 * TIMELINE_FLUSH_MS to <dir>/<thread>-<pid>-<threadId>.tl, one line per event:
 *
 *     <start ms since the epoch> <duration ms> <kind> <a> <b>
 *
 * Times are performance.timeOrigin + performance.now(), comparable across the
 * threads and with a load client's own stamps (bench/timeline.ts correlates the
 * slowest pushes with these events; bench/README.md). Off, every call is one
 * branch on a constant; on, an event is five doubles in a buffer, and the flush
 * (a synchronous append) is itself recorded (TL.FLUSH). A thread flushes at exit
 * and a shard thread when its batch pipe closes; one terminated without either
 * loses at most its last TIMELINE_FLUSH_MS. (Not a SERVICE_* setting: a debug aid
 * outside the configuration, like the bench's own variables.)
 */
import { appendFileSync, mkdirSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { threadId } from 'node:worker_threads';
import { TIMELINE_EVENTS_BUFFERED, TIMELINE_FLUSH_MS, TIMELINE_LAG_MIN_MS, TIMELINE_LAG_TICK_MS } from './limits';

const DIR = process.env.STREAMFEAT_DEBUG_TIMELINE ?? '';
/** Whether this process records a timeline (decided once, at load). */
export const TIMELINE_ON = DIR !== '';

/** Event kinds (the third column of a .tl line). `a` and `b` say per kind what they hold. */
export const TL = {
  /** Shard batch: a = items, b = pushes. */
  BATCH: 'batch',
  /** GC: a = perf_hooks gc kind (1 minor, 2 major, 4 incremental, 8 weak callbacks), b = 0. */
  GC: 'gc',
  /** Front: a batch posted to a shard; a = pushes and items, b = batches in flight after it. */
  DISPATCH: 'dispatch',
  /** Front: a batch's answer completed; a = pushes and items, b = round trip ms. */
  ANSWER: 'answer',
  /** Entity slots doubled (every column's slab with them): a = new capacity, b = table id. */
  SLOTS_GROW: 'slots_grow',
  /** Entity key table resized: a = new entries, b = keys. */
  INDEX_RESIZE: 'index_resize',
  /** Entity key arena grown or compacted: a = new bytes, b = live bytes. */
  ARENA_GROW: 'arena_grow',
  /** An intern table rehashed: a = new slots, b = values. */
  INTERN_REHASH: 'intern_rehash',
  /** An intern table's value arrays doubled: a = new length, b = 0. */
  INTERN_GROW: 'intern_grow',
  /** A ring pool's blocks doubled: a = new blocks, b = doubles per block. */
  POOL_GROW: 'pool_grow',
  /** A cold key index resized: a = new entries, b = keys. */
  COLD_INDEX_RESIZE: 'cold_index_resize',
  /** WAL segment rolled: a = new segment's first lsn, b = 0. */
  WAL_ROLL: 'wal_roll',
  /** Snapshot slice: a = entities written so far, b = 0. */
  SNAPSHOT_SLICE: 'snapshot_slice',
  /** Cold sweep slice: a = entities frozen or dropped so far, b = 0. */
  COLD_SWEEP: 'cold_sweep',
  /** The timeline's own flush: a = events written, b = 0. */
  FLUSH: 'flush',
  /**
   * The thread's event loop came back late: a TIMELINE_LAG_TICK_MS timer fired
   * more than TIMELINE_LAG_MIN_MS after it was due (the span is the late part);
   * a lag no batch or GC covers is the thread waiting for a core. a = 0, b = 0.
   */
  LAG: 'lag',
  /**
   * A shard thread runnable but not running (Linux: /proc/thread-self/schedstat's
   * run-queue time, RunQueueProbe): after the batch arrived and before it started
   * (the span ends when the batch starts; a = 0), or while the batch ran (the span
   * starts with the batch; a = the batch's CPU ms, b = its pushes).
   */
  RUNQ_WAKE: 'runq_wake',
  RUNQ_BATCH: 'runq_batch',
} as const;
export type TlKind = (typeof TL)[keyof typeof TL];

let kinds: TlKind[] = [];
let nums = new Float64Array(0);
let n = 0;
let file = '';

/** Now, in the timeline's clock (ms since the epoch), or 0 when off. */
export function tlNow(): number {
  return TIMELINE_ON ? performance.timeOrigin + performance.now() : 0;
}

/** Records an event that started at `start` (tlNow()) and ends now. */
export function tlSpan(kind: TlKind, start: number, a: number, b: number): void {
  if (!TIMELINE_ON || file === '') return;
  record(kind, start, performance.timeOrigin + performance.now() - start, a, b);
}

function record(kind: TlKind, start: number, dur: number, a: number, b: number): void {
  if (n === TIMELINE_EVENTS_BUFFERED) flush();
  kinds[n] = kind;
  const o = 4 * n++;
  nums[o] = start;
  nums[o + 1] = dur;
  nums[o + 2] = a;
  nums[o + 3] = b;
}

function flush(): void {
  if (n === 0) return;
  const t0 = tlNow();
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const o = 4 * i;
    lines.push(`${nums[o].toFixed(3)} ${nums[o + 1].toFixed(3)} ${kinds[i]} ${nums[o + 2]} ${nums[o + 3]}\n`);
  }
  const written = n;
  n = 0;
  try { appendFileSync(file, lines.join('')); } catch { /* a debug aid: never fails the server */ }
  record(TL.FLUSH, t0, tlNow() - t0, written, 0);
}

/** Run-queue time below this is not recorded, ms. */
const RUNQ_MIN_MS = 0.05;

/**
 * This thread's run-queue waits around each unit of work (a shard batch), from
 * /proc/thread-self/schedstat ("<ns on a CPU> <ns waiting for one> <slices>"): one
 * read at its start and one at its end (~2.5 µs each). It tells a thread that waited
 * for a core (two cores shared by the front, the shard and a load generator) from
 * one that was working. Records nothing when the timeline is off or the file is
 * missing (not Linux).
 */
export class RunQueueProbe {
  #fd = -1;
  readonly #buf = Buffer.alloc(128);
  #runMs = 0;
  #waitMs = 0;
  #startT = 0;
  #startRun = 0;
  #startWait = 0;
  #endWait = -1;

  constructor() {
    if (!TIMELINE_ON) return;
    try { this.#fd = openSync('/proc/thread-self/schedstat', 'r'); } catch { this.#fd = -1; }
  }

  #read(): boolean {
    if (this.#fd < 0 || file === '') return false;
    const n = readSync(this.#fd, this.#buf, 0, this.#buf.length, 0);
    const text = this.#buf.toString('latin1', 0, n);
    const a = text.indexOf(' ');
    const b = text.indexOf(' ', a + 1);
    this.#runMs = Number(text.slice(0, a)) / 1e6;
    this.#waitMs = Number(text.slice(a + 1, b)) / 1e6;
    return true;
  }

  /** The unit of work starts now (`t`: tlNow()). */
  start(t: number): void {
    if (!this.#read()) return;
    const waited = this.#endWait < 0 ? 0 : this.#waitMs - this.#endWait;
    if (waited >= RUNQ_MIN_MS) record(TL.RUNQ_WAKE, t - waited, waited, 0, 0);
    this.#startT = t;
    this.#startRun = this.#runMs;
    this.#startWait = this.#waitMs;
  }

  /** The unit of work that started last ends now; `b`: what the event's b holds (pushes). */
  end(b: number): void {
    if (!this.#read()) return;
    const waited = this.#waitMs - this.#startWait;
    if (waited >= RUNQ_MIN_MS) record(TL.RUNQ_BATCH, this.#startT, waited, this.#runMs - this.#startRun, b);
    this.#endWait = this.#waitMs;
  }
}

/**
 * Starts this thread's timeline (no-op when off): `thread` names the file. GCs
 * are recorded from here on; events before this call are dropped.
 */
export function startTimeline(thread: string): void {
  if (!TIMELINE_ON || file !== '') return;
  mkdirSync(DIR, { recursive: true });
  file = join(DIR, `${thread}-${process.pid}-${threadId}.tl`);
  kinds = new Array<TlKind>(TIMELINE_EVENTS_BUFFERED);
  nums = new Float64Array(4 * TIMELINE_EVENTS_BUFFERED);
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      record(TL.GC, performance.timeOrigin + e.startTime, e.duration, ((e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0), 0);
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  setInterval(flush, TIMELINE_FLUSH_MS).unref();
  let due = performance.now() + TIMELINE_LAG_TICK_MS;
  setInterval(() => {
    const now = performance.now();
    if (now - due > TIMELINE_LAG_MIN_MS) record(TL.LAG, performance.timeOrigin + due, now - due, 0, 0);
    due = now + TIMELINE_LAG_TICK_MS;
  }, TIMELINE_LAG_TICK_MS).unref();
  process.on('exit', flush);
}

/** The file this thread writes (tests), '' when off or not started. */
export function timelineFile(): string {
  return file;
}

/** Writes what is buffered now (tests; the timer does it otherwise). */
export function flushTimeline(): void {
  if (file !== '') flush();
}
