/**
 * Partition checkpoints (docs/cluster.md "Checkpoints"): every --checkpoint-interval
 * the owner of a partition exports its entities with the stream sequence they
 * reflect into the JetStream object store `sf_ckpt` (object `p<N>`, replaced each
 * time); a node taking a partition over (or restarting) imports the latest one and
 * replays only the stream after its sequence.
 *
 * Why the object store rather than a local directory: the node that takes a
 * partition over is usually not the one that checkpointed it (the owner died), so
 * the checkpoint must live where every node can read it; the object store is on the
 * same NATS servers as the stream (same storage, same replication), chunked so
 * that a partition of any size fits under NATS's message limit.
 *
 * Consistency: the export items go to every local shard in the same event-loop
 * turn, right behind the feed's items (feed.ts enqueues synchronously after
 * advancing `delivered`), and each shard runs its batch items in order. So every
 * shard's export reflects exactly the partition's copies up to the `delivered`
 * read at enqueue time, which is the sequence recorded with the checkpoint.
 * Restoring it and consuming from seq + 1 therefore applies each copy once; and
 * since every entity carries the sequence of its last event (lastLsn), even a
 * partially imported checkpoint followed by a longer replay applies nothing twice.
 *
 * Object layout: [u32 LE parts] then per exporting shard [u32 LE bytes][lz4
 * snapshot body] (shard/partition_io.ts); the metadata carries the sequence and
 * the registry version so a restore can decide without downloading.
 */
import { performance } from 'node:perf_hooks';
import type { ObjectStore } from '@nats-io/obj';
import type { Front } from '../front/front';
import type { Logger } from '../log';
import { ITEM_EXPORT, ITEM_IMPORT, type ErrorPayload, type ItemOut, type NonPushItem } from '../protocol/messages';
import { CLUSTER_CHECKPOINT_CHUNK_BYTES, CLUSTER_CHECKPOINT_TIMEOUT_MS } from '../limits';
import { checkpointName } from './names';

/** Version of the object layout above (metadata `format`). */
export const CHECKPOINT_FORMAT = '1';

/** What a feed exposes to its checkpoints. */
export interface CheckpointedFeed {
  readonly partition: number;
  readonly owned: boolean;
  readonly ready: boolean;
  readonly delivered: number;
  /** Sequence of the newest checkpoint written or restored by this node. */
  checkpointSeq: number;
  /** Nothing at or below this sequence exists any more (test-mode reset). */
  readonly floor: number;
}

export function frameParts(parts: readonly Uint8Array[]): Uint8Array {
  let size = 4;
  for (const p of parts) size += 4 + p.byteLength;
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32LE(parts.length, 0);
  let at = 4;
  for (const p of parts) {
    out.writeUInt32LE(p.byteLength, at);
    out.set(p, at + 4);
    at += 4 + p.byteLength;
  }
  return out;
}

export function unframeParts(body: Uint8Array): Uint8Array[] {
  const b = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (b.length < 4) throw new Error('checkpoint too short');
  const n = b.readUInt32LE(0);
  const parts: Uint8Array[] = [];
  let at = 4;
  for (let i = 0; i < n; i++) {
    if (at + 4 > b.length) throw new Error('checkpoint truncated');
    const len = b.readUInt32LE(at);
    if (at + 4 + len > b.length) throw new Error('checkpoint truncated');
    parts.push(b.subarray(at + 4, at + 4 + len));
    at += 4 + len;
  }
  if (at !== b.length) throw new Error('checkpoint has trailing bytes');
  return parts;
}

/** The answer of one item run on one local shard. */
function onShard(front: Front, shard: number, item: NonPushItem): Promise<ItemOut> {
  return new Promise((resolve) => front.enqueue(shard, item, { done: (out) => resolve(out) }, 0));
}

const isError = (out: ItemOut): out is ErrorPayload => out !== null && typeof out === 'object' && !(out instanceof Uint8Array);

function timeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} timed out`)), CLUSTER_CHECKPOINT_TIMEOUT_MS); })])
    .finally(() => clearTimeout(timer));
}

export class Checkpoints {
  #timer: NodeJS.Timeout | null = null;
  #round: Promise<void> | null = null;

  constructor(readonly store: ObjectStore, readonly front: Front, readonly log: Logger, readonly intervalMs: number) {}

  /** Periodic checkpoints of the partitions owned and caught up (intervalMs 0: none). */
  start(feeds: readonly CheckpointedFeed[]): void {
    if (this.intervalMs <= 0) return;
    this.#timer = setInterval(() => {
      if (this.#round !== null) return; // the previous round is still writing
      this.#round = this.#checkpointAll(feeds).finally(() => { this.#round = null; });
    }, this.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  async #checkpointAll(feeds: readonly CheckpointedFeed[]): Promise<void> {
    for (const f of feeds) {
      // Only partitions with something new; a partition still replaying waits (its state is behind).
      if (!f.owned || !f.ready || f.delivered <= f.checkpointSeq || f.delivered <= f.floor) continue;
      try {
        await this.write(f);
      } catch (err) {
        this.log.warn({ kind: 'cluster.checkpoint_failed', partition: f.partition, err: String((err as Error)?.message ?? err) });
      }
    }
  }

  /** Exports the partition from every local shard and stores it. */
  async write(f: CheckpointedFeed): Promise<void> {
    const t0 = performance.now();
    // Read together, in the turn the exports are enqueued: see "Consistency" above.
    const seq = f.delivered;
    const version = this.front.version;
    const p = f.partition;
    const item: NonPushItem = { k: ITEM_EXPORT, p };
    const outs = await Promise.all(this.front.channels.map((_, s) => onShard(this.front, s, item)));
    const parts: Uint8Array[] = [];
    for (const out of outs) {
      if (!(out instanceof Uint8Array)) throw new Error(`export failed: ${isError(out) ? `${out.code}: ${out.detail.message}` : 'no body'}`);
      parts.push(out);
    }
    const exportMs = performance.now() - t0;
    // Never replace a newer checkpoint (a previous owner's late write, or the new owner's).
    const existing = await timeout(this.store.info(checkpointName(p)), 'checkpoint info');
    const stored = existing === null || existing.deleted ? 0 : Number(existing.metadata?.seq ?? 0);
    if (stored >= seq) { if (stored > f.checkpointSeq) f.checkpointSeq = stored; return; }
    const body = frameParts(parts);
    await timeout(this.store.putBlob({
      name: checkpointName(p),
      metadata: { seq: String(seq), registry_version: String(version), format: CHECKPOINT_FORMAT },
      options: { max_chunk_size: CLUSTER_CHECKPOINT_CHUNK_BYTES },
    }, body, { timeout: CLUSTER_CHECKPOINT_TIMEOUT_MS }), 'checkpoint put');
    f.checkpointSeq = seq;
    this.log.info({ kind: 'cluster.checkpoint_written', partition: p, seq, registry_version: version, bytes: body.byteLength, export_ms: Math.round(exportMs), ms: Math.round(performance.now() - t0) });
  }

  /**
   * Imports the partition's latest checkpoint into the local shards when it is newer
   * than what this node has (`delivered`). Returns its sequence, or null (none,
   * not newer, or the import failed: then the caller replays from `delivered`, which
   * is still exact thanks to per-entity sequences). Throws when NATS cannot be read
   * (the caller retries).
   */
  async restore(f: CheckpointedFeed, versionAtLeast: (v: number) => Promise<void>): Promise<number | null> {
    const t0 = performance.now();
    const p = f.partition;
    const info = await timeout(this.store.info(checkpointName(p)), 'checkpoint info');
    if (info === null || info.deleted || info.metadata?.format !== CHECKPOINT_FORMAT) return null;
    const seq = Number(info.metadata.seq);
    if (!Number.isSafeInteger(seq) || seq <= f.delivered || seq <= f.floor) return null;
    // Its entities are matched to the installed registry by signature: have at least its version.
    await versionAtLeast(Number(info.metadata.registry_version) || 0);
    const blob = await timeout(this.store.getBlob(checkpointName(p)), 'checkpoint get');
    if (blob === null) return null;
    let parts: Uint8Array[];
    try {
      parts = unframeParts(blob);
    } catch (err) {
      this.log.error({ kind: 'cluster.checkpoint_corrupt', partition: p, seq, err: String(err) });
      return null;
    }
    const item: NonPushItem = { k: ITEM_IMPORT, p, parts };
    const outs = await Promise.all(this.front.channels.map((_, s) => onShard(this.front, s, item)));
    const failed = outs.find(isError);
    if (failed !== undefined) {
      this.log.error({ kind: 'cluster.checkpoint_restore_failed', partition: p, seq, code: failed.code, message: failed.detail.message });
      return null;
    }
    f.checkpointSeq = seq;
    this.log.info({ kind: 'cluster.checkpoint_restored', partition: p, seq, bytes: blob.byteLength, ms: Math.round(performance.now() - t0) });
    return seq;
  }
}
