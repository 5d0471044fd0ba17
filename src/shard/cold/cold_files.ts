/**
 * The on-disk cold store of one shard (`<data>/shard-<i>/cold/`): frozen entities
 * leave memory for append-only segment files; only a compact index per table
 * (key_index.ts) stays in memory. docs/durability.md "Cold store" has the why.
 *
 *   <id>.seg   records, appended:  [u32 len][u32 store][u32 crc32c][u16 key bytes][key utf-8][frozen entity]
 *                                   len = whole record; crc over everything after the crc field
 *
 * A cache, not a source of truth: every entity in it is also covered by the WAL
 * and the snapshots (a snapshot reads cold entities back from here), so the
 * directory is emptied at boot and never fsynced. Each table's entries form one
 * DiskColdStore (store id in the record), so dropping a table drops its entries
 * without touching the files.
 *
 * Writes are batched: `set` queues the entity (it stays readable from memory) and
 * `flush` writes the whole queue with one positional write per segment it spans,
 * then points the index at it. A failed write (ENOSPC, EIO) keeps the queued
 * entities in memory (nothing is lost, memory just is not given back) and the
 * next flush writes them again.
 *
 * Space: a thaw or overwrite leaves a dead record behind. Each segment counts its
 * live bytes; `compactStep` copies the live records of the emptiest closed segment
 * (below COLD_COMPACT_LIVE_RATIO live) to the active one, a bounded number of bytes
 * per call, and deletes it. Disk use therefore stays within about
 * 1 / COLD_COMPACT_LIVE_RATIO of the live bytes plus one segment.
 */
import { closeSync, mkdirSync, readdirSync, readSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../log';
import { COLD_COMPACT_LIVE_RATIO, COLD_FLUSH_BYTES, COLD_READ_CHUNK_BYTES, COLD_SEGMENT_BYTES, COLD_WRITE_ERROR_LOG_INTERVAL_MS } from '../../limits';
import { crc32c } from '../../wal/crc32c';
import { realFs, type FsLike } from '../../wal/fs_like';
import { readAt } from '../../wal/file_ops';
import type { ColdStore } from './cold_store';
import { hashKey, KeyIndex } from './key_index';

const HEADER_BYTES = 14;

interface Segment {
  id: number;
  fd: number;
  path: string;
  /** Bytes written (the next record goes here). */
  bytes: number;
  /** Bytes of records the index points at. */
  live: number;
}

/** A record waiting for the next flush: a new entity (fromSeg 0) or a live record compaction moves. */
interface Pending {
  store: DiskColdStore;
  key: string;
  data: Buffer;
  fromSeg: number;
  fromOff: number;
}

/** One record as read back. */
export interface ColdRecord {
  seg: number;
  off: number;
  len: number;
  store: number;
  key: string;
  data: Buffer;
}

export class ColdFileStats {
  writes = 0;
  writeBytes = 0;
  writeErrors = 0;
  reads = 0;
  /** Records whose checksum or layout did not match (the entity is lost from the cache; see docs). */
  corrupt = 0;
  compactedSegments = 0;
  compactedBytes = 0;
}

export class ColdFiles {
  readonly stats = new ColdFileStats();
  readonly #segs = new Map<number, Segment>();
  #active: Segment | null = null;
  #nextSeg = 1;
  #nextStore = 1;
  readonly #stores = new Map<number, DiskColdStore>();
  #pending: Pending[] = [];
  #pendingBytes = 0;
  /** Segment being compacted and the offset reached. */
  #compacting: { seg: Segment; at: number } | null = null;
  /** performance.now() of the last write-failure line (the first failure is always logged). */
  #errorLoggedMs = Number.NEGATIVE_INFINITY;

  /** Entities whose write failed: written again by the next flush (they stay readable from memory meanwhile). */
  #retry: Pending[] = [];

  private constructor(readonly dir: string, readonly log: Logger | null, readonly segmentBytes: number, readonly fs: FsLike) {}

  /** Opens the shard's cold directory, emptied: what it held is covered by the WAL and snapshots. `fs`: writes go through it (fault injection in tests). */
  static open(dir: string, log: Logger | null = null, segmentBytes = COLD_SEGMENT_BYTES, fs: FsLike = realFs): ColdFiles {
    mkdirSync(dir, { recursive: true });
    for (const name of readdirSync(dir)) if (name.endsWith('.seg') || name.endsWith('.seg.tmp')) unlinkSync(join(dir, name));
    return new ColdFiles(dir, log, segmentBytes, fs);
  }

  newStore(): DiskColdStore {
    const s = new DiskColdStore(this, this.#nextStore++);
    this.#stores.set(s.id, s);
    return s;
  }

  /** The store is gone (its table was replaced): its records are dead space. */
  forget(store: DiskColdStore): void {
    this.#stores.delete(store.id);
  }

  /** Bytes in segment files. */
  get diskBytes(): number {
    let n = 0;
    for (const s of this.#segs.values()) n += s.bytes;
    return n;
  }

  get liveBytes(): number {
    let n = 0;
    for (const s of this.#segs.values()) n += s.live;
    return n;
  }

  get segments(): number {
    return this.#segs.size;
  }

  queue(p: Pending): void {
    this.#pending.push(p);
    this.#pendingBytes += HEADER_BYTES + p.key.length * 3 + p.data.length;
    if (this.#pendingBytes >= COLD_FLUSH_BYTES) this.flush();
  }

  /** Writes every queued record; false when a write failed (the queued entities stay in memory). */
  flush(): boolean {
    let pending = this.#pending;
    if (this.#retry.length > 0) {
      // Earlier failures first, those still waiting (not thawed or replaced since).
      pending = [...this.#retry.filter((p) => p.store.waiting(p)), ...pending];
      this.#retry = [];
    }
    if (pending.length === 0) return true;
    this.#pending = [];
    this.#pendingBytes = 0;
    let from = 0;
    try {
      while (from < pending.length) from = this.#writeSpan(pending, from);
      return true;
    } catch (err) {
      this.stats.writeErrors++;
      // New entities that did not land stay in memory and are tried again; failed moves stay where they are.
      for (let i = from; i < pending.length; i++) if (pending[i].fromSeg === 0) this.#retry.push(pending[i]);
      const now = performance.now();
      if (now - this.#errorLoggedMs >= COLD_WRITE_ERROR_LOG_INTERVAL_MS) {
        this.#errorLoggedMs = now;
        this.log?.error({ kind: 'shard.cold_store_write_failed', dir: this.dir, err: String(err), records: pending.length - from }, 'cold store write failed; these entities stay in memory');
      }
      return false;
    }
  }

  /** Encodes and writes pending[from..] that fit the active segment (one write); returns the next index. */
  #writeSpan(pending: Pending[], from: number): number {
    let seg = this.#active;
    if (seg === null || seg.bytes >= this.segmentBytes) seg = this.#rotate();
    const encoded: Buffer[] = [];
    const lens: number[] = [];
    let total = 0;
    let i = from;
    for (; i < pending.length; i++) {
      const p = pending[i];
      const rec = encodeRecord(p.store.id, p.key, p.data);
      // A record bigger than a segment still gets a segment of its own.
      if (encoded.length > 0 && seg.bytes + total + rec.length > this.segmentBytes) break;
      encoded.push(rec);
      lens.push(rec.length);
      total += rec.length;
    }
    const buf = encoded.length === 1 ? encoded[0] : Buffer.concat(encoded, total);
    let done = 0;
    while (done < total) done += this.fs.writeSync(seg.fd, buf, done, total - done, seg.bytes + done);
    this.stats.writes++;
    this.stats.writeBytes += total;
    let off = seg.bytes;
    seg.bytes += total;
    for (let k = 0; k < encoded.length; k++) {
      const p = pending[from + k];
      if (p.store.landed(p, seg.id, off, lens[k])) seg.live += lens[k];
      off += lens[k];
    }
    return i;
  }

  #rotate(): Segment {
    const id = this.#nextSeg++;
    const path = join(this.dir, `${String(id).padStart(8, '0')}.seg`);
    const seg: Segment = { id, fd: this.fs.openSync(path, 'w+'), path, bytes: 0, live: 0 };
    this.#segs.set(id, seg);
    this.#active = seg;
    return seg;
  }

  release(segId: number, len: number): void {
    const seg = this.#segs.get(segId);
    if (seg !== undefined) seg.live -= len;
  }

  /** The record at (seg, off, len), checked; null when the bytes are not a valid record. */
  read(segId: number, off: number, len: number): ColdRecord | null {
    const seg = this.#segs.get(segId);
    if (seg === undefined) return null;
    const buf = Buffer.allocUnsafe(len);
    const got = readAt(realFs, seg.fd, buf, off);
    this.stats.reads++;
    const rec = got === len ? decodeRecord(buf, 0, segId, off) : null;
    if (rec === null) this.#corrupt(segId, off);
    return rec;
  }

  #corrupt(segId: number, off: number): void {
    this.stats.corrupt++;
    this.log?.error({ kind: 'shard.cold_store_corrupt', dir: this.dir, segment: segId, offset: off });
  }

  /**
   * Every record of `storeId`, segment by segment in order (live or not: the caller
   * asks its index). Segments are looked up as the scan reaches them, so records
   * written meanwhile are seen too (possibly twice, which callers tolerate).
   */
  *records(storeId: number): Generator<ColdRecord> {
    for (let id = 1; id < this.#nextSeg; id++) {
      let at = 0;
      for (;;) {
        const seg = this.#segs.get(id);
        if (seg === undefined || at + HEADER_BYTES > seg.bytes) break;
        const chunk = this.#readChunk(seg, at);
        if (chunk === null) break;
        let p = 0;
        while (p + HEADER_BYTES <= chunk.length) {
          const len = chunk.readUInt32LE(p);
          if (len < HEADER_BYTES || p + len > chunk.length) break;
          if (chunk.readUInt32LE(p + 4) === storeId) {
            const rec = decodeRecord(chunk, p, id, at + p);
            if (rec === null) this.#corrupt(id, at + p);
            else yield rec;
          }
          p += len;
        }
        if (p === 0) break; // unreadable: stop this segment
        at += p;
      }
    }
  }

  /** Bytes from `at`: at least one whole record when one starts there, up to COLD_READ_CHUNK_BYTES otherwise. */
  #readChunk(seg: Segment, at: number): Buffer | null {
    const head = Buffer.allocUnsafe(4);
    if (readSync(seg.fd, head, 0, 4, at) < 4) return null;
    const first = head.readUInt32LE(0);
    if (first < HEADER_BYTES || at + first > seg.bytes) { this.#corrupt(seg.id, at); return null; }
    const n = Math.min(seg.bytes - at, Math.max(first, COLD_READ_CHUNK_BYTES));
    const buf = Buffer.allocUnsafe(n);
    const got = readAt(realFs, seg.fd, buf, at);
    this.stats.reads++;
    return got === n ? buf : buf.subarray(0, got);
  }

  /**
   * Reclaims dead space, up to about `budgetBytes` of reading per call: deletes
   * closed segments with nothing live, and moves the live records of the emptiest
   * closed segment under COLD_COMPACT_LIVE_RATIO to the active one. Returns bytes read.
   */
  compactStep(budgetBytes: number): number {
    for (const seg of [...this.#segs.values()]) {
      if (seg !== this.#active && seg.live <= 0 && this.#compacting?.seg !== seg) this.#delete(seg);
    }
    if (this.#compacting === null) {
      let best: Segment | null = null;
      for (const seg of this.#segs.values()) {
        if (seg === this.#active || seg.bytes === 0 || seg.live / seg.bytes >= COLD_COMPACT_LIVE_RATIO) continue;
        if (best === null || seg.live / seg.bytes < best.live / best.bytes) best = seg;
      }
      if (best === null) return 0;
      this.#compacting = { seg: best, at: 0 };
    }
    const c = this.#compacting;
    let read = 0;
    while (read < budgetBytes && c.at + HEADER_BYTES <= c.seg.bytes) {
      const chunk = this.#readChunk(c.seg, c.at);
      if (chunk === null) { c.at = c.seg.bytes; break; }
      let p = 0;
      while (p + HEADER_BYTES <= chunk.length) {
        const len = chunk.readUInt32LE(p);
        if (len < HEADER_BYTES || p + len > chunk.length) break;
        const store = this.#stores.get(chunk.readUInt32LE(p + 4));
        if (store !== undefined) {
          const rec = decodeRecord(chunk, p, c.seg.id, c.at + p);
          if (rec !== null && store.liveAt(rec.key, rec.seg, rec.off)) {
            this.#pending.push({ store, key: rec.key, data: Buffer.from(rec.data), fromSeg: rec.seg, fromOff: rec.off });
            this.#pendingBytes += len;
          }
        }
        p += len;
      }
      if (p === 0) { c.at = c.seg.bytes; break; }
      c.at += p;
      read += p;
    }
    if (!this.flush()) return read; // moves failed: the records stay where they are
    if (c.at + HEADER_BYTES > c.seg.bytes) {
      this.#compacting = null;
      this.stats.compactedSegments++;
      this.stats.compactedBytes += c.seg.bytes;
      if (c.seg.live <= 0) this.#delete(c.seg);
    }
    return read;
  }

  #delete(seg: Segment): void {
    this.#segs.delete(seg.id);
    try {
      closeSync(seg.fd);
      unlinkSync(seg.path);
    } catch (err) {
      this.log?.warn({ kind: 'shard.cold_store_unlink_failed', path: seg.path, err: String(err) });
    }
  }

  /** Deletes every segment and forgets every store's entries (reset). */
  clear(): void {
    this.#pending = [];
    this.#retry = [];
    this.#pendingBytes = 0;
    this.#compacting = null;
    for (const seg of [...this.#segs.values()]) this.#delete(seg);
    this.#active = null;
    for (const s of this.#stores.values()) s.forgetAll();
  }

  close(): void {
    for (const seg of this.#segs.values()) {
      try { closeSync(seg.fd); } catch { /* closing */ }
    }
    this.#segs.clear();
  }
}

function encodeRecord(store: number, key: string, data: Buffer): Buffer {
  const keyBytes = Buffer.byteLength(key);
  const len = HEADER_BYTES + keyBytes + data.length;
  const rec = Buffer.allocUnsafe(len);
  rec.writeUInt32LE(len, 0);
  rec.writeUInt32LE(store, 4);
  rec.writeUInt16LE(keyBytes, 12);
  rec.write(key, HEADER_BYTES, 'utf8');
  data.copy(rec, HEADER_BYTES + keyBytes);
  rec.writeUInt32LE(crc32c(rec, 12, len), 8);
  return rec;
}

function decodeRecord(buf: Buffer, at: number, seg: number, off: number): ColdRecord | null {
  const len = buf.readUInt32LE(at);
  if (len < HEADER_BYTES || at + len > buf.length) return null;
  if (crc32c(buf, at + 12, at + len) !== buf.readUInt32LE(at + 8)) return null;
  const keyBytes = buf.readUInt16LE(at + 12);
  if (HEADER_BYTES + keyBytes > len) return null;
  return {
    seg, off, len, store: buf.readUInt32LE(at + 4),
    key: buf.toString('utf8', at + HEADER_BYTES, at + HEADER_BYTES + keyBytes),
    data: buf.subarray(at + HEADER_BYTES + keyBytes, at + len),
  };
}

/** One table's cold entities in the shard's cold files. */
export class DiskColdStore implements ColdStore {
  #index = new KeyIndex();
  /** Entities queued for the next flush, or kept in memory after a failed write. */
  readonly #resident = new Map<string, Buffer>();
  #residentBytes = 0;
  /** The record the last successful #locate read (its data is what get returns). */
  #rec: ColdRecord | null = null;

  constructor(readonly files: ColdFiles, readonly id: number) {}

  get size(): number {
    return this.#resident.size + this.#index.count;
  }

  /** The index slot of `key`, or -1; leaves the record read in #rec. */
  #locate(key: string): number {
    if (this.#index.count === 0) return -1;
    hashKey(key);
    this.#rec = null;
    return this.#index.find((seg, off, len) => {
      const rec = this.files.read(seg, off, len);
      if (rec === null || rec.key !== key || rec.store !== this.id) return false;
      this.#rec = rec;
      return true;
    });
  }

  has(key: string): boolean {
    return this.#resident.has(key) || this.#locate(key) >= 0;
  }

  get(key: string): Buffer | undefined {
    const r = this.#resident.get(key);
    if (r !== undefined) return r;
    return this.#locate(key) >= 0 ? this.#rec!.data : undefined;
  }

  take(key: string): Buffer | undefined {
    const r = this.#dropResident(key);
    const slot = this.#locate(key);
    if (slot < 0) return r;
    const data = this.#rec!.data;
    this.files.release(this.#index.seg(slot), this.#index.len(slot));
    this.#index.removeAt(slot);
    return r ?? data;
  }

  #dropResident(key: string): Buffer | undefined {
    const r = this.#resident.get(key);
    if (r !== undefined) {
      this.#resident.delete(key);
      this.#residentBytes -= r.length + key.length * 2;
    }
    return r;
  }

  set(key: string, frozen: Buffer): void {
    // One copy per key: an older record on disk is dead from now on.
    this.take(key);
    this.#resident.set(key, frozen);
    this.#residentBytes += frozen.length + key.length * 2;
    this.files.queue({ store: this, key, data: frozen, fromSeg: 0, fromOff: 0 });
  }

  delete(key: string): boolean {
    return this.take(key) !== undefined;
  }

  /**
   * Called by ColdFiles once `p` is on disk at (seg, off, len). Returns whether the
   * record is live (the index now points at it).
   */
  landed(p: Pending, seg: number, off: number, len: number): boolean {
    if (p.fromSeg === 0) {
      if (!this.waiting(p)) return false; // thawed or replaced meanwhile
      // set() took any older copy out of the index, so the key is not there.
      this.#dropResident(p.key);
      hashKey(p.key);
      this.#index.insert(seg, off, len);
      return true;
    }
    hashKey(p.key);
    const slot = this.#index.slotAt(p.fromSeg, p.fromOff);
    if (slot < 0) return false; // thawed meanwhile
    this.files.release(p.fromSeg, this.#index.len(slot));
    this.#index.move(slot, seg, off, len);
    return true;
  }

  /** Whether a queued new entity is still the one waiting for a write (not thawed or replaced since). */
  waiting(p: Pending): boolean {
    return this.#resident.get(p.key) === p.data;
  }

  /** Whether the index points at (seg, off) for `key` (no disk read). */
  liveAt(key: string, seg: number, off: number): boolean {
    hashKey(key);
    return this.#index.slotAt(seg, off) >= 0;
  }

  *entries(): IterableIterator<[string, Buffer]> {
    // Snapshot of the resident keys: entities may thaw while the caller iterates.
    for (const key of [...this.#resident.keys()]) {
      const buf = this.#resident.get(key);
      if (buf !== undefined) yield [key, buf];
    }
    for (const rec of this.files.records(this.id)) {
      if (this.#resident.has(rec.key)) continue; // a newer version is queued (yielded above)
      if (this.liveAt(rec.key, rec.seg, rec.off)) yield [rec.key, rec.data];
    }
  }

  *keys(): IterableIterator<string> {
    for (const [key] of this.entries()) yield key;
  }

  clear(): void {
    this.forgetAll();
  }

  /** Every entry goes; its records become dead space. */
  forgetAll(): void {
    this.#index.forEach((seg, _off, len) => this.files.release(seg, len));
    this.#index = new KeyIndex();
    this.#resident.clear();
    this.#residentBytes = 0;
  }

  memoryBytes(): number {
    return this.#index.bytes + this.#residentBytes;
  }

  /** Bytes of the index alone (bench: the per-entity memory cost of a cold entity). */
  get indexBytes(): number {
    return this.#index.bytes;
  }
}

