/**
 * One channel per shard: the items of the current event-loop turn, in arrival
 * order, and who is waiting for each. A channel has at most one batch in flight;
 * items that arrive meanwhile form the next batch, so batches grow with load
 * (one piscina task per shard per turn at most, never one per request).
 */
import type Piscina from 'piscina';
import type { ErrorPayload, ShardBatchResult, ShardItem } from '../protocol/messages';

export interface Sink {
  done(out: string | ErrorPayload | null, tag: number): void;
}

export class ShardChannel {
  #items: ShardItem[] = [];
  #sinks: Sink[] = [];
  #tags: number[] = [];
  #inFlight = false;
  batchesSent = 0;
  itemsSent = 0;

  constructor(readonly shardId: number, readonly pool: Piscina, private readonly onFailure: (err: unknown) => void) {}

  enqueue(item: ShardItem, sink: Sink, tag: number): void {
    this.#items.push(item);
    this.#sinks.push(sink);
    this.#tags.push(tag);
  }

  get pending(): number {
    return this.#items.length;
  }

  get idle(): boolean {
    return !this.#inFlight && this.#items.length === 0;
  }

  flush(): void {
    if (this.#inFlight || this.#items.length === 0) return;
    const items = this.#items;
    const sinks = this.#sinks;
    const tags = this.#tags;
    this.#items = [];
    this.#sinks = [];
    this.#tags = [];
    this.#inFlight = true;
    this.batchesSent++;
    this.itemsSent += items.length;
    this.pool.run({ items }).then(
      (res: ShardBatchResult) => this.#complete(sinks, tags, res.outs),
      (err: unknown) => {
        this.onFailure(err);
        const out: ErrorPayload = { code: 'internal_error', detail: { message: 'shard worker failed; the request may or may not have been applied', reason: String((err as Error)?.message ?? err) } };
        this.#complete(sinks, tags, sinks.map(() => out));
      },
    );
  }

  #complete(sinks: Sink[], tags: number[], outs: ShardBatchResult['outs']): void {
    this.#inFlight = false;
    for (let i = 0; i < sinks.length; i++) sinks[i].done(outs[i], tags[i]);
    this.flush();
  }
}
