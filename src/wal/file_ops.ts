/**
 * Small file helpers shared by the segment writer, recovery, snapshots and the
 * registry log: lsn-named files, directory listing, full writes, directory fsync.
 */
import { strict as assert } from 'node:assert';
import nodeFs, { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { LSN_DIGITS, TMP_SUFFIX } from './constants';
import type { FsLike } from './fs_like';

/** Suffix of a file being removed off the caller's thread (retireFile): a `.tmp` name, which every reader ignores. */
export const RETIRED_SUFFIX = '.retired' + TMP_SUFFIX;

/**
 * Removes `dir/name` without blocking on the unlink (real fs only): the file is
 * renamed out of every listing now (a metadata change, tens of microseconds), then
 * unlinked and the directory fsynced on libuv's threadpool. Unlinking a large file
 * frees its pages and extents in the calling thread: 8-13 ms for a 64 MB WAL segment
 * on this machine's ext4, a pause a shard thread would take after every snapshot.
 * A crash before the unlink leaves a `.retired.tmp` file, which the next pass
 * removes (unlinkRetired); a file that reappears (no fsync yet) was only ever an
 * old, covered one. A name that is already retired is only unlinked.
 */
export function retireFile(dir: string, name: string): void {
  let path = join(dir, name);
  if (!name.endsWith(RETIRED_SUFFIX)) {
    nodeFs.renameSync(path, path + RETIRED_SUFFIX);
    path += RETIRED_SUFFIX;
  }
  void fsp.unlink(path)
    .then(() => fsp.open(dir, 'r'))
    .then(async (d) => { try { await d.sync(); } finally { await d.close(); } })
    .catch(() => { /* gone already, or the next pass retries */ });
}

const LSN_NAME = /^(\d{20})\.([a-z]+)$/;

/** `<lsn zero-padded to 20 digits>.<ext>`: lexical order equals numeric order. */
export function lsnFileName(lsn: number, ext: string): string {
  assert(Number.isSafeInteger(lsn), 'lsn must be a safe integer');
  assert(lsn >= 0, 'lsn must be >= 0');
  return String(lsn).padStart(LSN_DIGITS, '0') + '.' + ext;
}

/** The lsn of an lsn-named file with extension `ext`, or -1 when the name does not match. */
export function lsnOfFileName(name: string, ext: string): number {
  const m = LSN_NAME.exec(name);
  if (m === null || m[2] !== ext) return -1;
  const lsn = Number(m[1]);
  return Number.isSafeInteger(lsn) ? lsn : -1;
}

export interface DirListing {
  /** lsn-named files with the wanted extension, ascending by lsn. */
  files: Array<{ name: string; lsn: number }>;
  /** Every other entry (tmp leftovers, foreign files), sorted. */
  others: string[];
}

/** Lists `dir`; a missing directory lists as empty. Other I/O errors throw. */
export function listLsnFiles(fs: FsLike, dir: string, ext: string): DirListing {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { files: [], others: [] };
    throw err;
  }
  const files: Array<{ name: string; lsn: number }> = [];
  const others: string[] = [];
  for (const name of names) {
    const lsn = lsnOfFileName(name, ext);
    if (lsn >= 0) files.push({ name, lsn });
    else others.push(name);
  }
  files.sort((a, b) => a.lsn - b.lsn);
  others.sort();
  return { files, others };
}

/** Fills `buf` from `fd` at `position` (short reads continue); returns the bytes read, fewer only at end of file. */
export function readAt(fs: FsLike, fd: number, buf: Uint8Array, position: number): number {
  let got = 0;
  while (got < buf.length) {
    const n = fs.readSync(fd, buf, got, buf.length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

/** The bytes of `path` from `position` to its end; null when the file is shorter than `position`. */
export function readFileFrom(fs: FsLike, path: string, position: number): Buffer | null {
  const fd = fs.openSync(path, 'r');
  try {
    const size = fs.statSync(path).size;
    if (size < position) return null;
    const buf = Buffer.allocUnsafe(size - position);
    return buf.subarray(0, readAt(fs, fd, buf, position));
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Writes all of `buf[0, length)` at `position`, looping over short writes. A write
 * that makes no progress throws EIO rather than spinning. Errors propagate as is;
 * the caller owns the rollback.
 */
export function writeFully(fs: FsLike, fd: number, buf: Uint8Array, length: number, position: number): void {
  assert(length <= buf.length, 'writeFully: length past the buffer');
  assert(position >= 0, 'writeFully: negative position');
  let done = 0;
  while (done < length) {
    const n = fs.writeSync(fd, buf, done, length - done, position + done);
    if (n <= 0) {
      const err: NodeJS.ErrnoException = new Error('EIO: write made no progress');
      err.code = 'EIO';
      err.syscall = 'write';
      throw err;
    }
    done += n;
  }
}

/**
 * fsync of a directory, so that a created, renamed or deleted entry is itself
 * durable (fdatasync of a file does not cover its directory entry).
 */
export function fsyncDir(fs: FsLike, dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Shortens the file at `path` to `length` bytes and makes that durable. */
export function truncateFile(fs: FsLike, path: string, length: number): void {
  assert(length >= 0, 'truncateFile: negative length');
  const fd = fs.openSync(path, 'r+');
  try {
    fs.ftruncateSync(fd, length);
    fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Closes `fd`, ignoring errors: used on paths that are already failing. */
export function closeQuietly(fs: FsLike, fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // The fd is gone either way; the error that brought us here is the one to report.
  }
}

/** Unlinks `path`, ignoring errors (cleanup of tmp files after a failure). */
export function unlinkQuietly(fs: FsLike, path: string): void {
  try {
    fs.unlinkSync(path);
  } catch {
    // Best effort: a leftover tmp file is ignored by every reader.
  }
}

/** Size of `path`, or -1 when it does not exist. */
export function fileSizeOrMissing(fs: FsLike, path: string): number {
  try {
    return fs.statSync(path).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return -1;
    throw err;
  }
}
