/**
 * The front's view of every thread, refreshed once per STATS_INTERVAL_MS: it
 * sends an ITEM_STATS item down each shard channel (in order with the traffic,
 * one at a time per shard, so a stalled shard is not flooded) and a `stats` task
 * to the coordinator, and keeps the last answer of each. /metrics and the
 * dashboard's /api/stats read these cached answers; a scrape never waits on a
 * worker. It also keeps the front's counters of the last STATS_WINDOW_INTERVALS
 * ticks, for rates and recent latency percentiles.
 */
import type { Front } from '../front/front';
import type { Sink } from '../front/channel';
import { ITEM_STATS, type CoordinatorStats, type ErrorPayload } from '../protocol/messages';
import { runCoordinator } from '../protocol/coordinator_calls';
import { STATS_HISTORY_INTERVALS, STATS_INTERVAL_MS, STATS_WINDOW_INTERVALS } from '../limits';
import type { ShardStats } from '../shard/shard_stats';
import { mergeHistograms, type HistogramData } from './histogram';
import { ThreadSampler, type ThreadStats } from './thread_stats';

/** Front counters at one tick (for rates and windowed percentiles). */
export interface Tick {
  /** performance.now(): rates divide by a duration. */
  atMs: number;
  push: number;
  get: number;
  batchGet: number;
  errors: number;
  pushLatency: HistogramData;
  getLatency: HistogramData;
  batchGetLatency: HistogramData;
}

export class StatsCollector {
  readonly shards: Array<ShardStats | null>;
  /** performance.now() of each shard's last answer (0: none yet). */
  readonly shardAtMs: number[];
  coordinator: CoordinatorStats | null = null;
  front: ThreadStats;
  readonly ticks: Tick[] = [];
  /** Per-interval rates of the last STATS_HISTORY_INTERVALS ticks (dashboard chart; atMs is server time, as /api/stats now_ms). */
  readonly history: Array<{ atMs: number; push: number; get: number; errors: number }> = [];
  readonly #sampler = new ThreadSampler('front');
  readonly #pending: boolean[];
  #coordinatorPending = false;
  #timer: NodeJS.Timeout | null = null;

  constructor(readonly owner: Front) {
    const n = owner.channels.length;
    this.shards = new Array<ShardStats | null>(n).fill(null);
    this.shardAtMs = new Array<number>(n).fill(0);
    this.#pending = new Array<boolean>(n).fill(false);
    this.front = this.#sampler.sample();
  }

  start(): void {
    if (this.#timer !== null) return;
    this.tick();
    this.#timer = setInterval(() => this.tick(), STATS_INTERVAL_MS);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  tick(): void {
    const front = this.owner;
    this.front = this.#sampler.sample();
    for (let s = 0; s < this.shards.length; s++) {
      if (this.#pending[s]) continue;
      this.#pending[s] = true;
      const sink: Sink = {
        done: (out: string | ErrorPayload | null) => {
          this.#pending[s] = false;
          if (typeof out !== 'string') return; // the shard failed; keep the last answer
          this.shards[s] = JSON.parse(out) as ShardStats;
          this.shardAtMs[s] = performance.now();
        },
      };
      front.send(s, { k: ITEM_STATS }, sink);
    }
    if (!this.#coordinatorPending) {
      this.#coordinatorPending = true;
      runCoordinator(front.coordinator, { kind: 'stats' }).then(
        (r) => { this.coordinator = r; this.#coordinatorPending = false; },
        () => { this.#coordinatorPending = false; },
      );
    }
    const m = front.metrics;
    this.ticks.push({
      atMs: performance.now(), push: m.pushTotal, get: m.getTotal, batchGet: m.batchGetTotal, errors: m.errorsTotal(),
      pushLatency: mergeHistograms(m.pushLatency.map((h) => h.data())),
      getLatency: mergeHistograms(m.getLatency.map((h) => h.data())),
      batchGetLatency: mergeHistograms(m.batchGetLatency.map((h) => h.data())),
    });
    if (this.ticks.length > STATS_WINDOW_INTERVALS + 1) this.ticks.shift();
    const [a, b] = this.ticks.slice(-2);
    if (b !== undefined && a !== b && b.atMs > a.atMs) {
      const s = (b.atMs - a.atMs) / 1000;
      this.history.push({ atMs: front.clock.nowMs(), push: (b.push - a.push) / s, get: (b.get - a.get + b.batchGet - a.batchGet) / s, errors: (b.errors - a.errors) / s });
      if (this.history.length > STATS_HISTORY_INTERVALS) this.history.shift();
    }
  }

  /** Every thread's runtime figures that have arrived, front first. */
  threads(): ThreadStats[] {
    const out: ThreadStats[] = [this.front];
    if (this.coordinator !== null) out.push(this.coordinator.runtime);
    for (const s of this.shards) if (s !== null) out.push(s.runtime);
    return out;
  }
}
