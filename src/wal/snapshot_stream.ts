/**
 * A snapshot file written while its body is being produced (file version 2,
 * snapshot.ts): the caller appends body bytes, which fill a block of
 * SNAPSHOT_BLOCK_BYTES; each full block is lz4-compressed at once, on the caller's
 * thread, and its compressed bytes are written at their place in the `.tmp` file
 * on libuv's threadpool while the caller goes on. finish() writes the last block
 * and the header, then follows the write protocol of writeSnapshot (fsync, rename,
 * directory fsync, prune).
 *
 * Why: a periodic snapshot of 1M entities is ~96 MB of body. Built whole before
 * compression, its parts, the joined body and the compressed copy (~230 MB that
 * live for a second) drove major GCs into the shard's slices, and the crc32c of
 * the compressed body alone blocked the shard ~30 ms. Here the shard thread copies
 * bytes into one reused block and, per SNAPSHOT_BLOCK_BYTES, compresses it and
 * takes its crc (~0.25 ms together, inside the job's slice, which counts it). lz4
 * runs inline rather than on the threadpool: on two cores, up to three lz4
 * threads running beside the shard thread took its CPU in the middle of its
 * slices (measured: slices of 20-78 ms wall with threadpool lz4 under load). A
 * producer that runs ahead of the disk waits (`full`, whenRoom) instead of
 * holding more compressed blocks.
 */
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { compressSync } from 'lz4-napi';
import { SNAPSHOT_BLOCK_BYTES, SNAPSHOT_BLOCKS_IN_FLIGHT, SNAPSHOT_BLOCKS_KEPT } from '../limits';
import { SNAPSHOT_HEADER_BYTES, SNAPSHOT_KEEP_DEFAULT, TMP_SUFFIX } from './constants';
import { lsnFileName, retireFile, unlinkQuietly } from './file_ops';
import { realFs } from './fs_like';
import { BlockChain, pruneSnapshots, type SnapshotWriteResult } from './snapshot';

/**
 * The thread's snapshot blocks, made on first use and reused by every later
 * snapshot (a stream holds one while it fills it). More than SNAPSHOT_BLOCKS_KEPT
 * at once (never in practice) are plain allocations, dropped when released.
 */
class BlockPool {
  readonly #free: Buffer[] = [];

  take(): Buffer {
    // allocUnsafeSlow: a block of its own, never a slice of Node's shared pool.
    return this.#free.pop() ?? Buffer.allocUnsafeSlow(SNAPSHOT_BLOCK_BYTES);
  }

  release(b: Buffer): void {
    if (this.#free.length < SNAPSHOT_BLOCKS_KEPT) this.#free.push(b);
  }
}

const pool = new BlockPool();

export class SnapshotStream {
  readonly path: string;
  readonly #tmp: string;
  readonly #dir: string;
  readonly #meta: { lsn: number; registryVersion: number };
  readonly #keep: number;
  readonly #nowMs: () => number;
  readonly #chain = new BlockChain();
  #fh: FileHandle | null = null;
  /** The last block's write (blocks are written in order, each after the one before). */
  #tail: Promise<void>;
  #block: Buffer | null = null;
  #fill = 0;
  /** Compressed blocks whose write has not completed. */
  #writing = 0;
  #pos = SNAPSHOT_HEADER_BYTES;
  #failed: unknown = null;
  #aborted = false;
  readonly #waiters: Array<() => void> = [];
  /** Raw body bytes appended so far. */
  rawBytes = 0;
  /** Time spent compressing blocks and taking their crc, on the calling thread. */
  packMs = 0;

  /** `opts.nowMs`: the clock of the header's createdAtMs (a server passes its server time). */
  constructor(dir: string, meta: { lsn: number; registryVersion: number }, opts: { keep?: number; nowMs?: () => number } = {}) {
    this.#dir = dir;
    this.#meta = meta;
    this.#keep = opts.keep ?? SNAPSHOT_KEEP_DEFAULT;
    this.#nowMs = opts.nowMs ?? Date.now;
    this.path = join(dir, lsnFileName(meta.lsn, 'snap'));
    // Not writeSnapshot's tmp name: a shutdown snapshot taken at the same LSN while an
    // aborted stream still has writes in flight must not share (and then rename) its file.
    this.#tmp = `${this.path}.stream${TMP_SUFFIX}`;
    this.#tail = fsp.open(this.#tmp, 'w').then((fh) => { this.#fh = fh; }, (err) => this.#fail(err));
  }

  /** True while SNAPSHOT_BLOCKS_IN_FLIGHT compressed blocks wait for the disk: the producer should wait (whenRoom). */
  get full(): boolean {
    return this.#writing >= SNAPSHOT_BLOCKS_IN_FLIGHT && this.#failed === null;
  }

  /** Runs `f` on a later event-loop turn once a block's write completed (at once if none waits). */
  whenRoom(f: () => void): void {
    if (this.full) this.#waiters.push(f);
    else setImmediate(f);
  }

  /** Appends body bytes (copied: the caller may reuse `bytes`). After a failure they are dropped; finish() reports it. */
  write(bytes: Uint8Array): void {
    this.rawBytes += bytes.length;
    if (this.#failed !== null) return;
    let from = 0;
    while (from < bytes.length) {
      if (this.#block === null) this.#block = pool.take();
      const n = Math.min(bytes.length - from, SNAPSHOT_BLOCK_BYTES - this.#fill);
      this.#block.set(bytes.subarray(from, from + n), this.#fill);
      this.#fill += n;
      from += n;
      if (this.#fill === SNAPSHOT_BLOCK_BYTES) this.#pack();
    }
  }

  /** Compresses the current block now and queues its write after every block before it. */
  #pack(): void {
    const block = this.#block;
    const n = this.#fill;
    this.#block = null;
    this.#fill = 0;
    if (block === null) return;
    if (n === 0 || this.#failed !== null) { pool.release(block); return; }
    const t0 = performance.now();
    let out: Buffer;
    try {
      out = compressSync(block.subarray(0, n));
    } catch (err) {
      this.#fail(err);
      return;
    } finally {
      pool.release(block);
    }
    const frame = this.#chain.frame(n, out);
    const at = this.#pos;
    this.#pos += frame.length + out.length;
    this.packMs += performance.now() - t0;
    this.#writing++;
    this.#tail = this.#tail
      .then(async () => { if (this.#failed === null && this.#fh !== null) await this.#fh.writev([frame, out], at); })
      .catch((err) => this.#fail(err))
      .finally(() => {
        this.#writing--;
        if (!this.full) for (const f of this.#waiters.splice(0)) setImmediate(f);
      });
  }

  #fail(err: unknown): void {
    if (this.#failed === null) this.#failed = err;
    for (const f of this.#waiters.splice(0)) setImmediate(f);
  }

  /**
   * The last block, the header, fsync, rename, directory fsync, prune. Throws the
   * first error of any step; the tmp file is then removed (nothing half-written survives).
   */
  async finish(): Promise<SnapshotWriteResult> {
    this.#pack();
    await this.#tail;
    const fh = this.#fh;
    try {
      if (this.#failed !== null) throw this.#failed;
      if (fh === null) throw new Error('snapshot stream: the tmp file is not open');
      const t1 = performance.now();
      const header = this.#chain.header({ lsn: this.#meta.lsn, registryVersion: this.#meta.registryVersion, createdAtMs: this.#nowMs() });
      await fh.write(header, 0, header.length, 0);
      await fh.sync();
      await fh.close();
      this.#fh = null;
      // On the threadpool too: a directory fsync can take milliseconds on a busy disk.
      await fsp.rename(this.#tmp, this.path);
      const d = await fsp.open(this.#dir, 'r');
      try { await d.sync(); } finally { await d.close(); }
      const t2 = performance.now();
      // Older snapshots (tens of MB) leave without a blocking unlink on this thread.
      const pruned = pruneSnapshots(realFs, this.#dir, this.#keep, (n) => retireFile(this.#dir, n));
      const name = lsnFileName(this.#meta.lsn, 'snap');
      if (pruned.includes(name)) throw new Error(`snapshot ${name} is older than ${this.#keep} existing ones`);
      return {
        path: this.path, bytes: SNAPSHOT_HEADER_BYTES + this.#chain.bytes, rawBytes: this.#chain.rawBytes,
        compressMs: this.packMs, writeMs: t2 - t1, pruned,
      };
    } catch (err) {
      await this.#discard();
      throw err;
    }
  }

  /** Drops the snapshot (an install or reset made it obsolete): closes and removes the tmp file once pending blocks settle. */
  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#fail(new Error('snapshot aborted'));
    if (this.#block !== null) { pool.release(this.#block); this.#block = null; }
    void this.#tail.then(() => this.#discard());
  }

  async #discard(): Promise<void> {
    const fh = this.#fh;
    this.#fh = null;
    if (fh !== null) await fh.close().catch(() => {});
    unlinkQuietly(realFs, this.#tmp);
  }
}
