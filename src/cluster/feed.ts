/**
 * Partition feeds (docs/cluster.md "Ownership"): for each partition this node
 * owns, an ordered JetStream consumer on the partition's subject hands every copy
 * to the local shards of its keys, in stream order, exactly as a single node hands
 * them its pushes.
 *
 * Exactly once: the copy's stream sequence is its LSN, and an entity applies an
 * event only if its LSN is above the entity's last one (shard/state.ts). A
 * partition's events reach an entity in sequence order, so replaying any prefix
 * again (a consumer recreated after a NATS restart, a partition regained after a
 * spell with another owner) applies each event once.
 *
 * Takeover: a partition newly owned first imports its latest checkpoint when that
 * is newer than what this node has (checkpoint.ts), then consumes from the
 * checkpoint's sequence + 1; it is "replaying" until every copy acked before the
 * takeover (the subject's last sequence then) is applied; reads of it answer
 * partition_unavailable meanwhile. One `cluster.partition_replayed` line reports the
 * checkpoint restored and how many copies were replayed on top of it.
 */
import type { JsMsg, JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { Front } from '../front/front';
import type { Sink } from '../front/channel';
import type { Logger } from '../log';
import type { ErrorPayload } from '../protocol/messages';
import { CLUSTER_CONSUMER_RETRY_MS, CLUSTER_FEED_IN_FLIGHT_MAX } from '../limits';
import type { Checkpoints, CheckpointedFeed } from './checkpoint';
import { decodeEvent } from './event_wire';
import { EVENT_STREAM, eventSubject } from './names';

/** Completion of one stream copy across the shards it went to. */
class CopySink implements Sink {
  remaining: number;
  done_ = false;
  constructor(readonly feed: PartitionFeed, readonly seq: number, shards: number) {
    this.remaining = shards;
  }
  done(out: string | ErrorPayload | null): void {
    if (out !== null && typeof out === 'object') this.feed.applyFailed(this.seq, out);
    if (--this.remaining === 0) { this.done_ = true; this.feed.settle(); }
  }
}

export class PartitionFeed implements CheckpointedFeed {
  /** Highest sequence handed to the shards (the next consumer starts after it). */
  delivered = 0;
  /** Highest sequence such that every copy up to it is applied. */
  applied = 0;
  /** Sequence that must be applied before reads are answered (set at each takeover). */
  target = Number.POSITIVE_INFINITY;
  owned = false;
  /** Sequence of the newest checkpoint of this partition written or restored here. */
  checkpointSeq = 0;
  /** Nothing at or below this sequence exists any more (test-mode reset). */
  floor = 0;
  #inFlight: CopySink[] = [];
  #resume: (() => void) | null = null;
  #stopCurrent: (() => void) | null = null;
  #generation = 0;
  #failures = 0;
  // Takeover report: when taken, the checkpoint restored, copies replayed up to the target.
  #takenAt = 0;
  #restoredSeq = 0;
  #replayed = 0;
  #reported = true;

  constructor(readonly partition: number, readonly host: Feeder) {}

  get ready(): boolean {
    return this.owned && this.applied >= this.target;
  }

  applyFailed(seq: number, err: ErrorPayload): void {
    // Only a registry the owner has not caught up with (or a forced change that dropped
    // the event) gets here; counted, and logged once per 1000 to keep logs bounded.
    if (this.#failures++ % 1000 === 0) this.host.log.warn({ kind: 'cluster.apply_failed', partition: this.partition, seq, code: err.code, message: err.detail.message, failures: this.#failures });
  }

  settle(): void {
    let i = 0;
    while (i < this.#inFlight.length && this.#inFlight[i].done_) { this.applied = this.#inFlight[i].seq; i++; }
    if (i > 0) this.#inFlight.splice(0, i);
    if (this.#inFlight.length === 0 && this.applied < this.delivered) this.applied = this.delivered;
    if (this.#resume !== null && this.#inFlight.length < CLUSTER_FEED_IN_FLIGHT_MAX / 2) { const r = this.#resume; this.#resume = null; r(); }
    if (!this.#reported && this.ready) this.#report();
  }

  #report(): void {
    this.#reported = true;
    this.host.log.info({
      kind: 'cluster.partition_replayed', partition: this.partition, restored_seq: this.#restoredSeq,
      replayed: this.#replayed, target: this.target, ms: Date.now() - this.#takenAt,
    });
  }

  take(): void {
    if (this.owned) return;
    this.owned = true;
    this.target = Number.POSITIVE_INFINITY;
    this.#takenAt = Date.now();
    this.#restoredSeq = 0;
    this.#replayed = 0;
    this.#reported = false;
    const gen = ++this.#generation;
    void this.#run(gen);
  }

  release(): void {
    if (!this.owned) return;
    this.owned = false;
    this.#generation++;
    this.#stopCurrent?.();
  }

  async #run(gen: number): Promise<void> {
    const { js, jsm, log } = this.host;
    const subject = eventSubject(this.partition);
    let restoring = this.host.checkpoints !== null;
    while (gen === this.#generation) {
      try {
        if (restoring) {
          const seq = await this.host.checkpoints!.restore(this, (v) => this.host.versionAtLeast(v));
          restoring = false;
          if (gen !== this.#generation) return;
          if (seq !== null && seq > this.delivered) {
            this.#restoredSeq = seq;
            this.delivered = seq;
            this.settle();
          }
        }
        const last = await jsm.streams.getMessage(EVENT_STREAM, { last_by_subj: subject }).catch((err: unknown) => {
          if (/no message found/i.test(String((err as Error)?.message))) return null;
          throw err;
        });
        if (gen !== this.#generation) return;
        if (this.target === Number.POSITIVE_INFINITY) {
          this.target = last === null ? 0 : last.seq;
          this.settle();
        }
        const consumer = await js.consumers.get(EVENT_STREAM, { filter_subjects: subject, opt_start_seq: this.delivered + 1 });
        const messages = await consumer.consume({ max_messages: 1024 });
        this.#stopCurrent = () => { void messages.close(); };
        if (gen !== this.#generation) { await messages.close(); return; }
        for await (const m of messages) {
          if (gen !== this.#generation) break;
          await this.#handle(m);
        }
      } catch (err) {
        if (gen === this.#generation) log.warn({ kind: 'cluster.consumer_failed', partition: this.partition, err: String((err as Error)?.message ?? err) });
      }
      this.#stopCurrent = null;
      if (gen === this.#generation) await new Promise((r) => setTimeout(r, CLUSTER_CONSUMER_RETRY_MS));
    }
  }

  async #handle(m: JsMsg): Promise<void> {
    const seq = m.seq;
    if (seq <= this.delivered) return; // redelivered after a consumer was recreated
    if (seq <= this.target) this.#replayed++;
    const ev = decodeEvent(m.data);
    if (ev === null) { this.delivered = seq; this.settle(); return; }
    const front = this.host.front;
    if (ev.v > front.version) await this.host.versionAtLeast(ev.v);
    this.delivered = seq;
    // The owner's front routes the copy and writes its records for the keys of this
    // partition, under its registry (the one its shards have installed).
    const sink = new CopySink(this, seq, 0);
    const count = front.pushCopy(ev.e, ev.j, ev.t, seq, this.partition, this.host.partitions, sink);
    if (count < 0) {
      this.applyFailed(seq, { code: 'internal_error', detail: { message: `event ${ev.e} cannot be applied under registry v${front.version}` } });
      this.settle();
      return;
    }
    if (count === 0) { this.settle(); return; }
    sink.remaining = count;
    this.#inFlight.push(sink);
    if (this.#inFlight.length >= CLUSTER_FEED_IN_FLIGHT_MAX) await new Promise<void>((r) => { this.#resume = r; });
  }

  /** Test-mode reset: the shards were cleared; nothing before `seq` exists any more. */
  resetTo(seq: number): void {
    if (seq > this.floor) this.floor = seq;
    if (seq > this.delivered) this.delivered = seq;
    if (seq > this.applied) this.applied = seq;
  }
}

export class Feeder {
  readonly feeds: PartitionFeed[];
  /** Set by the node when checkpoints are on (--checkpoint-interval > 0). */
  checkpoints: Checkpoints | null = null;
  #versionWaiters: Array<{ v: number; resolve: () => void }> = [];

  constructor(readonly front: Front, readonly js: JetStreamClient, readonly jsm: JetStreamManager, readonly partitions: number, readonly log: Logger) {
    this.feeds = Array.from({ length: partitions }, (_, p) => new PartitionFeed(p, this));
  }

  /** Starts feeds of partitions now owned, stops the others. */
  setOwned(mine: readonly boolean[]): void {
    for (let p = 0; p < this.feeds.length; p++) {
      if (mine[p]) this.feeds[p].take();
      else this.feeds[p].release();
    }
  }

  isReady(partition: number): boolean {
    return this.feeds[partition].ready;
  }

  /** Resolves once the front has installed registry version `v` (a copy validated under it waits for it). */
  versionAtLeast(v: number): Promise<void> {
    if (this.front.version >= v) return Promise.resolve();
    return new Promise((resolve) => this.#versionWaiters.push({ v, resolve }));
  }

  /** Called after every registry install. */
  versionInstalled(): void {
    const now = this.front.version;
    const still: Array<{ v: number; resolve: () => void }> = [];
    for (const w of this.#versionWaiters) (w.v <= now ? w.resolve() : still.push(w));
    this.#versionWaiters = still;
  }

  stop(): void {
    for (const f of this.feeds) f.release();
  }
}
