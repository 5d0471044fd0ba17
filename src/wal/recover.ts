/**
 * WAL recovery, written as a decision table (STYLE.md synthesis 14, after
 * TigerBeetle's `recovery_cases`). Every position in a segment is classified into
 * exactly one labelled case; the case decides what happens. docs/durability.md has
 * the same table with the reasoning behind each row.
 *
 * Matchers, evaluated at offset `o` of a segment of `end` bytes (first row that
 * matches wins):
 *   remaining   end - o
 *   fits        1 <= length <= RECORD_BYTES_MAX and 8 + length <= remaining
 *   crc         crc32c(type + payload) equals the stored crc (only when it fits)
 *   known       the codec defines the type byte
 *   formed      the payload decodes structurally (inner lengths add up exactly)
 *   floor       lsn must be above max(previous lsn, segment first lsn - 1)
 *   zeros       every byte from o to the end of the file is 0x00
 *   next ok     a valid record starts right after this frame (o + 8 + length)
 *   resync      a valid record starts somewhere in (o, end), found by a byte scan
 *
 *   label name              remaining fits crc  known formed other            action
 *   A     end               0         -    -    -     -      -                stop
 *   B     ok                >=8       yes  ok   yes   yes    lsn > floor      yield
 *   C     lsn_regression    >=8       yes  ok   yes   yes    lsn <= floor     yield, warn
 *   D     unknown_type      >=8       yes  ok   no    -      -                skip record, warn
 *   E     malformed_payload >=8       yes  ok   yes   no     -                skip record, error
 *   F     short_header      1..7      -    -    -     -      -                tail
 *   G     zero_tail         >=8       -    -    -     -      zeros            tail
 *   H     corrupt_record    >=8       yes  bad  -     -      next ok          skip record, error
 *   I     corrupt_region    >=8       -    -    -     -      resync found     skip to resync, error
 *   J     torn_length       >=8       no (length in range, past the end)      tail
 *   K     torn_crc          >=8       yes  bad  -     -      nothing valid after   tail
 *   L     garbage_length    >=8       no (length 0 or > RECORD_BYTES_MAX)     tail
 *
 * "tail" = nothing valid follows in this segment. In the tail segment (the last
 * non-empty one) the file is truncated at `o`; that is the torn write of a crash.
 * In an earlier, closed segment the bytes are skipped (the file is left as is for
 * forensics) and the segment is reported corrupt; replay continues with the next
 * segment, because every record is an independent event: stopping would throw away
 * every later acknowledged event to protect nothing.
 *
 * Resynchronisation is safe because a valid length always has a 0x00 top byte and
 * JSON text never contains a raw NUL (src/limits.ts WAL_RECORD_BYTES_MAX), and a
 * candidate must also pass the type, structure, crc and lsn-floor checks.
 */
import { strict as assert } from 'node:assert';
import { join } from 'node:path';
import { FRAME_HEADER_BYTES, RECORD_BYTES_MAX, RECORD_TYPE_SEGMENT } from './constants';
import { crc32c } from './crc32c';
import { listLsnFiles, fileSizeOrMissing, readFileFrom, truncateFile } from './file_ops';
import { realFs, type FsLike } from './fs_like';
import { WAL_CODEC, decodeWalRecord, segmentPrevLsn, type FrameCodec, type WalRecord } from './record';
import type { WalPosition } from './segment';

export const CASE_END = 0;
export const CASE_OK = 1;
export const CASE_LSN_REGRESSION = 2;
export const CASE_UNKNOWN_TYPE = 3;
export const CASE_MALFORMED_PAYLOAD = 4;
export const CASE_SHORT_HEADER = 5;
export const CASE_ZERO_TAIL = 6;
export const CASE_CORRUPT_RECORD = 7;
export const CASE_CORRUPT_REGION = 8;
export const CASE_TORN_LENGTH = 9;
export const CASE_TORN_CRC = 10;
export const CASE_GARBAGE_LENGTH = 11;

export type RecoveryAction = 'stop' | 'yield' | 'skip_record' | 'skip_region' | 'tail';
export type LogLevel = 'info' | 'warn' | 'error';

export interface RecoveryCase {
  id: number;
  label: string;
  name: string;
  action: RecoveryAction;
  /** Level of the log entry the case produces; null for the silent cases. */
  level: LogLevel | null;
}

function row(id: number, label: string, name: string, action: RecoveryAction, level: LogLevel | null): RecoveryCase {
  return { id, label, name, action, level };
}

/** The decision table (see the header comment for the matchers). Indexed by case id. */
export const RECOVERY_CASES: readonly RecoveryCase[] = [
  row(CASE_END, 'A', 'end', 'stop', null),
  row(CASE_OK, 'B', 'ok', 'yield', null),
  row(CASE_LSN_REGRESSION, 'C', 'lsn_regression', 'yield', 'warn'),
  row(CASE_UNKNOWN_TYPE, 'D', 'unknown_type', 'skip_record', 'warn'),
  row(CASE_MALFORMED_PAYLOAD, 'E', 'malformed_payload', 'skip_record', 'error'),
  row(CASE_SHORT_HEADER, 'F', 'short_header', 'tail', 'warn'),
  row(CASE_ZERO_TAIL, 'G', 'zero_tail', 'tail', 'warn'),
  row(CASE_CORRUPT_RECORD, 'H', 'corrupt_record', 'skip_record', 'error'),
  row(CASE_CORRUPT_REGION, 'I', 'corrupt_region', 'skip_region', 'error'),
  row(CASE_TORN_LENGTH, 'J', 'torn_length', 'tail', 'warn'),
  row(CASE_TORN_CRC, 'K', 'torn_crc', 'tail', 'warn'),
  row(CASE_GARBAGE_LENGTH, 'L', 'garbage_length', 'tail', 'warn'),
];
RECOVERY_CASES.forEach((c, i) => assert.equal(c.id, i, 'RECOVERY_CASES must be indexed by id'));

/** Result of classifyAt; one instance is reused for a whole scan (no per-record garbage). */
export class FrameProbe {
  caseId: number;
  /** Offset where the scan continues (end of record, resync point, or end of file). */
  next: number;
  /** lsn of a crc-valid record (cases B, C), else -1. */
  lsn: number;
  /** Type byte of a crc-valid frame, else -1. */
  type: number;
  constructor() {
    this.caseId = CASE_END;
    this.next = 0;
    this.lsn = -1;
    this.type = -1;
  }
}

/** True when a record that passes every check starts at `p`. */
function validRecordAt(buf: Buffer, p: number, end: number, codec: FrameCodec, lsnFloor: number): boolean {
  if (end - p < FRAME_HEADER_BYTES + 1) return false;
  const length = buf.readUInt32LE(p);
  if (length < 1 || length > RECORD_BYTES_MAX) return false;
  const bodyEnd = p + FRAME_HEADER_BYTES + length;
  if (bodyEnd > end) return false;
  const body = p + FRAME_HEADER_BYTES;
  // Cheap structural checks first: the crc is the expensive part of a resync scan.
  if (!codec.knows(buf[body]) || !codec.wellFormed(buf, body, bodyEnd)) return false;
  if (crc32c(buf, body, bodyEnd) !== buf.readUInt32LE(p + 4)) return false;
  const lsn = codec.lsnOf(buf, body);
  return lsn === -1 || lsn > lsnFloor;
}

/** First offset in [from, end) where a valid record starts, or -1. */
function resync(buf: Buffer, from: number, end: number, codec: FrameCodec, lsnFloor: number): number {
  const last = end - FRAME_HEADER_BYTES - 1;
  for (let p = from; p <= last; p++) {
    // A valid length's top byte is 0 (RECORD_BYTES_MAX < 2^24): skip most offsets at once.
    if (buf[p + 3] !== 0) continue;
    if (validRecordAt(buf, p, end, codec, lsnFloor)) return p;
  }
  return -1;
}

function allZero(buf: Buffer, from: number, end: number): boolean {
  for (let i = from; i < end; i++) if (buf[i] !== 0) return false;
  return true;
}

/**
 * Classifies the bytes at `o` (see the table above) into `out`. `lsnFloor` is the
 * highest lsn a new record must exceed.
 */
export function classifyAt(buf: Buffer, o: number, end: number, codec: FrameCodec, lsnFloor: number, out: FrameProbe): void {
  assert(o >= 0, 'classifyAt: negative offset');
  assert(end <= buf.length, 'classifyAt: end past the buffer');
  out.lsn = -1;
  out.type = -1;
  out.next = end;
  const remaining = end - o;
  if (remaining === 0) return void (out.caseId = CASE_END);
  if (remaining < FRAME_HEADER_BYTES) return void (out.caseId = CASE_SHORT_HEADER);
  const length = buf.readUInt32LE(o);
  const inRange = length >= 1 && length <= RECORD_BYTES_MAX;
  const fits = inRange && length <= remaining - FRAME_HEADER_BYTES;
  const body = o + FRAME_HEADER_BYTES;
  const bodyEnd = body + length;
  if (fits && crc32c(buf, body, bodyEnd) === buf.readUInt32LE(o + 4)) {
    classifyCrcValid(buf, body, bodyEnd, codec, lsnFloor, out);
    return;
  }
  if (allZero(buf, o, end)) return void (out.caseId = CASE_ZERO_TAIL);
  if (fits && validRecordAt(buf, bodyEnd, end, codec, lsnFloor)) {
    out.next = bodyEnd;
    return void (out.caseId = CASE_CORRUPT_RECORD);
  }
  const at = resync(buf, o + 1, end, codec, lsnFloor);
  if (at >= 0) {
    out.next = at;
    return void (out.caseId = CASE_CORRUPT_REGION);
  }
  if (fits) out.caseId = CASE_TORN_CRC;
  else if (inRange) out.caseId = CASE_TORN_LENGTH;
  else out.caseId = CASE_GARBAGE_LENGTH;
}

function classifyCrcValid(buf: Buffer, body: number, bodyEnd: number, codec: FrameCodec, lsnFloor: number, out: FrameProbe): void {
  out.next = bodyEnd;
  out.type = buf[body];
  if (!codec.knows(out.type)) return void (out.caseId = CASE_UNKNOWN_TYPE);
  if (!codec.wellFormed(buf, body, bodyEnd)) return void (out.caseId = CASE_MALFORMED_PAYLOAD);
  out.lsn = codec.lsnOf(buf, body);
  out.caseId = out.lsn !== -1 && out.lsn <= lsnFloor ? CASE_LSN_REGRESSION : CASE_OK;
}

// ---------------------------------------------------------------------------
// recoverWal
// ---------------------------------------------------------------------------

export interface RecoveryLogEntry {
  kind: string;
  level: LogLevel;
  [k: string]: unknown;
}

export interface RecoveryReport {
  /** Segment files found. */
  segments: number;
  /** Segments not read because every record in them is <= afterLsn. */
  segmentsSkipped: number;
  /** Bytes not read at the start of the segment holding afterLsn, thanks to the snapshot's WAL resume point. */
  resumeSkippedBytes: number;
  /** Records passed to onRecord (lsn > afterLsn). */
  records: number;
  /** Valid records read, including those at or below afterLsn. */
  recordsRead: number;
  /** Bytes cut off the tail segment (torn tail). */
  truncatedBytes: number;
  /** Bad bytes skipped without modifying the file (corruption, closed-segment tails). */
  skippedBytes: number;
  /** Segments with anything worse than a torn tail. */
  corruptSegments: string[];
  /** Highest lsn of any valid record read, -1 when none was read. */
  lastLsn: number;
  /**
   * Where the record of lastLsn starts (a resume point for a snapshot taken before
   * anything else is appended: WalWriter.open's `resumeFrom`); null when no record
   * was read. Only a record above every lsn before it counts.
   */
  lastRecordAt: WalPosition | null;
  /**
   * Lowest lsn the shard may append next: above lastLsn, afterLsn and the name of
   * the newest non-empty segment (WalWriter.open asserts the same bound).
   */
  nextLsnMin: number;
  /** Every abnormal finding, in order; the caller logs them (prefix `wal.`). */
  log: RecoveryLogEntry[];
  /** One entry per segment read (not skipped), in order: what loss.ts needs to prove a gap. */
  chain: SegmentFact[];
}

/**
 * What recovery learnt about one segment it read. The SEGMENT frame says which lsn
 * the segment follows; the WAL read before it says how far the records reach; a
 * segment that follows an lsn nothing before it reaches proves that records are
 * missing (loss.ts). Segments written before SEGMENT frames existed have none.
 */
export interface SegmentFact {
  name: string;
  /** Position among the segment files of the directory (0: the oldest on disk). */
  index: number;
  /** lsn its SEGMENT frame follows (0: the shard's history starts here); null: no frame read (an older segment, or read from a resume point). */
  prevLsn: number | null;
  /** Highest lsn read before this segment (-1: none). */
  lsnBefore: number;
  /** lsn and type of its first record (-1 when it has none). */
  firstLsn: number;
  firstType: number;
}

/** Filled in as recovery goes, for progress lines (the caller reads it from onRecord). */
export interface RecoveryProgress {
  /** Bytes of the segments that will be read (skipped ones excluded). */
  bytesTotal: number;
  /** Bytes of those segments read so far (at the end of the last record handed out). */
  bytesRead: number;
}

export interface RecoverOptions {
  fs?: FsLike;
  progress?: RecoveryProgress;
  /** Truncate the torn tail of the tail segment (default true). wal_check passes false. */
  repair?: boolean;
  /**
   * The snapshot's WAL resume point (segment.ts WalPosition): the segment it names
   * is read from that offset when the record there is the one it names, with an
   * lsn <= afterLsn (every record before it is older, so in the snapshot); else,
   * or when the file is shorter, the segment is read whole as without it.
   */
  resumeAt?: WalPosition | null;
}

interface SegmentRef {
  name: string;
  lsn: number;
}

/**
 * Reads every segment of `dir` in lsn order and calls `onRecord` for each valid
 * record with lsn > afterLsn (the object is fresh; the callee may keep it). Bad
 * data never throws (see the table); real I/O errors do.
 */
export function recoverWal(dir: string, afterLsn: number, onRecord: (r: WalRecord) => void, opts: RecoverOptions = {}): RecoveryReport {
  assert(Number.isSafeInteger(afterLsn), 'afterLsn must be an integer');
  assert(afterLsn >= -1, 'afterLsn must be >= -1');
  const fs = opts.fs ?? realFs;
  const repair = opts.repair ?? true;
  const report: RecoveryReport = {
    segments: 0, segmentsSkipped: 0, resumeSkippedBytes: 0, records: 0, recordsRead: 0, truncatedBytes: 0,
    skippedBytes: 0, corruptSegments: [], lastLsn: -1, lastRecordAt: null, nextLsnMin: 0, log: [], chain: [],
  };
  const listing = listLsnFiles(fs, dir, 'log');
  for (const name of listing.others) report.log.push({ kind: 'stray_file', level: 'info', name });
  const files = listing.files;
  report.segments = files.length;
  const tailIndex = tailSegmentIndex(fs, dir, files);
  // Names are first lsns and lsns only grow, so every record of segment i is < the next one's name.
  const skipped = (i: number): boolean => i < tailIndex && (i + 1 < files.length ? files[i + 1].lsn : Infinity) - 1 <= afterLsn;
  const progress = opts.progress ?? { bytesTotal: 0, bytesRead: 0 };
  progress.bytesTotal = 0;
  progress.bytesRead = 0;
  for (let i = 0; i < files.length; i++) if (!skipped(i)) progress.bytesTotal += Math.max(0, fileSizeOrMissing(fs, join(dir, files[i].name)));
  let newestNonEmptyLsn = -1;
  let bytesBefore = 0;
  for (let i = 0; i < files.length; i++) {
    if (skipped(i)) {
      report.segmentsSkipped++;
      continue;
    }
    const path = join(dir, files[i].name);
    const lsnFloor = Math.max(report.lastLsn, files[i].lsn - 1);
    const resumed = resumeRead(fs, path, files[i].lsn, afterLsn, lsnFloor, opts.resumeAt ?? null);
    const base = resumed === null ? 0 : opts.resumeAt!.offset;
    const buf = resumed ?? fs.readFileSync(path);
    report.resumeSkippedBytes += base;
    bytesBefore += base;
    const fact: SegmentFact = { name: files[i].name, index: i, prevLsn: null, lsnBefore: report.lastLsn, firstLsn: -1, firstType: -1 };
    report.chain.push(fact);
    const tailAt = replaySegment(buf, fact, files[i].lsn, base, lsnFloor, afterLsn, report, onRecord, progress, bytesBefore);
    bytesBefore += buf.length;
    progress.bytesRead = bytesBefore;
    if (tailAt >= 0) handleTail(fs, dir, files[i].name, base + buf.length, base + tailAt, i === tailIndex, repair, report);
    const sizeAfter = base + (tailAt >= 0 && i === tailIndex && repair ? tailAt : buf.length);
    if (sizeAfter > 0) newestNonEmptyLsn = files[i].lsn;
  }
  report.nextLsnMin = Math.max(report.lastLsn, newestNonEmptyLsn, afterLsn) + 1;
  return report;
}

/**
 * The bytes of segment `path` (first lsn `segmentLsn`) from the resume point on,
 * when it applies to this segment and holds: the file reaches the offset, a valid
 * record starts there with exactly the lsn the point names, and that lsn is <=
 * afterLsn. Else null (the caller reads the whole segment).
 */
function resumeRead(fs: FsLike, path: string, segmentLsn: number, afterLsn: number, lsnFloor: number, at: WalPosition | null): Buffer | null {
  if (at === null || at.segmentLsn !== segmentLsn || at.lsn > afterLsn || at.offset <= 0) return null;
  const buf = readFileFrom(fs, path, at.offset);
  if (buf === null) return null;
  const probe = new FrameProbe();
  classifyAt(buf, 0, buf.length, WAL_CODEC, lsnFloor, probe);
  return probe.caseId === CASE_OK && probe.lsn === at.lsn ? buf : null;
}

/** Index of the last non-empty segment (the one a crash can tear), or the last one. */
function tailSegmentIndex(fs: FsLike, dir: string, files: SegmentRef[]): number {
  for (let i = files.length - 1; i > 0; i--) {
    if (fileSizeOrMissing(fs, join(dir, files[i].name)) > 0) return i;
  }
  return files.length > 0 ? 0 : -1;
}

/** Runs the table over one segment; returns the offset of a bad tail, or -1. */
function replaySegment(
  buf: Buffer,
  fact: SegmentFact,
  segmentLsn: number,
  base: number,
  lsnFloorStart: number,
  afterLsn: number,
  report: RecoveryReport,
  onRecord: (r: WalRecord) => void,
  progress: RecoveryProgress,
  bytesBefore: number,
): number {
  const name = fact.name;
  const probe = new FrameProbe();
  let lsnFloor = lsnFloorStart;
  let o = 0;
  /** A malformed record's finding, waiting for the lsn of the next valid record (the bound of what it lost). */
  let open: RecoveryLogEntry | null = null;
  for (;;) {
    classifyAt(buf, o, buf.length, WAL_CODEC, lsnFloor, probe);
    const c = RECOVERY_CASES[probe.caseId];
    if (c.action === 'stop') return -1;
    if (c.action === 'tail') {
      report.log.push(finding(c, name, base + o, buf.length - o, lsnFloor));
      return o;
    }
    if (c.action === 'yield' && probe.type === RECORD_TYPE_SEGMENT) {
      // Only the frame a segment opens with is its SEGMENT frame (a later one would be a stray copy).
      if (o === 0 && base === 0) fact.prevLsn = segmentPrevLsn(buf, o + FRAME_HEADER_BYTES);
      o = probe.next;
      continue;
    }
    if (c.action === 'yield') {
      report.recordsRead++;
      if (fact.firstLsn < 0) { fact.firstLsn = probe.lsn; fact.firstType = probe.type; }
      if (open !== null) { open.lsnAfter = probe.lsn; open = null; }
      if (probe.caseId === CASE_LSN_REGRESSION) {
        const entry = finding(c, name, base + o, probe.next - o, lsnFloor);
        entry.lsn = probe.lsn;
        report.log.push(entry);
      }
      lsnFloor = Math.max(lsnFloor, probe.lsn);
      if (probe.caseId === CASE_OK && probe.lsn > report.lastLsn) {
        const at = report.lastRecordAt;
        if (at === null || at.segmentLsn !== segmentLsn) report.lastRecordAt = { segmentLsn, offset: base + o, lsn: probe.lsn };
        else { at.offset = base + o; at.lsn = probe.lsn; }
      }
      if (probe.lsn > report.lastLsn) report.lastLsn = probe.lsn;
      if (probe.lsn > afterLsn) {
        report.records++;
        progress.bytesRead = bytesBefore + probe.next;
        onRecord(decodeWalRecord(buf, o + FRAME_HEADER_BYTES, probe.next));
      }
    } else {
      const entry = reportSkip(buf, name, base, o, probe, lsnFloor, report);
      if (probe.caseId === CASE_MALFORMED_PAYLOAD) open = entry;
    }
    assert(probe.next > o, 'recovery must make progress');
    o = probe.next;
  }
}

/** The log entry of a table row at `offset` of `segment`. */
function finding(c: RecoveryCase, segment: string, offset: number, bytes: number, lsnBefore: number): RecoveryLogEntry {
  return { kind: c.name, level: c.level ?? 'warn', label: c.label, segment, offset, bytes, lsnBefore };
}

function reportSkip(buf: Buffer, name: string, base: number, o: number, probe: FrameProbe, lsnFloor: number, report: RecoveryReport): RecoveryLogEntry {
  const c = RECOVERY_CASES[probe.caseId];
  const entry = finding(c, name, base + o, probe.next - o, lsnFloor);
  if (probe.caseId === CASE_UNKNOWN_TYPE) entry.type = probe.type;
  // Corrupt record/region end at a verified record: its lsn bounds what was lost.
  if (probe.caseId === CASE_CORRUPT_RECORD || probe.caseId === CASE_CORRUPT_REGION) {
    entry.lsnAfter = WAL_CODEC.lsnOf(buf, probe.next + FRAME_HEADER_BYTES);
  }
  report.log.push(entry);
  if (c.level === 'error') {
    report.skippedBytes += probe.next - o;
    if (!report.corruptSegments.includes(name)) report.corruptSegments.push(name);
  }
  return entry;
}

function handleTail(
  fs: FsLike,
  dir: string,
  name: string,
  size: number,
  at: number,
  isTailSegment: boolean,
  repair: boolean,
  report: RecoveryReport,
): void {
  assert(at < size, 'a tail has at least one byte');
  const bytes = size - at;
  if (!isTailSegment) {
    // Our writer syncs a segment before rotating and rolls back failed appends, so a
    // bad tail here means a rollback that could not truncate, or disk damage.
    report.skippedBytes += bytes;
    if (!report.corruptSegments.includes(name)) report.corruptSegments.push(name);
    report.log.push({ kind: 'closed_segment_tail', level: 'error', segment: name, offset: at, bytes, action: 'skipped' });
    return;
  }
  if (!repair) {
    report.log.push({ kind: 'torn_tail', level: 'warn', segment: name, offset: at, bytes, action: 'would_truncate' });
    return;
  }
  truncateFile(fs, join(dir, name), at);
  report.truncatedBytes += bytes;
  report.log.push({ kind: 'torn_tail', level: 'warn', segment: name, offset: at, bytes, action: 'truncated' });
}
