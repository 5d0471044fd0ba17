/**
 * Our own load client (framed TCP or HTTP/1.1), one request in flight per
 * connection. Closed loop (rate 0): each reply triggers the next request and
 * latency is reply - send. Fixed rate (wrk2-style): a 1 ms ticker makes
 * requests due at `rate` per second; a due request goes to an idle connection
 * or waits in a queue, and its latency is counted from when it became due,
 * so time spent waiting for a connection is not hidden (coordinated omission).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Rng } from '../keys';
import { BodyGen, workloadNamed } from '../workloads';
import { connectAll, ReqKind, type Conn } from './conns';
import type { JobResult, LoadJob } from './jobs';
import { Stats } from './stats';

/** How long to wait for in-flight replies after the window closes. */
export const DRAIN_MS_MAX = 2_000;
/** Ticker period of the fixed-rate mode. */
const TICK_MS = 1;
/** Fixed rate: lateness of the ticker itself that is forgiven (normal setInterval jitter).
 * A request later than this behind schedule (a stalled client) is charged from its due time. */
const TIMER_SLACK_MS = 1.5;
/**
 * Fixed rate only: a directory that receives, per run, every measured request's due
 * and reply times (ms since the epoch, one "due done" line each) as
 * load-<pid>-<start>.lat, for bench/timeline.ts to line up with a server timeline.
 */
const TRACE_DIR = process.env.BENCH_LOAD_TRACE ?? '';
/** BENCH_LOAD_TRACE: a gap between two ticks longer than this is written as a client stall ("lag <from> <to>"). */
const TRACE_LAG_MS = 3;

export type Mark = (m: 'measure_start' | 'measure_end') => void;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class LoadDriver {
  readonly #job: LoadJob;
  readonly #gen: BodyGen;
  readonly #rng: Rng;
  #conns: Conn[];
  #stats: Stats;
  #measuring: boolean;
  #stopping: boolean;
  #inflight: number;
  #onDrained: (() => void) | null;
  /** Fixed rate: idle connections and due times waiting for one. */
  readonly #idle: Conn[];
  #queue: number[];
  #queueHead: number;
  #nextDue: number;
  readonly #intervalMs: number;
  /** Fixed rate: the most requests that waited for a connection at once. */
  #queuePeak: number;
  /** BENCH_LOAD_TRACE: due and reply times (performance.now()) of measured requests, in pairs. */
  #trace: number[] | null;
  /** BENCH_LOAD_TRACE: ticker gaps over TRACE_LAG_MS (the client's own stalls), as (last tick, this tick) pairs. */
  readonly #lags: number[] = [];
  #lastTick = 0;
  /** Connections the server closed while no request was on them (not errors). */
  #idleClosed = 0;

  constructor(job: LoadJob) {
    this.#job = job;
    this.#gen = new BodyGen(workloadNamed(job.workload), job.dist, job.entities, job.getEntities, job.seed);
    this.#rng = new Rng(job.seed ^ 0x5bd1e995);
    this.#conns = [];
    this.#stats = new Stats();
    this.#measuring = false;
    this.#stopping = false;
    this.#inflight = 0;
    this.#onDrained = null;
    this.#idle = [];
    this.#queue = [];
    this.#queueHead = 0;
    this.#nextDue = 0;
    this.#intervalMs = job.rate > 0 ? 1000 / job.rate : 0;
    this.#queuePeak = 0;
    this.#trace = TRACE_DIR !== '' && job.rate > 0 ? [] : null;
  }

  async run(mark: Mark): Promise<JobResult> {
    const job = this.#job;
    this.#conns = await connectAll(job.transport, job.port, job.connections,
      (c, ok, p) => this.#onReply(c, ok, p), (c, why) => this.#onClose(c, why));
    let ticker: NodeJS.Timeout | null = null;
    const t0 = performance.now();
    if (job.rate === 0) {
      for (const c of this.#conns) this.#issue(c, t0);
    } else {
      this.#idle.push(...this.#conns);
      this.#nextDue = t0;
      ticker = setInterval(() => this.#tick(), TICK_MS);
    }
    await sleep(job.warmupMs);
    this.#stats = new Stats();
    this.#queuePeak = 0;
    const cpu0 = process.cpuUsage();
    const tStart = performance.now();
    this.#measuring = true;
    mark('measure_start');
    await sleep(job.durationMs);
    this.#measuring = false;
    const elapsedS = (performance.now() - tStart) / 1000;
    const cpu = process.cpuUsage(cpu0);
    mark('measure_end');
    this.#stopping = true;
    if (ticker !== null) clearInterval(ticker);
    if (this.#inflight > 0) {
      await Promise.race([new Promise<void>((r) => { this.#onDrained = r; }), sleep(DRAIN_MS_MAX)]);
    }
    for (const c of this.#conns) c.close();
    if (this.#trace !== null) writeTrace(this.#trace, this.#lags);
    const extra: Record<string, number> = { connections: job.connections };
    if (this.#idleClosed > 0) extra.idle_closed = this.#idleClosed;
    if (job.rate > 0) {
      extra.target_rate = job.rate;
      extra.queue_peak = this.#queuePeak;
    }
    return this.#stats.result(elapsedS, cpu, extra);
  }

  #issue(c: Conn, intendedAt: number): void {
    const job = this.#job;
    let kind: ReqKind;
    switch (job.mix) {
      case 'push': kind = ReqKind.Push; break;
      case 'get': kind = ReqKind.Get; break;
      case 'batch': kind = ReqKind.Batch; break;
      default: kind = this.#rng.next() < job.pushShare ? ReqKind.Push : ReqKind.Get;
    }
    const body = kind === ReqKind.Push ? this.#gen.push() : kind === ReqKind.Get ? this.#gen.get() : this.#gen.batchGet();
    c.intendedAt = intendedAt;
    c.sentAt = performance.now();
    this.#inflight++;
    c.send(kind, body);
  }

  #onReply(c: Conn, ok: boolean, payload: Buffer | null): void {
    this.#inflight--;
    const now = performance.now();
    if (this.#measuring) {
      const from = this.#job.rate > 0 ? c.intendedAt : c.sentAt;
      this.#stats.reply(c.kind, ok, (now - from) * 1000, payload);
      if (this.#trace !== null) this.#trace.push(from, now);
    }
    if (this.#stopping) {
      if (this.#inflight === 0 && this.#onDrained !== null) this.#onDrained();
      return;
    }
    if (this.#job.rate === 0) {
      this.#issue(c, now);
    } else if (this.#queueHead < this.#queue.length) {
      this.#issue(c, this.#queue[this.#queueHead++]);
      if (this.#queueHead === this.#queue.length) this.#resetQueue();
    } else {
      this.#idle.push(c);
    }
  }

  #onClose(c: Conn, why: string): void {
    if (this.#stopping) return;
    if (c.busy) {
      this.#inflight--;
      this.#stats.failure(`connection ${c.id}: ${why}`);
    } else {
      // No request was waiting on it: a keep-alive connection the server closed
      // while idle (uWS closes HTTP connections idle for ~10 s, and a fixed-rate
      // run reuses its most recently answered connections first, so the rest can
      // sit idle that long). Not a failed request; the run goes on without it.
      this.#idleClosed++;
    }
    const i = this.#idle.indexOf(c);
    if (i >= 0) this.#idle.splice(i, 1);
  }

  #tick(): void {
    const now = performance.now();
    if (this.#trace !== null && now - this.#lastTick > TRACE_LAG_MS) this.#lags.push(this.#lastTick, now);
    this.#lastTick = now;
    while (this.#nextDue <= now) {
      // Forgive up to TIMER_SLACK_MS of lateness; charge the rest.
      const due = Math.min(now, this.#nextDue + TIMER_SLACK_MS);
      this.#nextDue += this.#intervalMs;
      const c = this.#idle.pop();
      if (c !== undefined) {
        this.#issue(c, due);
      } else {
        this.#queue.push(due);
        const waiting = this.#queue.length - this.#queueHead;
        if (waiting > this.#queuePeak) this.#queuePeak = waiting;
      }
    }
  }

  #resetQueue(): void {
    this.#queue = [];
    this.#queueHead = 0;
  }
}

function writeTrace(t: number[], lags: number[]): void {
  if (t.length === 0) return;
  const o = performance.timeOrigin;
  const lines: string[] = [];
  for (let i = 0; i < t.length; i += 2) lines.push(`${(o + t[i]).toFixed(3)} ${(o + t[i + 1]).toFixed(3)}\n`);
  for (let i = 0; i < lags.length; i += 2) lines.push(`lag ${(o + lags[i]).toFixed(3)} ${(o + lags[i + 1]).toFixed(3)}\n`);
  mkdirSync(TRACE_DIR, { recursive: true });
  writeFileSync(join(TRACE_DIR, `load-${process.pid}-${Math.round(o + t[0])}.lat`), lines.join(''));
}
