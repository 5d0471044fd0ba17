/**
 * Record framing and payload codecs (byte diagrams in docs/durability.md).
 *
 *   frame:   [u32 LE length][u32 LE crc32c][u8 type][payload ...]
 *            length = 1 + payload bytes; crc32c covers type + payload
 *
 *   EVENT   (1): [u64 lsn][u64 timeMs][u32 registryVersion][u16 nameBytes][name utf8][u32 rowBytes][row utf8]
 *   INSTALL (2): [u64 lsn][u32 registryVersion]
 *   RESET   (3): [u64 lsn][u32 registryVersion]
 *   PUSH    (4): [u64 lsn][u64 timeMs][u32 registryVersion][u16 eventIndex]... (push_record.ts)
 *   SEGMENT (5): [u64 prevLsn]         (first frame of a segment; not in the lsn sequence)
 *   JSON   (16): [utf8 JSON]            (registry log only; no lsn)
 *
 * EVENT is the format before PUSH (the envelope text, parsed again by the shard):
 * still replayed from old data dirs, no longer written by the server.
 *
 * Every WAL payload starts with a u64 lsn, so tools can read the lsn of any
 * WAL record without knowing its type (a SEGMENT's is the lsn it follows; the
 * codec reports it as "no lsn" so it never counts as a record of the sequence). u64 fields hold JS safe integers
 * (high word <= 0x1FFFFF); a larger high word makes the payload malformed.
 */
import { strict as assert } from 'node:assert';
import {
  EVENT_FIXED_BYTES,
  EVENT_NAME_BYTES_MAX,
  FRAME_HEADER_BYTES,
  FRAME_TYPE_BYTES,
  RECORD_BYTES_MAX,
  RECORD_TYPE_EVENT,
  RECORD_TYPE_INSTALL,
  RECORD_TYPE_JSON,
  RECORD_TYPE_PUSH,
  RECORD_TYPE_RESET,
  RECORD_TYPE_SEGMENT,
  SEGMENT_HEADER_FRAME_BYTES,
  SEGMENT_PAYLOAD_BYTES,
  STAGING_BYTES_INITIAL,
  VERSION_PAYLOAD_BYTES,
} from './constants';
import { crc32c } from './crc32c';
import { pushWellFormed } from './push_record';

export interface EventRecord {
  type: typeof RECORD_TYPE_EVENT;
  lsn: number;
  timeMs: number;
  registryVersion: number;
  event: string;
  rowJson: string;
}
export interface InstallRecord {
  type: typeof RECORD_TYPE_INSTALL;
  lsn: number;
  registryVersion: number;
}
export interface ResetRecord {
  type: typeof RECORD_TYPE_RESET;
  lsn: number;
  registryVersion: number;
}
/**
 * A PUSH record, not decoded: `buf[body]` is its type byte and `end` one past its
 * payload (PushRecordReader reads it in place). `buf` is the segment being read.
 */
export interface PushRecord {
  type: typeof RECORD_TYPE_PUSH;
  lsn: number;
  timeMs: number;
  registryVersion: number;
  buf: Buffer;
  body: number;
  end: number;
}
export type WalRecord = EventRecord | InstallRecord | ResetRecord | PushRecord;

const TWO_POW_32 = 2 ** 32;
/** Largest high word of a u64 that is still a JS safe integer. */
const SAFE_HIGH_WORD_MAX = 0x1fffff;
/** Bytes before the payload: frame header + type. */
const PAYLOAD_OFFSET = FRAME_HEADER_BYTES + FRAME_TYPE_BYTES;
/** Worst case UTF-8 bytes per UTF-16 code unit (a surrogate pair is 2 units -> 4 bytes). */
const UTF8_BYTES_PER_UNIT_MAX = 3;

function writeU64(buf: Buffer, value: number, at: number): void {
  buf.writeUInt32LE(value >>> 0, at);
  buf.writeUInt32LE(Math.floor(value / TWO_POW_32), at + 4);
}

/** Reads a u64 written by writeU64; the caller has checked the high word (see wellFormed). */
export function readU64(buf: Buffer, at: number): number {
  // Byte arithmetic: readUInt32LE's argument checks cost ~5% of replay CPU here.
  return ((buf[at + 4] | (buf[at + 5] << 8) | (buf[at + 6] << 16)) + buf[at + 7] * 0x1000000) * TWO_POW_32
    + ((buf[at] | (buf[at + 1] << 8) | (buf[at + 2] << 16)) + buf[at + 3] * 0x1000000);
}

function isU64Safe(buf: Buffer, at: number): boolean {
  return buf.readUInt32LE(at + 4) <= SAFE_HIGH_WORD_MAX;
}

// ---------------------------------------------------------------------------
// Encoder
// ---------------------------------------------------------------------------

/**
 * Staging buffer for one batch of WAL records. Allocated once per shard and
 * reused (reset() per batch); it grows by doubling and never shrinks, so a
 * steady load allocates nothing here. bytes() is a view, valid until the next
 * call that stages a record.
 */
export class RecordEncoder {
  #buf: Buffer;
  #used: number;
  #count: number;
  #firstLsn: number;
  #lastLsn: number;

  constructor(initialBytes: number = STAGING_BYTES_INITIAL) {
    assert(Number.isSafeInteger(initialBytes), 'initialBytes must be an integer');
    assert(initialBytes > 0, 'initialBytes must be positive');
    this.#buf = Buffer.allocUnsafeSlow(initialBytes);
    this.#used = 0;
    this.#count = 0;
    this.#firstLsn = -1;
    this.#lastLsn = -1;
  }

  /** Records staged since the last reset. */
  get count(): number {
    return this.#count;
  }
  /** lsn of the first staged record, -1 when empty. */
  get firstLsn(): number {
    return this.#firstLsn;
  }
  /** lsn of the last staged record, -1 when empty. */
  get lastLsn(): number {
    return this.#lastLsn;
  }
  get byteLength(): number {
    return this.#used;
  }
  get capacity(): number {
    return this.#buf.length;
  }

  reset(): void {
    this.#used = 0;
    this.#count = 0;
    this.#firstLsn = -1;
    this.#lastLsn = -1;
  }

  /** View of the staged frames. */
  bytes(): Buffer {
    return this.#buf.subarray(0, this.#used);
  }

  event(lsn: number, timeMs: number, registryVersion: number, event: string, rowJson: string): void {
    this.#checkHeader(lsn, registryVersion);
    assert(Number.isSafeInteger(timeMs), 'timeMs must be an integer (server ms)');
    assert(timeMs >= 0, 'timeMs must be >= 0');
    const worst =
      PAYLOAD_OFFSET + EVENT_FIXED_BYTES + UTF8_BYTES_PER_UNIT_MAX * (event.length + rowJson.length);
    this.#ensure(worst);
    const buf = this.#buf;
    const start = this.#used;
    const p = start + PAYLOAD_OFFSET;
    writeU64(buf, lsn, p);
    writeU64(buf, timeMs, p + 8);
    buf.writeUInt32LE(registryVersion, p + 16);
    // Write the string first and patch its length: one UTF-8 pass, no byteLength scan.
    const nameBytes = buf.write(event, p + 22);
    assert(nameBytes <= EVENT_NAME_BYTES_MAX, 'event name too long for the u16 length');
    buf.writeUInt16LE(nameBytes, p + 20);
    const rowAt = p + 22 + nameBytes;
    const rowBytes = buf.write(rowJson, rowAt + 4);
    buf.writeUInt32LE(rowBytes, rowAt);
    this.#finish(start, RECORD_TYPE_EVENT, rowAt + 4 + rowBytes, lsn);
  }

  install(lsn: number, registryVersion: number): void {
    this.#versionRecord(RECORD_TYPE_INSTALL, lsn, registryVersion);
  }

  /** A RESET record (named so because reset() clears the staging buffer). */
  resetRecord(lsn: number, registryVersion: number): void {
    this.#versionRecord(RECORD_TYPE_RESET, lsn, registryVersion);
  }

  #versionRecord(type: number, lsn: number, registryVersion: number): void {
    this.#checkHeader(lsn, registryVersion);
    this.#ensure(PAYLOAD_OFFSET + VERSION_PAYLOAD_BYTES);
    const start = this.#used;
    const p = start + PAYLOAD_OFFSET;
    writeU64(this.#buf, lsn, p);
    this.#buf.writeUInt32LE(registryVersion, p + 8);
    this.#finish(start, type, p + VERSION_PAYLOAD_BYTES, lsn);
  }

  #checkHeader(lsn: number, registryVersion: number): void {
    assert(Number.isSafeInteger(lsn), 'lsn must be a safe integer');
    assert(lsn > this.#lastLsn, 'lsn must increase within a batch');
    assert(Number.isInteger(registryVersion), 'registryVersion must be an integer');
    assert(registryVersion >= 0, 'registryVersion must be >= 0');
    assert(registryVersion <= 0xffffffff, 'registryVersion must fit u32');
  }

  /** Writes type, length and crc of the frame that spans [start, end). */
  #finish(start: number, type: number, end: number, lsn: number): void {
    const buf = this.#buf;
    const length = end - start - FRAME_HEADER_BYTES;
    // Callers keep rows below the body limits; RECORD_BYTES_MAX has 3x headroom (src/limits.ts WAL_RECORD_BYTES_MAX).
    assert(length <= RECORD_BYTES_MAX, 'record larger than RECORD_BYTES_MAX');
    buf[start + FRAME_HEADER_BYTES] = type;
    buf.writeUInt32LE(length, start);
    buf.writeUInt32LE(crc32c(buf, start + FRAME_HEADER_BYTES, end), start + 4);
    this.#used = end;
    this.#count++;
    if (this.#firstLsn < 0) this.#firstLsn = lsn;
    this.#lastLsn = lsn;
  }

  #ensure(extra: number): void {
    const need = this.#used + extra;
    if (need <= this.#buf.length) return;
    let cap = this.#buf.length * 2;
    while (cap < need) cap *= 2;
    const grown = Buffer.allocUnsafeSlow(cap);
    this.#buf.copy(grown, 0, 0, this.#used);
    this.#buf = grown;
  }
}

/**
 * The SEGMENT frame that opens a segment (segment.ts): `prevLsn` is the highest
 * lsn the shard had appended or recovered before it, 0 when nothing came before.
 */
export function encodeSegmentHeader(prevLsn: number): Buffer {
  assert(Number.isSafeInteger(prevLsn), 'prevLsn must be a safe integer');
  assert(prevLsn >= 0, 'prevLsn must be >= 0');
  const buf = Buffer.alloc(SEGMENT_HEADER_FRAME_BYTES);
  buf.writeUInt32LE(FRAME_TYPE_BYTES + SEGMENT_PAYLOAD_BYTES, 0);
  buf[FRAME_HEADER_BYTES] = RECORD_TYPE_SEGMENT;
  writeU64(buf, prevLsn, PAYLOAD_OFFSET);
  buf.writeUInt32LE(crc32c(buf, FRAME_HEADER_BYTES, buf.length), 4);
  return buf;
}

/** prevLsn of the SEGMENT frame whose body starts at `body` (WAL_CODEC.wellFormed returned true). */
export function segmentPrevLsn(buf: Buffer, body: number): number {
  assert.equal(buf[body], RECORD_TYPE_SEGMENT, 'segmentPrevLsn: not a SEGMENT frame');
  return readU64(buf, body + FRAME_TYPE_BYTES);
}

/** True when `buf` is exactly one valid SEGMENT frame (a segment that holds no record). */
export function isSegmentHeaderOnly(buf: Buffer): boolean {
  if (buf.length !== SEGMENT_HEADER_FRAME_BYTES) return false;
  if (buf.readUInt32LE(0) !== FRAME_TYPE_BYTES + SEGMENT_PAYLOAD_BYTES || buf[FRAME_HEADER_BYTES] !== RECORD_TYPE_SEGMENT) return false;
  return crc32c(buf, FRAME_HEADER_BYTES, buf.length) === buf.readUInt32LE(4) && isU64Safe(buf, PAYLOAD_OFFSET);
}

/** One framed JSON record (registry log). Not a hot path: allocates. */
export function encodeJsonFrame(entry: unknown): Buffer {
  const json = JSON.stringify(entry);
  assert(typeof json === 'string', 'registry log entry must be JSON-serialisable');
  const payloadBytes = Buffer.byteLength(json);
  const length = FRAME_TYPE_BYTES + payloadBytes;
  assert(length <= RECORD_BYTES_MAX, 'registry log entry larger than RECORD_BYTES_MAX');
  const buf = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  buf[FRAME_HEADER_BYTES] = RECORD_TYPE_JSON;
  buf.write(json, PAYLOAD_OFFSET);
  buf.writeUInt32LE(length, 0);
  buf.writeUInt32LE(crc32c(buf, FRAME_HEADER_BYTES, buf.length), 4);
  return buf;
}

// ---------------------------------------------------------------------------
// Decoders. `body` is the offset of the type byte; `end` is one past the payload.
// ---------------------------------------------------------------------------

/**
 * What a reader needs to know about the record types of one log. The scanner in
 * recover.ts is shared by the WAL and the registry log through this interface.
 */
export interface FrameCodec {
  /** Whether this log defines `type`. */
  knows(type: number): boolean;
  /** Structural check of a crc-verified (or candidate) body; allocates nothing. */
  wellFormed(buf: Buffer, body: number, end: number): boolean;
  /** lsn of a well-formed record; -1 for logs without lsns. */
  lsnOf(buf: Buffer, body: number): number;
}

function eventWellFormed(buf: Buffer, body: number, end: number): boolean {
  const p = body + FRAME_TYPE_BYTES;
  if (end - p < EVENT_FIXED_BYTES) return false;
  if (!isU64Safe(buf, p) || !isU64Safe(buf, p + 8)) return false;
  const nameBytes = buf.readUInt16LE(p + 20);
  const rowLengthAt = p + 22 + nameBytes;
  if (rowLengthAt + 4 > end) return false;
  return rowLengthAt + 4 + buf.readUInt32LE(rowLengthAt) === end;
}

function versionWellFormed(buf: Buffer, body: number, end: number): boolean {
  const p = body + FRAME_TYPE_BYTES;
  return end - p === VERSION_PAYLOAD_BYTES && isU64Safe(buf, p);
}

function segmentWellFormed(buf: Buffer, body: number, end: number): boolean {
  const p = body + FRAME_TYPE_BYTES;
  return end - p === SEGMENT_PAYLOAD_BYTES && isU64Safe(buf, p);
}

export const WAL_CODEC: FrameCodec = {
  knows: (type) => type === RECORD_TYPE_PUSH || type === RECORD_TYPE_EVENT || type === RECORD_TYPE_INSTALL || type === RECORD_TYPE_RESET
    || type === RECORD_TYPE_SEGMENT,
  wellFormed(buf, body, end) {
    const type = buf[body];
    if (type === RECORD_TYPE_PUSH) return pushWellFormed(buf, body, end);
    if (type === RECORD_TYPE_EVENT) return eventWellFormed(buf, body, end);
    if (type === RECORD_TYPE_INSTALL || type === RECORD_TYPE_RESET) return versionWellFormed(buf, body, end);
    if (type === RECORD_TYPE_SEGMENT) return segmentWellFormed(buf, body, end);
    return false;
  },
  // A SEGMENT frame is outside the lsn sequence: "no lsn", like a registry entry.
  lsnOf: (buf, body) => (buf[body] === RECORD_TYPE_SEGMENT ? -1 : readU64(buf, body + FRAME_TYPE_BYTES)),
};

export const JSON_CODEC: FrameCodec = {
  knows: (type) => type === RECORD_TYPE_JSON,
  // JSON validity is checked when the entry is parsed (registry_log.ts).
  wellFormed: (buf, body, end) => buf[body] === RECORD_TYPE_JSON && end > body,
  lsnOf: () => -1,
};

/** Decodes a well-formed WAL record (WAL_CODEC.wellFormed returned true). */
export function decodeWalRecord(buf: Buffer, body: number, end: number): WalRecord {
  const type = buf[body];
  const p = body + FRAME_TYPE_BYTES;
  const lsn = readU64(buf, p);
  if (type === RECORD_TYPE_PUSH) {
    return { type: RECORD_TYPE_PUSH, lsn, timeMs: readU64(buf, p + 8), registryVersion: buf.readUInt32LE(p + 16), buf, body, end };
  }
  if (type === RECORD_TYPE_EVENT) {
    const nameBytes = buf.readUInt16LE(p + 20);
    const rowAt = p + 22 + nameBytes + 4;
    assert(rowAt <= end, 'decodeWalRecord: malformed event (check wellFormed first)');
    return {
      type: RECORD_TYPE_EVENT,
      lsn,
      timeMs: readU64(buf, p + 8),
      registryVersion: buf.readUInt32LE(p + 16),
      event: buf.toString('utf8', p + 22, p + 22 + nameBytes),
      rowJson: buf.toString('utf8', rowAt, end),
    };
  }
  assert(end - p === VERSION_PAYLOAD_BYTES, 'decodeWalRecord: malformed version record');
  const registryVersion = buf.readUInt32LE(p + 8);
  if (type === RECORD_TYPE_INSTALL) return { type: RECORD_TYPE_INSTALL, lsn, registryVersion };
  assert(type === RECORD_TYPE_RESET, 'decodeWalRecord: unknown type');
  return { type: RECORD_TYPE_RESET, lsn, registryVersion };
}
