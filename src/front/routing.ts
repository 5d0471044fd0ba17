/**
 * The front's routing: for a validated push
 * which shards it goes to and the PUSH record (wal/push_record.ts) each gets, once
 * per push: the chains run once (EventPlan.feedRows), each feed's
 * key is built and hashed once, and each target shard gets one record holding
 * only its own feeds: key bytes and the values its tables' features read. The
 * shard applies that record as is (and logs it byte for byte).
 *
 * One instance per front; the scratch arrays are reused by every push (the front
 * is one thread and a push is routed and written in one synchronous step).
 */
import type { ColumnWriter, EventPlan, TableFeed } from '../registry/compile';
import { hashKey, partitionOfHash } from '../registry/key';
import type { ShardChannel, Sink } from './channel';
import type { Row } from '../types';
import type { PushFrameWriter } from '../wal/push_record';
import { KEY_BYTES_MAX } from '../limits';

/** How many shards a target mask names. */
export function targetCount(mask: number): number {
  let n = 0;
  for (let m = mask; m !== 0; m &= m - 1) n++;
  return n;
}

/**
 * The shards a local push goes to: those of its feeds (`keyed`, a mask), or, when no
 * feed keys it, one shard of `n` chosen by `lsn` (every acknowledged push is logged
 * by at least one shard).
 */
export function targetsOf(keyed: number, lsn: number, n: number): number {
  return keyed !== 0 ? keyed : 1 << (n > 1 ? lsn % n : 0);
}

export class PushRoute {
  /** Per feed of the last route(): its row (null: filtered out), key, and target shard (-1: none). */
  rows: ReadonlyArray<Row | null> = [];
  readonly keys: Array<string | null> = [];
  readonly shards: number[] = [];
  /** Bit s set: shard s has at least one feed of the push. */
  mask = 0;
  /** dispatch(): where each shard's record began in its writer. */
  readonly #starts: number[] = [];

  /**
   * Runs the chains and keys of `plan` over `row` for `n` shards. With `partition`
   * >= 0 (cluster mode, a copy of partition `partition` of `partitions`) only keys
   * of that partition count. Returns the index of a feed whose key is over
   * KEY_BYTES_MAX (nothing may be recorded then), or -1.
   */
  route(plan: EventPlan, row: Row, n: number, partition = -1, partitions = 0): number {
    const feeds = plan.feeds;
    const keys = this.keys;
    const shards = this.shards;
    keys.length = feeds.length;
    shards.length = feeds.length;
    this.mask = 0;
    if (feeds.length === 0) { this.rows = []; return -1; }
    const rows = plan.feedRows(row);
    this.rows = rows;
    for (let i = 0; i < feeds.length; i++) {
      const r = rows[i];
      const key = r === null ? null : feeds[i].key(r);
      keys[i] = key;
      shards[i] = -1;
      if (key === null) continue;
      if (key.length * 3 > KEY_BYTES_MAX && Buffer.byteLength(key) > KEY_BYTES_MAX) return i;
      const h = n > 1 || partition >= 0 ? hashKey(key) : 0;
      if (partition >= 0 && partitionOfHash(h, partitions) !== partition) continue;
      const s = n > 1 ? h % n : 0;
      shards[i] = s;
      this.mask |= 1 << s;
    }
    return -1;
  }

  /**
   * Writes the PUSH record of every shard in `mask` for the last route() and
   * enqueues `sink` once on each of those channels. Returns how many shards, or -1
   * when a record would pass RECORD_BYTES_MAX (nothing is written or enqueued then).
   */
  dispatch(channels: readonly ShardChannel[], mask: number, plan: EventPlan, lsn: number, t: number, version: number, dedupe: string | null, sink: Sink): number {
    const starts = this.#starts;
    for (let s = 0; s < channels.length; s++) {
      if ((mask & (1 << s)) === 0) continue;
      const w = channels[s].pushWriter;
      starts[s] = w.pos;
      if (this.write(w, s, plan, lsn, t, version, dedupe) < 0) {
        dropFrames(channels, mask, s, starts);
        return -1;
      }
    }
    let targets = 0;
    for (let s = 0; s < channels.length; s++) {
      if ((mask & (1 << s)) === 0) continue;
      channels[s].enqueuePush(sink);
      targets++;
    }
    return targets;
  }

  /** Writes the PUSH record of shard `s` for the last route(): its feeds, in feed order. Its bytes, or -1 (PushFrameWriter.end). */
  write(w: PushFrameWriter, s: number, plan: EventPlan, lsn: number, t: number, version: number, dedupe: string | null): number {
    w.begin(lsn, t, version, plan.index, dedupe);
    const feeds = plan.feeds;
    const shards = this.shards;
    for (let i = 0; i < feeds.length; i++) {
      if (shards[i] !== s) continue;
      writeFeed(w, feeds[i], this.keys[i]!, this.rows[i]!);
    }
    return w.end();
  }
}

/**
 * A push refused while its records were written (one would pass RECORD_BYTES_MAX):
 * drops the records already written for it, those of the shards in `mask` below
 * `failed`, each from where it started (`starts[s]`).
 */
export function dropFrames(channels: readonly ShardChannel[], mask: number, failed: number, starts: ArrayLike<number>): void {
  for (let s = 0; s < failed; s++) if ((mask & (1 << s)) !== 0) channels[s].pushWriter.dropFrom(starts[s]);
}

function writeFeed(w: PushFrameWriter, feed: TableFeed, key: string, r: Row): void {
  const table = feed.table;
  w.feed(table.index, key);
  (table.columnWriter ??= columnWriter(table.columns))(r, w);
}

/**
 * One generated function per table: a property load per column with the name
 * inlined (V8 caches each one), instead of a loop of keyed loads, which measured
 * about twice as slow on the fraud workload (bench/push_path.ts).
 */
function columnWriter(columns: readonly string[]): ColumnWriter {
  const body = columns.map((c) => `w.value(r[${JSON.stringify(c)}]);`).join('\n');
  return new Function('r', 'w', body) as ColumnWriter;
}
