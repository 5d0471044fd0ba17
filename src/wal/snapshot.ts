/**
 * Snapshot files of one shard: `<dir>/<lsn 20 digits>.snap`, a 64-byte header and
 * an lz4 body (lz4-napi block format with its own u32 size prefix). The body is an
 * opaque Buffer from the caller (the shard's state encoding).
 *
 *   offset size field
 *   0      8    magic "SFSNAP01"
 *   8      4    u32 format version (1)
 *   12     4    u32 header bytes (64)
 *   16     8    u64 lsn               every WAL record with lsn <= this is in the body
 *   24     8    u64 registryVersion
 *   32     8    u64 createdAtMs
 *   40     8    u64 raw body bytes    (before compression)
 *   48     8    u64 compressed bytes  (what follows the header; file size - 64)
 *   56     4    u32 crc32c of the compressed body
 *   60     4    u32 crc32c of header bytes [0, 60)
 *
 * Write protocol: `<name>.tmp`, write, fsync, close, rename, fsync directory; only
 * then are older snapshots pruned, so a crash at any point leaves the previous
 * snapshot intact. Readers ignore `.tmp` files.
 */
import { strict as assert } from 'node:assert';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promises as fsp } from 'node:fs';
import { compress, compressSync, uncompressSync } from 'lz4-napi';
import {
  SNAPSHOT_FORMAT_VERSION,
  SNAPSHOT_HEADER_BYTES,
  SNAPSHOT_KEEP_DEFAULT,
  SNAPSHOT_MAGIC,
  TMP_SUFFIX,
} from './constants';
import { SfError } from '../errors';
import { crc32c } from './crc32c';
import { closeQuietly, fsyncDir, listLsnFiles, lsnFileName, unlinkQuietly, writeFully } from './file_ops';
import { realFs, type FsLike } from './fs_like';
import { readU64 } from './record';

export interface SnapshotMeta {
  lsn: number;
  registryVersion: number;
  createdAtMs: number;
}

export interface SnapshotWriteResult {
  path: string;
  /** File size (header + compressed body). */
  bytes: number;
  rawBytes: number;
  compressMs: number;
  writeMs: number;
  /** Older snapshots and tmp leftovers removed after the rename. */
  pruned: string[];
}

export interface SnapshotReadResult {
  meta: SnapshotMeta;
  body: Buffer;
  /** Newer snapshot files that failed verification, with the reason. */
  skipped: string[];
  /** File name of the snapshot returned. */
  name: string;
}

const HEADER_CRC_AT = 60;
const BODY_CRC_AT = 56;
const MAGIC_BYTES = Buffer.from(SNAPSHOT_MAGIC, 'latin1');
const SAFE_HIGH_WORD_MAX = 0x1fffff;

function writeU64(buf: Buffer, value: number, at: number): void {
  assert(Number.isSafeInteger(value), 'snapshot u64 field must be a safe integer');
  assert(value >= 0, 'snapshot u64 field must be >= 0');
  buf.writeUInt32LE(value >>> 0, at);
  buf.writeUInt32LE(Math.floor(value / 2 ** 32), at + 4);
}

function encodeHeader(meta: SnapshotMeta, rawBytes: number, compressed: Buffer): Buffer {
  const h = Buffer.alloc(SNAPSHOT_HEADER_BYTES);
  MAGIC_BYTES.copy(h, 0);
  h.writeUInt32LE(SNAPSHOT_FORMAT_VERSION, 8);
  h.writeUInt32LE(SNAPSHOT_HEADER_BYTES, 12);
  writeU64(h, meta.lsn, 16);
  writeU64(h, meta.registryVersion, 24);
  writeU64(h, meta.createdAtMs, 32);
  writeU64(h, rawBytes, 40);
  writeU64(h, compressed.length, 48);
  h.writeUInt32LE(crc32c(compressed), BODY_CRC_AT);
  h.writeUInt32LE(crc32c(h, 0, HEADER_CRC_AT), HEADER_CRC_AT);
  return h;
}

export interface SnapshotWriteOptions {
  fs?: FsLike;
  /** Snapshots to keep after this one is durable (default 2, minimum 1). */
  keep?: number;
  /** Clock for createdAtMs (tests). */
  nowMs?: number;
}

/** Writes a snapshot durably, then prunes older ones. Throws the fs error on failure (nothing half-written survives). */
export function writeSnapshot(
  dir: string,
  meta: { lsn: number; registryVersion: number },
  body: Buffer,
  opts: SnapshotWriteOptions = {},
): SnapshotWriteResult {
  const fs = opts.fs ?? realFs;
  const keep = opts.keep ?? SNAPSHOT_KEEP_DEFAULT;
  assert(Number.isInteger(keep), 'keep must be an integer');
  assert(keep >= 1, 'keep must be >= 1');
  fs.mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  const compressed = compressSync(body);
  const t1 = performance.now();
  const full: SnapshotMeta = { lsn: meta.lsn, registryVersion: meta.registryVersion, createdAtMs: opts.nowMs ?? Date.now() };
  const header = encodeHeader(full, body.length, compressed);
  const name = lsnFileName(meta.lsn, 'snap');
  const path = join(dir, name);
  const tmp = path + TMP_SUFFIX;
  const fd = fs.openSync(tmp, 'w');
  try {
    writeFully(fs, fd, header, header.length, 0);
    writeFully(fs, fd, compressed, compressed.length, header.length);
    fs.fsyncSync(fd);
  } catch (err) {
    closeQuietly(fs, fd);
    unlinkQuietly(fs, tmp);
    throw err;
  }
  fs.closeSync(fd);
  fs.renameSync(tmp, path);
  fsyncDir(fs, dir);
  const t2 = performance.now();
  const pruned = pruneSnapshots(fs, dir, keep);
  // A newer snapshot than this one means /reset forgot deleteAllSnapshots: lsns went back.
  assert(!pruned.includes(name), `snapshot ${name} is older than ${keep} existing ones`);
  return {
    path, bytes: header.length + compressed.length, rawBytes: body.length,
    compressMs: t1 - t0, writeMs: t2 - t1, pruned,
  };
}

/**
 * The same file, written without blocking the calling thread: lz4 runs on libuv's
 * threadpool and so do the tmp-file write and its fsync; only the rename, the
 * directory fsync and the pruning (all short) run on the caller's thread. Used by
 * shards for periodic snapshots so that a large snapshot does not stall pushes.
 * Real fs only (fault injection goes through the synchronous writeSnapshot).
 */
export async function writeSnapshotAsync(
  dir: string,
  meta: { lsn: number; registryVersion: number },
  body: Buffer,
  opts: { keep?: number } = {},
): Promise<SnapshotWriteResult> {
  const keep = opts.keep ?? SNAPSHOT_KEEP_DEFAULT;
  assert(Number.isInteger(keep) && keep >= 1, 'keep must be an integer >= 1');
  const t0 = performance.now();
  const compressed = await compress(body);
  const t1 = performance.now();
  const full: SnapshotMeta = { lsn: meta.lsn, registryVersion: meta.registryVersion, createdAtMs: Date.now() };
  const header = encodeHeader(full, body.length, compressed);
  const name = lsnFileName(meta.lsn, 'snap');
  const path = join(dir, name);
  const tmp = path + TMP_SUFFIX;
  const fh = await fsp.open(tmp, 'w');
  try {
    await fh.writev([header, compressed], 0);
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => {});
    unlinkQuietly(realFs, tmp);
    throw err;
  }
  await fh.close();
  realFs.renameSync(tmp, path);
  fsyncDir(realFs, dir);
  const t2 = performance.now();
  const pruned = pruneSnapshots(realFs, dir, keep);
  assert(!pruned.includes(name), `snapshot ${name} is older than ${keep} existing ones`);
  return { path, bytes: header.length + compressed.length, rawBytes: body.length, compressMs: t1 - t0, writeMs: t2 - t1, pruned };
}

/** Keeps the newest `keep` snapshots; removes older ones and every tmp leftover. */
function pruneSnapshots(fs: FsLike, dir: string, keep: number): string[] {
  const listing = listLsnFiles(fs, dir, 'snap');
  const doomed: string[] = [];
  for (let i = 0; i < listing.files.length - keep; i++) doomed.push(listing.files[i].name);
  for (const other of listing.others) if (other.endsWith(TMP_SUFFIX)) doomed.push(other);
  for (const name of doomed) fs.unlinkSync(join(dir, name));
  if (doomed.length > 0) fsyncDir(fs, dir);
  return doomed;
}

export type SnapshotVerdict =
  | { ok: true; meta: SnapshotMeta; rawBytes: number; compressedBytes: number }
  | { ok: false; reason: string };

/** Checks a snapshot file's header and body checksum (no decompression). */
export function verifySnapshotBytes(file: Buffer, expectedLsn: number): SnapshotVerdict {
  if (file.length < SNAPSHOT_HEADER_BYTES) return { ok: false, reason: 'short_header' };
  if (!file.subarray(0, 8).equals(MAGIC_BYTES)) return { ok: false, reason: 'bad_magic' };
  if (crc32c(file, 0, HEADER_CRC_AT) !== file.readUInt32LE(HEADER_CRC_AT)) return { ok: false, reason: 'header_crc_mismatch' };
  if (file.readUInt32LE(8) !== SNAPSHOT_FORMAT_VERSION) return { ok: false, reason: 'unknown_version' };
  if (file.readUInt32LE(12) !== SNAPSHOT_HEADER_BYTES) return { ok: false, reason: 'bad_header_length' };
  for (let at = 16; at < 56; at += 8) {
    if (file.readUInt32LE(at + 4) > SAFE_HIGH_WORD_MAX) return { ok: false, reason: 'u64_out_of_range' };
  }
  const meta: SnapshotMeta = { lsn: readU64(file, 16), registryVersion: readU64(file, 24), createdAtMs: readU64(file, 32) };
  if (meta.lsn !== expectedLsn) return { ok: false, reason: 'lsn_does_not_match_name' };
  const compressedBytes = readU64(file, 48);
  if (compressedBytes !== file.length - SNAPSHOT_HEADER_BYTES) return { ok: false, reason: 'length_mismatch' };
  if (crc32c(file, SNAPSHOT_HEADER_BYTES) !== file.readUInt32LE(BODY_CRC_AT)) return { ok: false, reason: 'body_crc_mismatch' };
  return { ok: true, meta, rawBytes: readU64(file, 40), compressedBytes };
}

/** Decompresses a verified snapshot body; null when lz4 or the raw length disagree. */
export function decodeSnapshotBody(file: Buffer, rawBytes: number): Buffer | null {
  let body: Buffer;
  try {
    body = uncompressSync(file.subarray(SNAPSHOT_HEADER_BYTES));
  } catch {
    return null;
  }
  return body.length === rawBytes ? body : null;
}

export interface SnapshotReadOptions {
  fs?: FsLike;
  /** Called for each snapshot that fails verification (newest first). */
  onSkip?: (name: string, reason: string) => void;
}

/** Newest snapshot whose header and body verify; corrupt ones are skipped and reported. null when none verifies. */
export function readNewestSnapshot(dir: string, opts: SnapshotReadOptions = {}): SnapshotReadResult | null {
  const fs = opts.fs ?? realFs;
  const files = listLsnFiles(fs, dir, 'snap').files;
  const skipped: string[] = [];
  for (let i = files.length - 1; i >= 0; i--) {
    const { name, lsn } = files[i];
    const file = fs.readFileSync(join(dir, name));
    const verdict = verifySnapshotBytes(file, lsn);
    let reason = verdict.ok ? '' : verdict.reason;
    let body: Buffer | null = null;
    if (verdict.ok) {
      body = decodeSnapshotBody(file, verdict.rawBytes);
      if (body === null) reason = 'decompress_failed';
    }
    if (verdict.ok && body !== null) return { meta: verdict.meta, body, skipped, name };
    skipped.push(`${name}: ${reason}`);
    if (opts.onSkip !== undefined) opts.onSkip(name, reason);
  }
  return null;
}

/**
 * For /reset: removes every snapshot and tmp leftover. Throws SfError
 * wal_truncate_failed (spec 4.6) when a file cannot be removed.
 */
export function deleteAllSnapshots(dir: string, opts: { fs?: FsLike } = {}): number {
  const fs = opts.fs ?? realFs;
  try {
    const listing = listLsnFiles(fs, dir, 'snap');
    const names = listing.files.map((f) => f.name).concat(listing.others.filter((n) => n.endsWith(TMP_SUFFIX)));
    for (const name of names) fs.unlinkSync(join(dir, name));
    if (names.length > 0) fsyncDir(fs, dir);
    return names.length;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new SfError('wal_truncate_failed', undefined, { reason: `${e.code ?? 'error'}: ${e.message}` });
  }
}
