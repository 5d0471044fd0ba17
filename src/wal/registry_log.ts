/**
 * The coordinator's registry log: one append-only file of JSON entries framed like
 * WAL records (type JSON = 16, no lsn), fdatasync'd per append. The coordinator
 * applies a registration only after append() returned ("apply after fsync"), so a
 * failed append must leave no trace: the entry is cut off again on a failed write
 * *and* on a failed fdatasync.
 *
 * Recovery policy is stricter than the WAL's: a torn tail is cut off (the last
 * append was never acknowledged; loss.ts proves otherwise when a WAL record names
 * the version it held), but damage followed by valid entries throws
 * WalCorruptionError unless the operator accepted the loss (--accept-data-loss):
 * every entry is a whole registry state, so the ones around the damage still mean
 * what they meant, and the versions lost with it are what loss.ts reports.
 */
import { strict as assert } from 'node:assert';
import { dirname } from 'node:path';
import { constants as fsConstants } from 'node:fs';
import { FRAME_HEADER_BYTES, TMP_SUFFIX } from './constants';
import { closeQuietly, fsyncDir, unlinkQuietly, writeFully } from './file_ops';
import { realFs, type FsLike } from './fs_like';
import { JSON_CODEC, encodeJsonFrame } from './record';
import { CASE_END, CASE_OK, FrameProbe, RECOVERY_CASES, classifyAt } from './recover';
import { registryKnownOf, registryStatesOf, type RegistryLogFacts } from './loss';
import type { RegistryState } from '../registry/model';

/** Thrown when a log holds damage that recovery must not paper over. */
export class WalCorruptionError extends Error {
  readonly path: string;
  readonly offset: number;
  readonly kind: string;
  constructor(path: string, offset: number, kind: string, message: string) {
    super(message);
    this.name = 'WalCorruptionError';
    this.path = path;
    this.offset = offset;
    this.kind = kind;
  }
}

export interface RegistryLogOpenResult {
  log: RegistryLog;
  /** Valid entries in append order. */
  entries: unknown[];
  /** Bytes of torn tail cut off at open. */
  truncatedBytes: number;
  /** Damage before the end that was skipped (only with acceptDamage; the log was rewritten without it). */
  damage: RegistryLogDamage[];
}

/** Bytes before the end of a registry log that hold no valid entry. */
export interface RegistryLogDamage {
  offset: number;
  bytes: number;
  /** Case name of recover.ts, or malformed_json. */
  kind: string;
}

/** A scan that skips damage instead of throwing (what boot and wal-check judge, loss.ts). */
export interface RegistryLogLenientScan extends RegistryLogScan {
  damage: RegistryLogDamage[];
}

export interface RegistryLogScan {
  entries: unknown[];
  /** Offset of the first byte after the last valid entry. */
  validBytes: number;
  /** Case name of the bad tail ('' when the file ends cleanly). */
  tailKind: string;
}

const OPEN_FLAGS = fsConstants.O_RDWR | fsConstants.O_CREAT;

/** Reads the entries of a registry log image; throws WalCorruptionError on damage that is not a tail. */
export function scanRegistryLog(buf: Buffer, path: string): RegistryLogScan {
  const probe = new FrameProbe();
  const entries: unknown[] = [];
  let o = 0;
  for (;;) {
    classifyAt(buf, o, buf.length, JSON_CODEC, -1, probe);
    if (probe.caseId === CASE_END) return { entries, validBytes: o, tailKind: '' };
    const c = RECOVERY_CASES[probe.caseId];
    if (c.action === 'tail') return { entries, validBytes: o, tailKind: c.name };
    if (probe.caseId !== CASE_OK) {
      throw new WalCorruptionError(path, o, c.name, `registry log ${path}: ${c.name} at offset ${o} (case ${c.label}); run wal_check`);
    }
    const json = buf.toString('utf8', o + FRAME_HEADER_BYTES + 1, probe.next);
    try {
      entries.push(JSON.parse(json));
    } catch {
      throw new WalCorruptionError(path, o, 'malformed_json', `registry log ${path}: crc-valid entry at offset ${o} is not JSON`);
    }
    o = probe.next;
  }
}

/**
 * Reads every valid entry of a registry log image, skipping damage (recorded in
 * `damage`) the way WAL recovery skips it; a torn tail ends the scan. Never throws
 * on bad bytes.
 */
export function scanRegistryLogLenient(buf: Buffer): RegistryLogLenientScan {
  const probe = new FrameProbe();
  const entries: unknown[] = [];
  const damage: RegistryLogDamage[] = [];
  let o = 0;
  for (;;) {
    classifyAt(buf, o, buf.length, JSON_CODEC, -1, probe);
    if (probe.caseId === CASE_END) return { entries, validBytes: o, tailKind: '', damage };
    const c = RECOVERY_CASES[probe.caseId];
    if (c.action === 'tail') return { entries, validBytes: o, tailKind: c.name, damage };
    if (probe.caseId !== CASE_OK) damage.push({ offset: o, bytes: probe.next - o, kind: c.name });
    else {
      try {
        entries.push(JSON.parse(buf.toString('utf8', o + FRAME_HEADER_BYTES + 1, probe.next)));
      } catch {
        damage.push({ offset: o, bytes: probe.next - o, kind: 'malformed_json' });
      }
    }
    o = probe.next;
  }
}

/**
 * Reads the registry log at `path` without changing it (a missing file reads as
 * empty): its registry states and the facts boot and wal-check judge (loss.ts).
 */
export function readRegistryLogFacts(path: string, fs: FsLike = realFs): { facts: RegistryLogFacts; states: RegistryState[] } {
  let buf: Buffer;
  try {
    buf = fs.readFileSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    buf = Buffer.alloc(0);
  }
  const scan = scanRegistryLogLenient(buf);
  const states = registryStatesOf<RegistryState>(scan.entries);
  return { facts: { known: registryKnownOf(states), damage: scan.damage, tailBytes: buf.length - scan.validBytes, tailKind: scan.tailKind }, states };
}

export class RegistryLog {
  readonly path: string;
  readonly #fs: FsLike;
  #fd: number;
  /** Length of the whole entries in the file (the rollback point). */
  #size: number;
  /** A failed rollback left bytes past #size; cut them before the next append. */
  #tailDirty: boolean;

  private constructor(path: string, fs: FsLike, fd: number, size: number) {
    this.path = path;
    this.#fs = fs;
    this.#fd = fd;
    this.#size = size;
    this.#tailDirty = false;
  }

  /**
   * Opens the log for appends: a torn tail is cut off; damage before the end
   * throws WalCorruptionError, or with `acceptDamage` is skipped and the log
   * rewritten with the entries that survive (the operator accepted the loss).
   */
  static open(path: string, opts: { fs?: FsLike; acceptDamage?: boolean } = {}): RegistryLogOpenResult {
    const fs = opts.fs ?? realFs;
    const dir = dirname(path);
    fs.mkdirSync(dir, { recursive: true });
    let buf: Buffer;
    let existed = true;
    try {
      buf = fs.readFileSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      buf = Buffer.alloc(0);
      existed = false;
    }
    const scan = opts.acceptDamage === true ? scanRegistryLogLenient(buf) : { ...scanRegistryLog(buf, path), damage: [] };
    const fd = fs.openSync(path, OPEN_FLAGS, 0o644);
    try {
      if (!existed) fsyncDir(fs, dir);
      if (scan.validBytes < buf.length) {
        fs.ftruncateSync(fd, scan.validBytes);
        fs.fdatasyncSync(fd);
      }
    } catch (err) {
      closeQuietly(fs, fd);
      throw err;
    }
    const log = new RegistryLog(path, fs, fd, scan.validBytes);
    if (scan.damage.length > 0) log.rewrite(scan.entries);
    return { log, entries: scan.entries, truncatedBytes: buf.length - scan.validBytes, damage: scan.damage };
  }

  /** Bytes of whole entries. */
  get size(): number {
    return this.#size;
  }

  /** Appends one entry durably (write + fdatasync). On any failure nothing of it stays and the fs error is rethrown. */
  append(entry: unknown): void {
    assert(this.#fd >= 0, 'append after close');
    const frame = encodeJsonFrame(entry);
    if (this.#tailDirty) {
      this.#fs.ftruncateSync(this.#fd, this.#size);
      this.#tailDirty = false;
    }
    const at = this.#size;
    try {
      writeFully(this.#fs, this.#fd, frame, frame.length, at);
      this.#fs.fdatasyncSync(this.#fd);
    } catch (err) {
      this.#rollback(at);
      throw err;
    }
    this.#size = at + frame.length;
  }

  /** Atomically replaces the whole log (tmp + fsync + rename + directory fsync). Used by /reset and compaction. */
  rewrite(entries: unknown[]): void {
    assert(this.#fd >= 0, 'rewrite after close');
    const tmp = this.path + TMP_SUFFIX;
    const fd = this.#fs.openSync(tmp, 'w+');
    let size = 0;
    try {
      for (const entry of entries) {
        const frame = encodeJsonFrame(entry);
        writeFully(this.#fs, fd, frame, frame.length, size);
        size += frame.length;
      }
      this.#fs.fdatasyncSync(fd);
      this.#fs.renameSync(tmp, this.path);
    } catch (err) {
      closeQuietly(this.#fs, fd);
      unlinkQuietly(this.#fs, tmp);
      throw err;
    }
    // The fd follows the renamed inode: adopt it as the log's descriptor.
    closeQuietly(this.#fs, this.#fd);
    this.#fd = fd;
    this.#size = size;
    this.#tailDirty = false;
    fsyncDir(this.#fs, dirname(this.path));
  }

  close(): void {
    if (this.#fd < 0) return;
    const fd = this.#fd;
    this.#fd = -1;
    this.#fs.closeSync(fd);
  }

  #rollback(length: number): void {
    try {
      this.#fs.ftruncateSync(this.#fd, length);
    } catch {
      this.#tailDirty = true;
    }
  }
}
