/**
 * The front thread's counters. Request paths bump plain fields and observe
 * fixed-bucket histograms indexed by transport (no labels looked up, nothing
 * allocated per request); admin/render_metrics.ts turns them into text.
 */
import { Histogram } from './histogram';
import { TRANSPORTS } from '../front/reply';

function perTransport(): Histogram[] {
  return TRANSPORTS.map(() => new Histogram());
}

export class Metrics {
  pushTotal = 0;
  pushReplayTotal = 0;
  getTotal = 0;
  batchGetTotal = 0;
  batchGetEntriesTotal = 0;
  registerTotal = 0;
  resetTotal = 0;
  tcpConnections = 0;
  httpRequestsTotal = 0;
  /** Requests answered internal_error because completing them threw (front/channel.ts). */
  completionErrorsTotal = 0;
  /** Pushes refused because the dedupe store was full (dedupe_capacity_exceeded). */
  dedupeFullTotal = 0;
  readonly errors = new Map<string, number>();
  /** Request arrival to the answer written, seconds; indexed by Reply.transport. */
  readonly pushLatency = perTransport();
  readonly getLatency = perTransport();
  readonly batchGetLatency = perTransport();
  /** performance.now() at start: uptime is a duration, which no wall clock step moves. */
  readonly startedMono = performance.now();
  /** Wall clock jumps the server clock saw (clock/clock_watch.ts). */
  clockJumpsForwardTotal = 0;
  clockJumpsBackwardTotal = 0;

  error(code: string): void {
    this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
  }

  errorsTotal(): number {
    let n = 0;
    for (const v of this.errors.values()) n += v;
    return n;
  }
}
