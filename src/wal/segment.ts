/**
 * WalWriter: appends staged batches to lsn-named segment files of one shard.
 *
 *   <dir>/00000000000000000001.log   closed (fdatasync'd before the next one started)
 *   <dir>/00000000000000052000.log   closed
 *   <dir>/00000000000000103417.log   current: appended with one pwrite per batch
 *
 * A segment is named after the lsn of its first record and lsns only grow, so every
 * record of a segment is below the next segment's name; deleteSegmentsCoveredBy
 * relies on that and never scans a file.
 *
 * Every segment opens with a SEGMENT frame (record.ts) holding the highest lsn the
 * shard had before it (0: none). Names alone cannot tell a deleted segment from a
 * gap of lsns that went to other shards; the frame can: recovery (recover.ts
 * SegmentFact, loss.ts) proves a missing or cut segment when a segment follows an
 * lsn the WAL before it does not reach.
 *
 * Ordering rules:
 * - open() never appends to an existing file. The first append of a process starts
 *   a new segment, so new records are never written behind bytes this process has
 *   not verified (recovery truncates the old tail before the shard starts).
 * - A failed or short write is cut back to the previous length before the error is
 *   rethrown, so a half batch never survives. If that truncate fails too, the next
 *   append retries it; if it fails again the segment is abandoned (closed) and a new
 *   one is started; recovery then skips the bad closed tail (case "closed_segment_tail").
 * - Rotation fdatasyncs the old segment before the first write to the new one, so a
 *   power loss cannot keep a newer segment and lose the end of an older one.
 * - A failed fdatasync abandons the segment: after such a failure the kernel may
 *   have dropped the dirty pages while reporting later syncs as clean.
 */
import { strict as assert } from 'node:assert';
import { join } from 'node:path';
import { SfError } from '../errors';
import { FRAME_HEADER_BYTES, SEGMENT_HEADER_FRAME_BYTES } from './constants';
import { closeQuietly, fileSizeOrMissing, fsyncDir, listLsnFiles, lsnFileName, lsnOfFileName, RETIRED_SUFFIX, unlinkQuietly, writeFully } from './file_ops';
import nodeFs from 'node:fs';
import { realFs, type FsLike } from './fs_like';
import { encodeSegmentHeader, isSegmentHeaderOnly, type RecordEncoder } from './record';
import { TL, tlNow, tlSpan } from '../timeline';

export interface WalWriterOptions {
  /** Rotate before a batch that would make the current segment larger than this. */
  segmentBytesMax: number;
  fs?: FsLike;
  /** The next lsn the caller will append (RecoveryReport.nextLsnMin or above); appends below it are a bug. */
  nextLsnHint?: number;
  /**
   * The highest lsn of a record the WAL holds (RecoveryReport.lastLsn): the first
   * segment's SEGMENT frame names it. Default: the newest segment's name (lower,
   * so a later recovery can only prove less).
   */
  lastRecordLsn?: number;
  /**
   * Where the last record recovery read starts (RecoveryReport.lastRecordAt):
   * position() answers it until the first append, so a snapshot taken right
   * after recovery (a shutdown) gets a resume point too.
   */
  resumeFrom?: WalPosition | null;
}

const NO_FD = -1;

/**
 * A place in the WAL where replay after a snapshot may start instead of the start
 * of the segment holding the snapshot's lsn: the byte offset of a batch in the
 * segment named by its first lsn `segmentLsn`, whose first record has lsn `lsn`.
 * Records are in lsn order, so when `lsn` is in the snapshot every record before
 * the batch is too (recover.ts resumeAt).
 */
export interface WalPosition {
  segmentLsn: number;
  offset: number;
  lsn: number;
}

export class WalWriter {
  readonly dir: string;
  readonly #fs: FsLike;
  readonly #segmentBytesMax: number;
  #fd: number;
  #segmentName: string;
  /** Length of the whole records in the current segment (the rollback point). */
  #segmentBytes: number;
  /** A failed append left bytes past #segmentBytes that could not be cut off yet. */
  #tailDirty: boolean;
  #lastLsn: number;
  #bytesSinceSync: number;
  /** Bumped whenever the open segment changes: an async sync that finishes late must not account for another file. */
  #generation = 0;
  #asyncSyncInFlight = false;
  #closed: boolean;
  /** Offset and first lsn of the last batch appended to the current segment (offset -1: none yet). */
  #batchAt = -1;
  #batchLsn = 0;
  /** The recovered WAL's last record (WalWriterOptions.resumeFrom) until a segment is opened or the WAL reset. */
  #recovered: WalPosition | null = null;
  /** Highest lsn of a record written before the next segment (its SEGMENT frame); 0: none. */
  #prevLsn = 0;

  private constructor(dir: string, fs: FsLike, segmentBytesMax: number, lastLsn: number) {
    this.dir = dir;
    this.#fs = fs;
    this.#segmentBytesMax = segmentBytesMax;
    this.#fd = NO_FD;
    this.#generation++;
    this.#segmentName = '';
    this.#segmentBytes = 0;
    this.#batchAt = -1;
    this.#tailDirty = false;
    this.#lastLsn = lastLsn;
    this.#bytesSinceSync = 0;
    this.#closed = false;
  }

  /**
   * Opens the WAL directory (creating it). Run recoverWal first: the writer starts
   * a new segment at its first append and only looks at existing segments' names
   * and sizes (ones without a record are removed).
   */
  static open(dir: string, opts: WalWriterOptions): WalWriter {
    assert(Number.isSafeInteger(opts.segmentBytesMax), 'segmentBytesMax must be an integer');
    assert(opts.segmentBytesMax > FRAME_HEADER_BYTES, 'segmentBytesMax too small');
    const fs = opts.fs ?? realFs;
    fs.mkdirSync(dir, { recursive: true });
    // Segments without a record (a crash between create and first write, or a tail that
    // recovery cut to nothing but the SEGMENT frame) hold no record but their names would still order the log:
    // remove them so a lower lsn can never sort after a higher one.
    let lastLsn = -1;
    let removed = 0;
    for (const f of listLsnFiles(fs, dir, 'log').files) {
      if (!segmentHoldsRecords(fs, join(dir, f.name))) {
        fs.unlinkSync(join(dir, f.name));
        removed++;
      } else {
        // A non-empty segment named L may hold records from L up: new lsns must be above L.
        lastLsn = f.lsn;
      }
    }
    if (removed > 0) fsyncDir(fs, dir);
    const newestName = lastLsn;
    if (opts.nextLsnHint !== undefined) {
      assert(Number.isSafeInteger(opts.nextLsnHint), 'nextLsnHint must be an integer');
      lastLsn = Math.max(lastLsn, opts.nextLsnHint - 1);
    }
    const w = new WalWriter(dir, fs, opts.segmentBytesMax, lastLsn);
    w.#recovered = opts.resumeFrom ?? null;
    w.#prevLsn = Math.max(0, opts.lastRecordLsn ?? newestName);
    return w;
  }

  /** Bytes appended since the last successful fdatasync. */
  get bytesSinceSync(): number {
    return this.#bytesSinceSync;
  }
  /** Highest lsn appended (or the floor given at open). */
  get lastLsn(): number {
    return this.#lastLsn;
  }
  /** File name of the segment being appended, '' before the first append. */
  get segmentName(): string {
    return this.#segmentName;
  }
  get segmentBytes(): number {
    return this.#segmentBytes;
  }
  /** True while a failed append's bytes could not be truncated (see the header). */
  get tailDirty(): boolean {
    return this.#tailDirty;
  }

  /**
   * Appends one staged batch (whole frames) with one write. Throws the fs error on
   * failure, after cutting the segment back so no part of the batch survives.
   */
  append(buf: Buffer, firstLsn: number, lastLsn: number): void {
    assert(!this.#closed, 'append after close');
    assert(buf.length > FRAME_HEADER_BYTES, 'append of an empty batch');
    assert(firstLsn <= lastLsn, 'firstLsn > lastLsn');
    assert(firstLsn > this.#lastLsn, 'lsns must grow across appends');
    if (this.#tailDirty) this.#repairTail();
    const full = this.#segmentBytes > SEGMENT_HEADER_FRAME_BYTES && this.#segmentBytes + buf.length > this.#segmentBytesMax;
    if (this.#fd === NO_FD || full) {
      const t0 = tlNow();
      this.#rotate(firstLsn);
      tlSpan(TL.WAL_ROLL, t0, firstLsn, 0);
    }
    const at = this.#segmentBytes;
    try {
      writeFully(this.#fs, this.#fd, buf, buf.length, at);
    } catch (err) {
      this.#rollback(at);
      throw err;
    }
    this.#segmentBytes = at + buf.length;
    this.#bytesSinceSync += buf.length;
    this.#lastLsn = lastLsn;
    this.#prevLsn = lastLsn;
    this.#batchAt = at;
    this.#batchLsn = firstLsn;
  }

  /**
   * The last batch appended to the current segment, as a snapshot's WAL resume
   * point; null before the first append to it. Taken when a snapshot begins (the
   * shard applies each batch in the turn it appends it), that batch and every
   * record before it are in the snapshot.
   */
  position(): WalPosition | null {
    if (this.#batchAt < 0) return this.#segmentName === '' ? this.#recovered : null;
    return { segmentLsn: lsnOfFileName(this.#segmentName, 'log'), offset: this.#batchAt, lsn: this.#batchLsn };
  }

  /** append() of everything staged in `enc`. */
  appendStaged(enc: RecordEncoder): void {
    assert(enc.count > 0, 'appendStaged of an empty encoder');
    this.append(enc.bytes(), enc.firstLsn, enc.lastLsn);
  }

  /** fdatasync of the current segment. On failure the segment is abandoned (see header). */
  /**
   * fdatasync on libuv's threadpool, so the shard thread keeps applying batches
   * while the disk flushes (batch mode: acks do not wait for it). At most one is
   * in flight. Returns false when there is nothing to sync. Only for the real fs:
   * an injected FsLike is synced synchronously so that faults stay deterministic.
   */
  syncAsync(done: (err: NodeJS.ErrnoException | null) => void): boolean {
    if (this.#closed || this.#fd === NO_FD || this.#bytesSinceSync === 0 || this.#asyncSyncInFlight) return false;
    if (this.#fs !== realFs) {
      try { this.sync(); done(null); } catch (err) { done(err as NodeJS.ErrnoException); }
      return true;
    }
    const fd = this.#fd;
    const gen = this.#generation;
    const bytes = this.#bytesSinceSync;
    this.#asyncSyncInFlight = true;
    nodeFs.fdatasync(fd, (err) => {
      this.#asyncSyncInFlight = false;
      if (gen !== this.#generation || this.#closed) { done(null); return; } // rotated: the old segment was synced on the way out
      if (err) { this.#abandonSegment(); done(err); return; }
      this.#bytesSinceSync = Math.max(0, this.#bytesSinceSync - bytes);
      done(null);
    });
    return true;
  }

  sync(): void {
    assert(!this.#closed, 'sync after close');
    if (this.#fd === NO_FD) {
      this.#bytesSinceSync = 0;
      return;
    }
    try {
      this.#fs.fdatasyncSync(this.#fd);
    } catch (err) {
      this.#abandonSegment();
      throw err;
    }
    this.#bytesSinceSync = 0;
  }

  /**
   * Deletes closed segments whose every record has lsn <= `lsn` (a durable snapshot
   * covers them). The current segment, and the newest one when none is open, are
   * kept because nothing bounds their records from above. Returns the count deleted.
   * `retire` (a shard on the real fs: file_ops retireFile) takes each segment's name
   * instead of a blocking unlink, and retired leftovers of a crash too.
   */
  deleteSegmentsCoveredBy(lsn: number, retire: ((name: string) => void) | null = null): number {
    assert(!this.#closed, 'deleteSegmentsCoveredBy after close');
    assert(Number.isSafeInteger(lsn), 'lsn must be an integer');
    const listing = listLsnFiles(this.#fs, this.dir, 'log');
    const files = listing.files;
    let deleted = 0;
    for (let i = 0; i + 1 < files.length; i++) {
      if (files[i].name === this.#segmentName) break;
      if (files[i + 1].lsn - 1 > lsn) break;
      if (retire !== null) retire(files[i].name);
      else this.#fs.unlinkSync(join(this.dir, files[i].name));
      deleted++;
    }
    if (retire !== null) {
      // Leftovers of a crash between a retire's rename and its unlink.
      for (const other of listing.others) if (other.endsWith(RETIRED_SUFFIX)) retire(other);
    } else if (deleted > 0) fsyncDir(this.#fs, this.dir);
    return deleted;
  }

  /**
   * For /reset: deletes every segment; the next append starts a fresh one. lsns may
   * start again from any value afterwards. Throws SfError wal_truncate_failed.
   */
  truncateAll(): void {
    assert(!this.#closed, 'truncateAll after close');
    if (this.#fd !== NO_FD) closeQuietly(this.#fs, this.#fd);
    this.#fd = NO_FD;
    this.#generation++;
    this.#segmentName = '';
    this.#segmentBytes = 0;
    this.#batchAt = -1;
    this.#recovered = null;
    this.#tailDirty = false;
    this.#bytesSinceSync = 0;
    this.#lastLsn = -1;
    this.#prevLsn = 0;
    try {
      for (const f of listLsnFiles(this.#fs, this.dir, 'log').files) this.#fs.unlinkSync(join(this.dir, f.name));
      fsyncDir(this.#fs, this.dir);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new SfError('wal_truncate_failed', undefined, { reason: `${e.code ?? 'error'}: ${e.message}` });
    }
  }

  /** Syncs (when anything is unsynced) and closes. Errors propagate after the fd is closed. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#fd === NO_FD) return;
    const fd = this.#fd;
    this.#fd = NO_FD;
    try {
      if (this.#bytesSinceSync > 0) this.#fs.fdatasyncSync(fd);
      this.#bytesSinceSync = 0;
    } finally {
      this.#fs.closeSync(fd);
    }
  }

  #rotate(firstLsn: number): void {
    if (this.#fd !== NO_FD) {
      const fd = this.#fd;
      try {
        if (this.#bytesSinceSync > 0) this.#fs.fdatasyncSync(fd);
      } catch (err) {
        this.#abandonSegment();
        throw err;
      }
      this.#bytesSinceSync = 0;
      this.#fd = NO_FD;
      this.#generation++;
      this.#fs.closeSync(fd);
    }
    this.#createSegment(firstLsn);
  }

  #createSegment(firstLsn: number): void {
    assert.equal(this.#fd, NO_FD, 'a segment is still open');
    const name = lsnFileName(firstLsn, 'log');
    const path = join(this.dir, name);
    let fd: number;
    try {
      fd = this.#fs.openSync(path, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // An abandoned segment whose unlink failed (see #abandonSegment): it holds no record.
      assert(!segmentHoldsRecords(this.#fs, path), `segment ${name} exists and holds records: lsn reused`);
      fd = this.#fs.openSync(path, 'w');
    }
    // The SEGMENT frame goes in before any record (it is synced with the first batch's
    // fdatasync); a crash that tears it leaves a tail recovery cuts to nothing.
    const header = encodeSegmentHeader(this.#prevLsn);
    try {
      writeFully(this.#fs, fd, header, header.length, 0);
      fsyncDir(this.#fs, this.dir);
    } catch (err) {
      closeQuietly(this.#fs, fd);
      unlinkQuietly(this.#fs, path);
      throw err;
    }
    this.#fd = fd;
    this.#generation++;
    this.#segmentName = name;
    this.#segmentBytes = header.length;
    this.#batchAt = -1;
    this.#recovered = null;
  }

  /** Cuts the segment back to `length` after a failed write; remembers a failure. */
  #rollback(length: number): void {
    try {
      this.#fs.ftruncateSync(this.#fd, length);
    } catch {
      this.#tailDirty = true;
    }
  }

  /**
   * Retries a failed rollback. When it fails again the segment is abandoned, after
   * an fdatasync so that its whole records (already acknowledged) are durable; if
   * that sync fails too, the error goes to the caller of append.
   */
  #repairTail(): void {
    assert(this.#tailDirty, 'no dirty tail to repair');
    assert(this.#fd !== NO_FD, 'a dirty tail needs an open segment');
    try {
      this.#fs.ftruncateSync(this.#fd, this.#segmentBytes);
      this.#tailDirty = false;
      return;
    } catch {
      // Fall through: fence the segment off.
    }
    try {
      if (this.#bytesSinceSync > 0) this.#fs.fdatasyncSync(this.#fd);
      this.#bytesSinceSync = 0;
    } finally {
      this.#abandonSegment();
    }
  }

  /**
   * Closes the current segment without syncing; the next append starts a new one.
   * A segment without one whole record (only its SEGMENT frame) is removed, so that its name (the lsn of a
   * batch that failed, which the caller may assign again) is free.
   */
  #abandonSegment(): void {
    if (this.#fd !== NO_FD) closeQuietly(this.#fs, this.#fd);
    if (this.#segmentName !== '' && this.#segmentBytes <= SEGMENT_HEADER_FRAME_BYTES) unlinkQuietly(this.#fs, join(this.dir, this.#segmentName));
    this.#fd = NO_FD;
    this.#generation++;
    this.#segmentName = '';
    this.#segmentBytes = 0;
    this.#batchAt = -1;
    this.#tailDirty = false;
  }
}

/**
 * False for a segment that holds no record: missing, empty, or only its SEGMENT
 * frame. Anything else (records, or bytes recovery has not classified) holds records.
 */
export function segmentHoldsRecords(fs: FsLike, path: string): boolean {
  const size = fileSizeOrMissing(fs, path);
  if (size <= 0) return false;
  if (size !== SEGMENT_HEADER_FRAME_BYTES) return true;
  return !isSegmentHeaderOnly(fs.readFileSync(path));
}
