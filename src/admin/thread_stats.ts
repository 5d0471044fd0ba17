/**
 * Runtime figures of one thread (front, coordinator, each shard): V8 heap of its
 * isolate, event-loop utilization and event-loop delay since the previous sample.
 * Each thread owns one ThreadSampler and answers a stats request with
 * sample(); the front renders them all with a `thread` label. Process-wide
 * figures (RSS, CPU) are read once, on the front (admin/process_stats.ts).
 */
import { monitorEventLoopDelay, performance, type EventLoopUtilization, type IntervalHistogram } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { EVENT_LOOP_DELAY_RESOLUTION_MS } from '../limits';
import { unaccountedBytes } from '../util/unaccounted';

/** Structured-cloneable: travels from a worker to the front. */
export interface ThreadStats {
  thread: string;
  heapUsedBytes: number;
  heapTotalBytes: number;
  heapLimitBytes: number;
  externalBytes: number;
  /** Fraction of wall time the event loop was busy since the previous sample (0..1). */
  utilization: number;
  /** Event-loop delay beyond the monitor's resolution since the previous sample, seconds (0 when no sample was taken). */
  lag: { mean: number; p50: number; p99: number; max: number };
}

export class ThreadSampler {
  readonly #delay: IntervalHistogram = monitorEventLoopDelay({ resolution: EVENT_LOOP_DELAY_RESOLUTION_MS });
  #elu: EventLoopUtilization = performance.eventLoopUtilization();

  constructor(readonly thread: string) {
    this.#delay.enable();
  }

  /** Figures since the previous call; resets the delay histogram. */
  sample(): ThreadStats {
    const heap = getHeapStatistics();
    const elu = performance.eventLoopUtilization(this.#elu);
    this.#elu = performance.eventLoopUtilization();
    const d = this.#delay;
    // The monitor records the time between its timer's wake-ups, so an idle loop
    // reads about one resolution: report the delay beyond it.
    const ns = (v: number): number => (Number.isFinite(v) ? Math.max(0, v - EVENT_LOOP_DELAY_RESOLUTION_MS * 1e6) / 1e9 : 0);
    const lag = d.count > 0 ? { mean: ns(d.mean), p50: ns(d.percentile(50)), p99: ns(d.percentile(99)), max: ns(d.max) } : { mean: 0, p50: 0, p99: 0, max: 0 };
    d.reset();
    return {
      thread: this.thread,
      heapUsedBytes: heap.used_heap_size,
      heapTotalBytes: heap.total_heap_size,
      heapLimitBytes: heap.heap_size_limit,
      // With the shard's arrays on SharedArrayBuffers, which V8 leaves out of its figure (util/unaccounted.ts).
      externalBytes: ((heap as { external_memory?: number }).external_memory ?? 0) + unaccountedBytes(),
      utilization: Number.isFinite(elu.utilization) ? elu.utilization : 0,
      lag,
    };
  }
}
