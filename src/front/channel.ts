/**
 * One channel per shard: the items of the current event-loop turn, in arrival
 * order, and who is waiting for each. At most one batch per shard per turn
 * (never one per request), sent on the shard's pipe (protocol/shard_calls.ts
 * openShardPipe), and at most SHARD_BATCHES_IN_FLIGHT_MAX batches in flight: the
 * shard's single thread runs them in the order sent and answers in that order,
 * and a batch that arrives while the shard is busy does not wait for the
 * previous answer to travel back first. When the limit is reached, items keep
 * accumulating, so batches grow with load.
 *
 * Pushes do not travel as objects: the front writes each push's PUSH record into
 * this channel's PushFrameWriter (pushWriter, then enqueuePush), consecutive
 * pushes share one PushRunItem, and the batch's bytes cross to the shard with the
 * items as a string (protocol/messages.ts ShardBatchWire). Installs put their WAL
 * frame in the same bytes, in their place.
 */
import { SHARD_BATCH_SLOTS_KEPT_MAX, SHARD_BATCHES_IN_FLIGHT_MAX } from '../limits';
import { ITEM_INSTALL, ITEM_PUSH, type ErrorPayload, type InstallItem, type ItemOut, type NonPushItem, type PushRunItem, type ShardBatchAnswer, type ShardBatchWire, type ShardBatchResult, type ShardItem } from '../protocol/messages';
import { PushFrameWriter } from '../wal/push_record';
import { openShardPipe, type ShardPipe, type ShardPipeEvents, type ShardPool } from '../protocol/shard_calls';
import type { Reply } from './reply';
import { TIMELINE_ON, TL, tlNow, tlSpan } from '../timeline';

export interface Sink {
  done(out: ItemOut, tag: number): void;
  /** The request this sink answers, if any: a completion that throws answers it internal_error. */
  readonly reply?: Reply;
}

/** Told when a sink throws while completing: it logs, counts and answers that one request. */
export type SinkFailed = (sink: Sink, err: unknown) => void;

/** A per-push answer list where one answer was due: a shard bug, answered as such. */
const RUN_OUT_ON_ITEM: ErrorPayload = { code: 'internal_error', detail: { message: 'the shard answered a push run for an item that is not one' } };

const NO_ITEMS: ShardItem[] = [];

/**
 * A batch being filled, or sent and not answered yet. Answered batches are reused
 * (three arrays per batch, regrown request by request, were young garbage on the
 * front): `sinks` and `tags` keep their capacity, with `n` entries live (sinks are
 * cleared once answered, so that no answered request is kept); `items` is posted
 * to the shard as is, so it holds exactly the batch's items.
 */
class Batch {
  items: ShardItem[] = [];
  /** One per non-push item and one per push (a run of n pushes has n), in item order. */
  sinks: Array<Sink | null> = [];
  tags: number[] = [];
  n = 0;
  /** performance.now() at dispatch. */
  at = 0;

  add(sink: Sink, tag: number): void {
    this.sinks[this.n] = sink;
    this.tags[this.n] = tag;
    this.n++;
  }

  addFirst(sink: Sink, tag: number): void {
    for (let i = this.n; i > 0; i--) {
      this.sinks[i] = this.sinks[i - 1];
      this.tags[i] = this.tags[i - 1];
    }
    this.sinks[0] = sink;
    this.tags[0] = tag;
    this.n++;
  }

  /** Empty again; false when it grew past SHARD_BATCH_SLOTS_KEPT_MAX (not worth keeping). */
  clear(): boolean {
    this.items.length = 0;
    this.sinks.fill(null, 0, this.n);
    this.n = 0;
    return this.sinks.length <= SHARD_BATCH_SLOTS_KEPT_MAX;
  }
}

export class ShardChannel {
  /** The batch being filled. */
  #open = new Batch();
  /** Answered batches, for reuse (at most SHARD_BATCHES_IN_FLIGHT_MAX). */
  readonly #spare: Batch[] = [];
  /** The message posted for each batch, reused (postMessage copies it at once). */
  readonly #message: ShardBatchWire = { items: NO_ITEMS, frames: '' };
  #writer = new PushFrameWriter();
  /** The open push run (the last item), or null. */
  #run: PushRunItem | null = null;
  /** Opened at the first batch, and again after the thread behind it died. */
  #pipe: ShardPipe | null = null;
  /** Batches sent and not answered, oldest first (the pipe answers in order). */
  #sent: Batch[] = [];
  /** Shutdown: nothing more is sent. */
  #closed = false;
  readonly #events: ShardPipeEvents = { answer: (a) => this.#answer(a), lost: (err) => this.#lost(err) };
  batchesSent = 0;
  itemsSent = 0;
  /** Sum of batch round trips (dispatch to completion), seconds. */
  batchSeconds = 0;
  /** Why the shard's last WAL write failed; null once one succeeds (readiness, lifecycle.ts). */
  walError: string | null = null;
  /** performance.now() of that failure (readiness holds it for a duration). */
  walErrorAtMs = 0;

  constructor(
    readonly shardId: number,
    readonly pool: ShardPool,
    private readonly onFailure: (err: unknown) => void,
    private readonly onSinkFailed: SinkFailed,
  ) {}

  /** Any item but a push (pushes: pushWriter + enqueuePush). An install's WAL frame goes into the bytes here. */
  enqueue(item: NonPushItem, sink: Sink, tag: number): void {
    if (item.k === ITEM_INSTALL) this.#writer.install(item.lsn, item.wire.version);
    this.#run = null;
    this.#open.items.push(item);
    this.#open.add(sink, tag);
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
      this.#open.items.push(this.#run);
    }
    this.#open.add(sink, 0);
  }

  /** An install ahead of everything not yet dispatched (re-installing the registry on a replaced thread). */
  enqueueInstallFirst(item: InstallItem, sink: Sink): void {
    this.#writer.prependInstall(item.lsn, item.wire.version);
    this.#open.items.unshift(item);
    this.#open.addFirst(sink, 0);
  }

  /** Items waiting for the next batch (admin: queue depth). */
  get queued(): number {
    return this.#open.items.length;
  }

  /** Batches dispatched to the shard thread and not yet answered. */
  get inFlight(): number {
    return this.#sent.length;
  }

  get idle(): boolean {
    return this.#sent.length === 0 && this.#open.items.length === 0;
  }

  /** Shutdown, after the last drain: ends the serve task so that the pool can be destroyed quietly. */
  close(): void {
    this.#closed = true;
    this.#pipe?.close();
    this.#pipe = null;
  }

  flush(): void {
    if (this.#closed || this.#sent.length >= SHARD_BATCHES_IN_FLIGHT_MAX || this.#open.items.length === 0) return;
    const b = this.#open;
    this.#open = this.#spare.pop() ?? new Batch();
    this.#run = null;
    const msg = this.#message;
    msg.items = b.items;
    msg.frames = this.#writer.takeLatin1();
    this.batchesSent++;
    this.itemsSent += b.n;
    b.at = performance.now();
    this.#sent.push(b);
    if (TIMELINE_ON) tlSpan(TL.DISPATCH, tlNow(), b.n, this.#sent.length);
    try {
      (this.#pipe ??= openShardPipe(this.pool, this.#events)).send(msg);
    } finally {
      msg.items = NO_ITEMS;
      msg.frames = '';
    }
  }

  #answer(a: ShardBatchAnswer): void {
    const b = this.#sent.shift();
    if (b === undefined) return; // answers only come for batches sent on the pipe
    if ('failed' in a) {
      // The batch threw in the shard (the thread lives on): as if its task had failed.
      const err = Object.assign(new Error(a.failed.message), { stack: a.failed.stack });
      this.onFailure(err);
      this.#fail(b, err);
      return;
    }
    if (a.walError !== undefined) this.#walOutcome(a.walError);
    this.#complete(b, a.outs);
  }

  /** The thread died: every batch it did not answer fails; the next batch opens a pipe to its replacement. */
  #lost(err: unknown): void {
    this.#pipe = null;
    const lost = this.#sent;
    this.#sent = [];
    if (this.#closed) return;
    this.onFailure(err);
    for (const b of lost) this.#fail(b, err);
    this.flush();
  }

  #fail(b: Batch, err: unknown): void {
    const out: ErrorPayload = { code: 'internal_error', detail: { message: 'shard worker failed; the request may or may not have been applied', reason: String((err as Error)?.message ?? err) } };
    this.#complete(b, b.items.map(() => out));
  }

  #walOutcome(err: string | null): void {
    if (err === null) { this.walError = null; return; }
    this.walError = err;
    this.walErrorAtMs = performance.now();
  }

  /**
   * Runs inside a message or promise callback: anything thrown here would end the
   * process. So each sink completes on its own, and a sink that throws costs only
   * its own request (internal_error), never the batch or the server.
   */
  #complete(b: Batch, outs: ShardBatchResult['outs']): void {
    const { items, sinks, tags } = b;
    const t0 = tlNow();
    const tripMs = performance.now() - b.at;
    this.batchSeconds += tripMs / 1000;
    let u = 0;
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      const out = outs[i];
      if (it.k !== ITEM_PUSH) { this.#done(sinks[u]!, Array.isArray(out) ? RUN_OUT_ON_ITEM : out, tags[u]); u++; continue; }
      for (let j = 0; j < it.n; j++, u++) this.#done(sinks[u]!, Array.isArray(out) ? out[j] : out, tags[u]);
    }
    if (TIMELINE_ON) tlSpan(TL.ANSWER, t0, b.n, tripMs);
    if (b.clear() && this.#spare.length < SHARD_BATCHES_IN_FLIGHT_MAX) this.#spare.push(b);
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
