/**
 * One channel per shard: the items of the current event-loop turn, in arrival
 * order, and who is waiting for each. At most one piscina task per shard per
 * turn (never one per request), and at most SHARD_BATCHES_IN_FLIGHT_MAX tasks in
 * flight: the shard's single thread runs them in FIFO order (piscina's queue), so
 * order is kept, and a batch that arrives while the shard is busy does not wait
 * for the previous answer to travel back first. When the limit is reached, items
 * keep accumulating, so batches grow with load.
 */
import type Piscina from 'piscina';
import { SHARD_BATCHES_IN_FLIGHT_MAX } from '../limits';
import type { ErrorPayload, ItemOut, ShardBatchResult, ShardItem } from '../protocol/messages';
import type { Reply } from './reply';

export interface Sink {
  done(out: ItemOut, tag: number): void;
  /** The request this sink answers, if any: a completion that throws answers it internal_error. */
  readonly reply?: Reply;
}

/** Told when a sink throws while completing: it logs, counts and answers that one request. */
export type SinkFailed = (sink: Sink, err: unknown) => void;

export class ShardChannel {
  #items: ShardItem[] = [];
  #sinks: Sink[] = [];
  #tags: number[] = [];
  #inFlight = 0;
  batchesSent = 0;
  itemsSent = 0;
  /** Sum of batch round trips (dispatch to completion), seconds. */
  batchSeconds = 0;
  /** Why the shard's last WAL write failed; null once one succeeds (readiness, lifecycle.ts). */
  walError: string | null = null;
  walErrorAtMs = 0;

  constructor(
    readonly shardId: number,
    readonly pool: Pick<Piscina, 'run'>,
    private readonly onFailure: (err: unknown) => void,
    private readonly onSinkFailed: SinkFailed,
  ) {}

  enqueue(item: ShardItem, sink: Sink, tag: number): void {
    this.#items.push(item);
    this.#sinks.push(sink);
    this.#tags.push(tag);
  }

  /** Ahead of everything not yet dispatched (re-installing the registry on a replaced thread). */
  enqueueFirst(item: ShardItem, sink: Sink, tag: number): void {
    this.#items.unshift(item);
    this.#sinks.unshift(sink);
    this.#tags.unshift(tag);
  }

  /** Items waiting for the next batch (admin: queue depth). */
  get queued(): number {
    return this.#items.length;
  }

  /** Batches dispatched to the shard thread and not yet answered. */
  get inFlight(): number {
    return this.#inFlight;
  }

  get idle(): boolean {
    return this.#inFlight === 0 && this.#items.length === 0;
  }

  flush(): void {
    if (this.#inFlight >= SHARD_BATCHES_IN_FLIGHT_MAX || this.#items.length === 0) return;
    const items = this.#items;
    const sinks = this.#sinks;
    const tags = this.#tags;
    this.#items = [];
    this.#sinks = [];
    this.#tags = [];
    this.#inFlight++;
    const sentAt = performance.now();
    this.batchesSent++;
    this.itemsSent += items.length;
    this.pool.run({ items }).then(
      (res: ShardBatchResult) => {
        if (res.walError !== undefined) this.#walOutcome(res.walError);
        this.#complete(sinks, tags, res.outs, sentAt);
      },
      (err: unknown) => {
        this.onFailure(err);
        const out: ErrorPayload = { code: 'internal_error', detail: { message: 'shard worker failed; the request may or may not have been applied', reason: String((err as Error)?.message ?? err) } };
        this.#complete(sinks, tags, sinks.map(() => out), sentAt);
      },
    );
  }

  #walOutcome(err: string | null): void {
    if (err === null) { this.walError = null; return; }
    this.walError = err;
    this.walErrorAtMs = Date.now();
  }

  /**
   * Runs inside a promise callback: anything thrown here would be an unhandled
   * rejection and end the process. So each sink completes on its own, and a sink
   * that throws costs only its own request (internal_error), never the batch or
   * the server.
   */
  #complete(sinks: Sink[], tags: number[], outs: ShardBatchResult['outs'], sentAt: number): void {
    this.#inFlight--;
    this.batchSeconds += (performance.now() - sentAt) / 1000;
    for (let i = 0; i < sinks.length; i++) {
      try {
        sinks[i].done(outs[i], tags[i]);
      } catch (err) {
        try { this.onSinkFailed(sinks[i], err); } catch { /* the handler logs; nothing more can be done here */ }
      }
    }
    this.flush();
  }
}
