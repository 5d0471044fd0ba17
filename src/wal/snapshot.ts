/**
 * Snapshot files of one shard: `<dir>/<lsn 20 digits>.snap`, a 64-byte header and
 * an lz4-compressed body. The body is an opaque byte string from the caller (the
 * shard's state encoding).
 *
 *   offset size field
 *   0      8    magic "SFSNAP01"
 *   8      4    u32 file version (1)
 *   12     4    u32 header bytes (64)
 *   16     8    u64 lsn               every WAL record with lsn <= this is in the body
 *   24     8    u64 registryVersion
 *   32     8    u64 createdAtMs
 *   40     8    u64 raw body bytes    (before compression)
 *   48     8    u64 compressed bytes  (what follows the header; file size - 64)
 *   56     4    u32 crc32c of the compressed bytes
 *   60     4    u32 crc32c of header bytes [0, 60)
 *
 * What follows the header: blocks of at most SNAPSHOT_BLOCK_BYTES raw body bytes,
 * each [u32 LE n][n bytes: lz4-napi block, with its own u32 raw size prefix]; the
 * raw body is the blocks' raw bytes one after another. Blocks let a writer
 * compress and write the body as it is produced (snapshot_stream.ts) instead of
 * building it whole first.
 *
 * Write protocol: `<name>.tmp`, write, fsync, close, rename, fsync directory; only
 * then are older snapshots pruned, so a crash at any point leaves the previous
 * snapshot intact. Readers ignore `.tmp` files.
 */
import { strict as assert } from 'node:assert';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { compressSync, uncompressSync } from 'lz4-napi';
import { SNAPSHOT_BLOCK_BYTES, SNAPSHOT_KEEP_DEFAULT } from '../limits';
import {
  SNAPSHOT_FORMAT_VERSION,
  SNAPSHOT_HEADER_BYTES,
  SNAPSHOT_MAGIC,
  TMP_SUFFIX,
} from './constants';
import { SfError } from '../errors';
import { crc32c } from './crc32c';
import { closeQuietly, fsyncDir, listLsnFiles, lsnFileName, RETIRED_SUFFIX, unlinkQuietly, writeFully } from './file_ops';
import { realFs, type FsLike } from './fs_like';
import { readU64, u64Safe, writeU64 } from './u64';

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
/** writeU64 of a header field, which must be a safe integer >= 0. */
function writeField(buf: Buffer, value: number, at: number): void {
  assert(Number.isSafeInteger(value), 'snapshot u64 field must be a safe integer');
  assert(value >= 0, 'snapshot u64 field must be >= 0');
  writeU64(buf, value, at);
}

/**
 * The bytes after the header as they are produced, block by block: each block's
 * length frame, the running crc32c and the byte counts the header records. Shared by the synchronous writer and the streamed one.
 */
export class BlockChain {
  crc = 0;
  /** Bytes after the header so far (frames and blocks). */
  bytes = 0;
  rawBytes = 0;

  /** Takes the next compressed block (of `raw` body bytes); returns its u32 length frame, to be written just before it. */
  frame(raw: number, packed: Uint8Array): Buffer {
    const f = Buffer.allocUnsafe(4);
    f.writeUInt32LE(packed.length, 0);
    this.crc = crc32c(packed, 0, packed.length, crc32c(f, 0, 4, this.crc));
    this.bytes += 4 + packed.length;
    this.rawBytes += raw;
    return f;
  }

  /** The header of the file these blocks make. */
  header(meta: SnapshotMeta): Buffer {
    const h = Buffer.alloc(SNAPSHOT_HEADER_BYTES);
    MAGIC_BYTES.copy(h, 0);
    h.writeUInt32LE(SNAPSHOT_FORMAT_VERSION, 8);
    h.writeUInt32LE(SNAPSHOT_HEADER_BYTES, 12);
    writeField(h, meta.lsn, 16);
    writeField(h, meta.registryVersion, 24);
    writeField(h, meta.createdAtMs, 32);
    writeField(h, this.rawBytes, 40);
    writeField(h, this.bytes, 48);
    h.writeUInt32LE(this.crc, BODY_CRC_AT);
    h.writeUInt32LE(crc32c(h, 0, HEADER_CRC_AT), HEADER_CRC_AT);
    return h;
  }
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
  const chain = new BlockChain();
  const parts: Buffer[] = [];
  for (let at = 0; at < body.length; at += SNAPSHOT_BLOCK_BYTES) {
    const raw = body.subarray(at, Math.min(body.length, at + SNAPSHOT_BLOCK_BYTES));
    const packed = compressSync(raw);
    parts.push(chain.frame(raw.length, packed), packed);
  }
  const t1 = performance.now();
  const header = chain.header({ lsn: meta.lsn, registryVersion: meta.registryVersion, createdAtMs: opts.nowMs ?? Date.now() });
  const name = lsnFileName(meta.lsn, 'snap');
  const path = join(dir, name);
  const tmp = path + TMP_SUFFIX;
  const fd = fs.openSync(tmp, 'w');
  try {
    writeFully(fs, fd, header, header.length, 0);
    let pos = header.length;
    for (const part of parts) {
      writeFully(fs, fd, part, part.length, pos);
      pos += part.length;
    }
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
    path, bytes: header.length + chain.bytes, rawBytes: body.length,
    compressMs: t1 - t0, writeMs: t2 - t1, pruned,
  };
}

/**
 * Keeps the newest `keep` snapshots; removes older ones and every tmp leftover.
 * `retire` (the streamed writer: retireFile) takes each older snapshot and retired
 * leftover instead of a blocking unlink. A leftover that is gone by the time it is
 * unlinked (a retired file whose unlink just landed) is not an error.
 */
export function pruneSnapshots(fs: FsLike, dir: string, keep: number, retire: ((name: string) => void) | null = null): string[] {
  const listing = listLsnFiles(fs, dir, 'snap');
  const doomed: string[] = [];
  for (let i = 0; i < listing.files.length - keep; i++) doomed.push(listing.files[i].name);
  for (const other of listing.others) if (other.endsWith(TMP_SUFFIX)) doomed.push(other);
  let synced = 0;
  for (const name of doomed) {
    if (retire !== null && (name.endsWith(RETIRED_SUFFIX) || !name.endsWith(TMP_SUFFIX))) { retire(name); continue; }
    unlinkIfThere(fs, join(dir, name));
    synced++;
  }
  if (synced > 0) fsyncDir(fs, dir);
  return doomed;
}

function unlinkIfThere(fs: FsLike, path: string): void {
  try {
    fs.unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

export type SnapshotVerdict =
  | { ok: true; meta: SnapshotMeta; version: number; rawBytes: number; compressedBytes: number }
  | { ok: false; reason: string };

/** Checks a snapshot file's header and body checksum (no decompression). */
export function verifySnapshotBytes(file: Buffer, expectedLsn: number): SnapshotVerdict {
  if (file.length < SNAPSHOT_HEADER_BYTES) return { ok: false, reason: 'short_header' };
  if (!file.subarray(0, 8).equals(MAGIC_BYTES)) return { ok: false, reason: 'bad_magic' };
  if (crc32c(file, 0, HEADER_CRC_AT) !== file.readUInt32LE(HEADER_CRC_AT)) return { ok: false, reason: 'header_crc_mismatch' };
  const version = file.readUInt32LE(8);
  if (version !== SNAPSHOT_FORMAT_VERSION) return { ok: false, reason: `unknown_version ${version} (reads ${SNAPSHOT_FORMAT_VERSION})` };
  if (file.readUInt32LE(12) !== SNAPSHOT_HEADER_BYTES) return { ok: false, reason: 'bad_header_length' };
  for (let at = 16; at < 56; at += 8) {
    if (!u64Safe(file, at)) return { ok: false, reason: 'u64_out_of_range' };
  }
  const meta: SnapshotMeta = { lsn: readU64(file, 16), registryVersion: readU64(file, 24), createdAtMs: readU64(file, 32) };
  if (meta.lsn !== expectedLsn) return { ok: false, reason: 'lsn_does_not_match_name' };
  const compressedBytes = readU64(file, 48);
  if (compressedBytes !== file.length - SNAPSHOT_HEADER_BYTES) return { ok: false, reason: 'length_mismatch' };
  if (crc32c(file, SNAPSHOT_HEADER_BYTES) !== file.readUInt32LE(BODY_CRC_AT)) return { ok: false, reason: 'body_crc_mismatch' };
  return { ok: true, meta, version, rawBytes: readU64(file, 40), compressedBytes };
}

/** Decompresses a verified snapshot body (`verdict` of verifySnapshotBytes); null when lz4 or the raw length disagree. */
export function decodeSnapshotBody(file: Buffer, verdict: { version: number; rawBytes: number }): Buffer | null {
  const { rawBytes } = verdict;
  const body = Buffer.allocUnsafe(rawBytes);
  let out = 0;
  for (let at = SNAPSHOT_HEADER_BYTES; at < file.length;) {
    if (at + 4 > file.length) return null;
    const n = file.readUInt32LE(at);
    at += 4;
    if (n > file.length - at) return null;
    let raw: Buffer;
    try {
      raw = uncompressSync(file.subarray(at, at + n));
    } catch {
      return null;
    }
    at += n;
    if (raw.length > rawBytes - out) return null;
    raw.copy(body, out);
    out += raw.length;
  }
  return out === rawBytes ? body : null;
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
      body = decodeSnapshotBody(file, verdict);
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
    for (const name of names) unlinkIfThere(fs, join(dir, name));
    if (names.length > 0) fsyncDir(fs, dir);
    return names.length;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new SfError('wal_truncate_failed', undefined, { reason: `${e.code ?? 'error'}: ${e.message}` });
  }
}
