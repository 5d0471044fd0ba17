/**
 * One channel per shard: the items of the current event-loop turn, in arrival
 * order, and who is waiting for each. At most one piscina task per shard per
 * turn (never one per request), and at most SHARD_BATCHES_IN_FLIGHT_MAX tasks in
 * flight: the shard's single thread runs them in FIFO order (piscina's queue), so
 * order is kept, and a batch that arrives while the shard is busy does not wait
 * for the previous answer to travel back first. When the limit is reached, items
 * keep accumulating, so batches grow with load.
 *
 * Pushes do not travel as objects: the front writes each push's PUSH record into
 * this channel's PushFrameWriter (pushWriter, then enqueuePush), consecutive
 * pushes share one PushRunItem, and the batch's bytes are transferred to the
 * shard with the items (protocol/messages.ts ShardBatch). Installs put their WAL
 * frame in the same bytes, in their place.
 */
import type Piscina from 'piscina';
import { SHARD_BATCHES_IN_FLIGHT_MAX } from '../limits';
import { ITEM_INSTALL, ITEM_PUSH, type ErrorPayload, type InstallItem, type ItemOut, type NonPushItem, type PushRunItem, type ShardBatchResult, type ShardItem } from '../protocol/messages';
import { PushFrameWriter } from '../wal/push_record';
import { runShardBatch } from '../protocol/shard_calls';
import type { Reply } from './reply';

export interface Sink {
  done(out: ItemOut, tag: number): void;
  /** The request this sink answers, if any: a completion that throws answers it internal_error. */
  readonly reply?: Reply;
}

/** Told when a sink throws while completing: it logs, counts and answers that one request. */
export type SinkFailed = (sink: Sink, err: unknown) => void;

/** A per-push answer list where one answer was due: a shard bug, answered as such. */
const RUN_OUT_ON_ITEM: ErrorPayload = { code: 'internal_error', detail: { message: 'the shard answered a push run for an item that is not one' } };

export class ShardChannel {
  #items: ShardItem[] = [];
  /** One per non-push item and one per push (a run of n pushes has n), in item order. */
  #sinks: Sink[] = [];
  #tags: number[] = [];
  #writer = new PushFrameWriter();
  /** The open push run (the last item), or null. */
  #run: PushRunItem | null = null;
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

  /** Any item but a push (pushes: pushWriter + enqueuePush). An install's WAL frame goes into the bytes here. */
  enqueue(item: NonPushItem, sink: Sink, tag: number): void {
    if (item.k === ITEM_INSTALL) this.#writer.install(item.lsn, item.wire.version);
    this.#run = null;
    this.#items.push(item);
    this.#sinks.push(sink);
    this.#tags.push(tag);
  }

  /** Where the next push's PUSH record is written (then enqueuePush, in the same turn). */
  get pushWriter(): PushFrameWriter {
    return this.#writer;
  }

  /** The push whose record was just written into pushWriter. */
  enqueuePush(sink: Sink): void {
    const run = this.#run;
    if (run !== null) run.n++;
    else {
      this.#run = { k: ITEM_PUSH, n: 1 };
      this.#items.push(this.#run);
    }
    this.#sinks.push(sink);
    this.#tags.push(0);
  }

  /** An install ahead of everything not yet dispatched (re-installing the registry on a replaced thread). */
  enqueueInstallFirst(item: InstallItem, sink: Sink): void {
    this.#writer.prependInstall(item.lsn, item.wire.version);
    this.#items.unshift(item);
    this.#sinks.unshift(sink);
    this.#tags.unshift(0);
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
    this.#run = null;
    const bytes = this.#writer.take();
    this.#inFlight++;
    const sentAt = performance.now();
    this.batchesSent++;
    this.itemsSent += sinks.length;
    runShardBatch(this.pool, { items, bytes }).then(
      (res: ShardBatchResult) => {
        if (res.walError !== undefined) this.#walOutcome(res.walError);
        this.#complete(items, sinks, tags, res.outs, sentAt);
      },
      (err: unknown) => {
        this.onFailure(err);
        const out: ErrorPayload = { code: 'internal_error', detail: { message: 'shard worker failed; the request may or may not have been applied', reason: String((err as Error)?.message ?? err) } };
        this.#complete(items, sinks, tags, items.map(() => out), sentAt);
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
  #complete(items: ShardItem[], sinks: Sink[], tags: number[], outs: ShardBatchResult['outs'], sentAt: number): void {
    this.#inFlight--;
    this.batchSeconds += (performance.now() - sentAt) / 1000;
    let u = 0;
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      const out = outs[i];
      if (it.k !== ITEM_PUSH) { this.#done(sinks[u], Array.isArray(out) ? RUN_OUT_ON_ITEM : out, tags[u]); u++; continue; }
      for (let j = 0; j < it.n; j++, u++) this.#done(sinks[u], Array.isArray(out) ? out[j] : out, tags[u]);
    }
    this.flush();
  }

  #done(sink: Sink, out: ItemOut, tag: number): void {
    try {
      sink.done(out, tag);
    } catch (err) {
      try { this.onSinkFailed(sink, err); } catch { /* the handler logs; nothing more can be done here */ }
    }
  }
}
