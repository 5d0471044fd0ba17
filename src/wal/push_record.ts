/**
 * PUSH records (WAL type 1): one push as one shard applies it, built once on the
 * front and stored in the WAL byte for byte (byte diagram in docs/durability.md).
 *
 *   payload: [u64 lsn][u64 timeMs][u32 registryVersion][u16 eventIndex]
 *            [u8 flags][dedupe value: str, when flags & FLAG_DEDUPE]
 *            [u16 feedCount] feedCount x feed
 *   feed:    [u16 tableIndex][key: str][u16 valueCount] valueCount x value
 *   value:   [u8 tag] then by tag: ABSENT, NULL, FALSE, TRUE: nothing;
 *            I32: i32; F64: f64; STR_ASCII, STR_UTF8, STR_UTF16: [u32 bytes][bytes]
 *   str:     a value that is STR_ASCII, STR_UTF8 or STR_UTF16
 *
 * A feed is one table the push reaches on this shard: the entity's canonical key
 * and the values of the columns that table's features read (TablePlan.columns of
 * the registry version, in that order). Indexes refer to that registry version
 * (CompiledRegistry.eventList / tableList), which the shard has installed: installs
 * travel in the same channel as pushes, and replay installs the version of each
 * record first. So the shard applies a push without JSON.parse, chains, key
 * building or hashing.
 *
 * The front writes whole WAL frames ([u32 length][u32 crc][u8 type][payload])
 * into a per-shard batch buffer with the crc left 0; the shard fills the crc in
 * place (sealFrame) and writes the run of frames as it received them: one write,
 * no copy. The crc is computed on the shard thread because the front thread is
 * the one every request passes through.
 */
import { strict as assert } from 'node:assert';
import { FORGET_EVERY_TABLE, FORGET_FIXED_BYTES, FRAME_LENGTH_CRC_BYTES, FRAME_TYPE_BYTES, RECORD_BYTES_MAX, RECORD_TYPE_FORGET, RECORD_TYPE_INSTALL, RECORD_TYPE_PUSH, VERSION_PAYLOAD_BYTES } from './constants';
import { crc32c } from './crc32c';
import { readU32, readU64, TWO_POW_32, u64Safe, writeU64 } from './u64';
import type { Value } from '../types';
import { PUSH_BATCH_BYTES_INITIAL, PUSH_BATCH_BYTES_KEPT_MAX } from '../limits';

export const TAG_ABSENT = 0;
export const TAG_NULL = 1;
export const TAG_FALSE = 2;
export const TAG_TRUE = 3;
export const TAG_I32 = 4;
export const TAG_F64 = 5;
export const TAG_STR_UTF8 = 6;
/** Every byte < 0x80: the reader decodes it as latin1, which is faster than UTF-8. */
export const TAG_STR_ASCII = 7;
/**
 * UTF-16LE code units: a string with a lone surrogate (JSON's "\ud800" escape makes
 * one) has no UTF-8 form, and must come back unchanged (it may be a key).
 */
export const TAG_STR_UTF16 = 8;
const TAG_MAX = TAG_STR_UTF16;

/** flags bit: a dedupe value follows (the shard's DedupeLog records it for recovery). */
export const FLAG_DEDUPE = 1;

/** lsn, timeMs, registryVersion, eventIndex, flags, feedCount. */
export const PUSH_FIXED_BYTES = 8 + 8 + 4 + 2 + 1 + 2;
/** Offset of the u16 feed count in a payload without a dedupe value. */
const FLAGS_AT = 22;
/** Largest table/event index and per-feed value count (u16 fields). */
export const PUSH_INDEX_MAX = 0xffff;
/** Strings up to this many UTF-16 units are written by a JS loop when ASCII (below it a Buffer#write call costs more than the loop). */
const ASCII_LOOP_UNITS_MAX = 48;
/** Worst-case UTF-8 bytes of one UTF-16 unit. */
const UTF8_BYTES_PER_UNIT_MAX = 3;
const PAYLOAD_OFFSET = FRAME_LENGTH_CRC_BYTES + FRAME_TYPE_BYTES;

/** What take() answers for a batch without frames: nothing to allocate or transfer. */
const NO_BYTES = new Uint8Array(0);

/**
 * Builds the frames of one shard batch. One per shard channel on the front;
 * takeLatin1() hands the bytes over as a string (protocol/messages.ts
 * ShardBatchWire) and keeps the writer's buffer for the next batch (take(): the
 * same bytes in an ArrayBuffer of exactly their size, for in-process callers).
 * Handing over the writer's own buffer saved a copy of a few KB but moved a >= 16
 * KB ArrayBuffer per batch: at half the max rate (batches of ~10 pushes, ~2,500 a
 * second) that was ~40 MB/s of array-buffer memory the shard's heap had to account
 * and free, and its mark-compacts followed it (bench/DECISIONS.md, "Hand-off");
 * an exactly sized ArrayBuffer still counted 1.5-3 MB/s under the fraud load.
 */
export class PushFrameWriter {
  buf: Buffer;
  pos = 0;
  /** Over `buf`: DataView stores are inlined by V8, Buffer#writeUInt32LE and friends are calls with range checks. */
  #dv: DataView;
  #frameStart = -1;
  #feedCountAt = -1;
  #feeds = 0;
  #valueCountAt = -1;
  #values = 0;

  constructor(initialBytes = PUSH_BATCH_BYTES_INITIAL) {
    assert(initialBytes > PAYLOAD_OFFSET + PUSH_FIXED_BYTES, 'initialBytes too small');
    this.buf = Buffer.allocUnsafeSlow(initialBytes);
    this.#dv = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length);
  }

  get byteLength(): number {
    return this.pos;
  }

  /**
   * A copy of the frames written so far, in its own ArrayBuffer (to transfer); the
   * writer starts over in its buffer. A batch without frames (gets only) takes nothing.
   */
  take(): Uint8Array {
    if (this.pos === 0) return NO_BYTES;
    const out = new Uint8Array(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    this.#restart();
    return out;
  }

  /**
   * take() as a one-byte string, one character per byte (protocol/messages.ts
   * ShardBatchWire: how a batch crosses to its shard thread without an ArrayBuffer).
   */
  takeLatin1(): string {
    if (this.pos === 0) return '';
    const out = (this.buf as unknown as SliceBuffer).latin1Slice(0, this.pos);
    this.#restart();
    return out;
  }

  #restart(): void {
    if (this.buf.length > PUSH_BATCH_BYTES_KEPT_MAX) this.#setBuf(Buffer.allocUnsafeSlow(PUSH_BATCH_BYTES_INITIAL));
    this.pos = 0;
  }

  /** Opens a PUSH frame; feeds follow (feed()), then end(). */
  begin(lsn: number, timeMs: number, registryVersion: number, eventIndex: number, dedupe: string | null): void {
    if (this.#frameStart >= 0) fail('begin inside a frame');
    if (!(lsn >= 0 && lsn <= Number.MAX_SAFE_INTEGER)) fail('lsn must be a safe integer');
    if (!(eventIndex >= 0 && eventIndex <= PUSH_INDEX_MAX)) fail('event index out of range');
    this.#ensure(PAYLOAD_OFFSET + PUSH_FIXED_BYTES);
    const start = this.pos;
    this.#frameStart = start;
    const dv = this.#dv;
    dv.setUint8(start + FRAME_LENGTH_CRC_BYTES, RECORD_TYPE_PUSH);
    const p = start + PAYLOAD_OFFSET;
    dv.setUint32(p, lsn >>> 0, true);
    dv.setUint32(p + 4, Math.floor(lsn / TWO_POW_32), true);
    dv.setUint32(p + 8, timeMs >>> 0, true);
    dv.setUint32(p + 12, Math.floor(timeMs / TWO_POW_32), true);
    dv.setUint32(p + 16, registryVersion, true);
    dv.setUint16(p + 20, eventIndex, true);
    dv.setUint8(p + FLAGS_AT, dedupe === null ? 0 : FLAG_DEDUPE);
    this.pos = p + FLAGS_AT + 1;
    if (dedupe !== null) this.str(dedupe);
    this.#ensure(2);
    this.#feedCountAt = this.pos;
    this.#feeds = 0;
    this.pos += 2;
  }

  /** Opens a feed of the current frame; its values follow (value()). */
  feed(tableIndex: number, key: string): void {
    this.#openFeed(tableIndex);
    this.str(key);
    this.#keyWritten();
  }

  /**
   * feed() with the key of the ASCII bytes b[from, to) (every byte < 0x80, as the
   * caller checked): the same bytes as feed() of their string, without the string
   * (front/push_text.ts writes straight from the request body).
   */
  feedAscii(tableIndex: number, b: Uint8Array, from: number, to: number): void {
    this.#openFeed(tableIndex);
    this.#ascii(b, from, to);
    this.#keyWritten();
  }

  #openFeed(tableIndex: number): void {
    if (this.#frameStart < 0) fail('feed outside a frame');
    if (!(tableIndex >= 0 && tableIndex <= PUSH_INDEX_MAX)) fail('table index out of range');
    this.#closeFeed();
    this.#ensure(2);
    this.#dv.setUint16(this.pos, tableIndex, true);
    this.pos += 2;
  }

  #keyWritten(): void {
    this.#ensure(2);
    this.#valueCountAt = this.pos;
    this.#values = 0;
    this.pos += 2;
    this.#feeds++;
  }

  value(v: Value | undefined): void {
    this.#values++;
    if (typeof v === 'string') { this.str(v); return; }
    this.#ensure(9);
    const dv = this.#dv;
    const at = this.pos;
    if (typeof v === 'number') {
      // -0 is not an int32 (its sign would be lost): it rides as f64.
      if ((v | 0) === v && (v !== 0 || 1 / v > 0)) {
        dv.setUint8(at, TAG_I32);
        dv.setInt32(at + 1, v, true);
        this.pos = at + 5;
      } else {
        dv.setUint8(at, TAG_F64);
        dv.setFloat64(at + 1, v, true);
        this.pos = at + 9;
      }
      return;
    }
    dv.setUint8(at, v === undefined ? TAG_ABSENT : v === null ? TAG_NULL : v ? TAG_TRUE : TAG_FALSE);
    this.pos = at + 1;
  }

  /** value() of the string of the ASCII bytes b[from, to): the same bytes, without the string. */
  valueAscii(b: Uint8Array, from: number, to: number): void {
    this.#values++;
    this.#ascii(b, from, to);
  }

  #ascii(src: Uint8Array, from: number, to: number): void {
    const n = to - from;
    this.#ensure(5 + n);
    const b = this.buf;
    const at = this.pos;
    b[at] = TAG_STR_ASCII;
    this.#dv.setUint32(at + 1, n, true);
    if (n <= ASCII_LOOP_UNITS_MAX) for (let i = 0; i < n; i++) b[at + 5 + i] = src[from + i];
    else b.set(src.subarray(from, to), at + 5);
    this.pos = at + 5 + n;
  }

  /** A string value (tag, u32 byte length, bytes). */
  str(s: string): void {
    const n = s.length;
    this.#ensure(5 + UTF8_BYTES_PER_UNIT_MAX * n);
    const b = this.buf;
    const at = this.pos;
    if (n <= ASCII_LOOP_UNITS_MAX) {
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        b[at + 5 + i] = c;
      }
      if (i === n) {
        b[at] = TAG_STR_ASCII;
        this.#dv.setUint32(at + 1, n, true);
        this.pos = at + 5 + n;
        return;
      }
    }
    let bytes = b.write(s, at + 5);
    let tag = TAG_STR_ASCII;
    if (bytes !== n) {
      tag = TAG_STR_UTF8;
      if (!wellFormed(s)) {
        this.#ensure(5 + 2 * n);
        bytes = this.buf.write(s, at + 5, 'utf16le');
        tag = TAG_STR_UTF16;
      }
    }
    this.buf[at] = tag;
    this.#dv.setUint32(at + 1, bytes, true);
    this.pos = at + 5 + bytes;
  }

  /**
   * Closes the PUSH frame (crc left 0: the shard seals it). Returns its byte length,
   * or -1 when its record would pass RECORD_BYTES_MAX: the frame is dropped then (the
   * push is refused; a derived row, or one value read by many tables, can make a
   * record larger than the body that was pushed).
   */
  end(): number {
    if (this.#frameStart < 0) fail('end outside a frame');
    this.#closeFeed();
    this.#dv.setUint16(this.#feedCountAt, this.#feeds, true);
    return this.#close();
  }

  /** An INSTALL frame (crc left 0): its place among the pushes is its place in the WAL. */
  install(lsn: number, registryVersion: number): void {
    assert(this.#frameStart < 0, 'install inside a frame');
    this.#ensure(PAYLOAD_OFFSET + VERSION_PAYLOAD_BYTES);
    const start = this.pos;
    this.#frameStart = start;
    this.buf[start + FRAME_LENGTH_CRC_BYTES] = RECORD_TYPE_INSTALL;
    writeU64(this.buf, lsn, start + PAYLOAD_OFFSET);
    this.buf.writeUInt32LE(registryVersion, start + PAYLOAD_OFFSET + 8);
    this.pos = start + PAYLOAD_OFFSET + VERSION_PAYLOAD_BYTES;
    this.#close();
  }

  /**
   * A FORGET frame (crc left 0; layout in forget_record.ts): entity `keys[i]` of
   * table index `tables[i]` under `registryVersion`; `everyKey` is the key as the
   * caller sent it (JSON text) when the forget named every table, else null.
   */
  forget(lsn: number, timeMs: number, registryVersion: number, tables: readonly number[], keys: readonly string[], everyKey: string | null): void {
    if (this.#frameStart >= 0) fail('forget inside a frame');
    if (tables.length !== keys.length || tables.length > PUSH_INDEX_MAX) fail('one key per table, at most PUSH_INDEX_MAX');
    this.#ensure(PAYLOAD_OFFSET + FORGET_FIXED_BYTES);
    const start = this.pos;
    this.#frameStart = start;
    const dv = this.#dv;
    dv.setUint8(start + FRAME_LENGTH_CRC_BYTES, RECORD_TYPE_FORGET);
    const p = start + PAYLOAD_OFFSET;
    dv.setUint32(p, lsn >>> 0, true);
    dv.setUint32(p + 4, Math.floor(lsn / TWO_POW_32), true);
    dv.setUint32(p + 8, timeMs >>> 0, true);
    dv.setUint32(p + 12, Math.floor(timeMs / TWO_POW_32), true);
    dv.setUint32(p + 16, registryVersion, true);
    dv.setUint8(p + 20, everyKey === null ? 0 : FORGET_EVERY_TABLE);
    dv.setUint16(p + 21, tables.length, true);
    this.pos = p + FORGET_FIXED_BYTES;
    for (let i = 0; i < tables.length; i++) {
      if (!(tables[i] >= 0 && tables[i] <= PUSH_INDEX_MAX)) fail('table index out of range');
      this.#ensure(2);
      this.#dv.setUint16(this.pos, tables[i], true);
      this.pos += 2;
      this.str(keys[i]);
    }
    if (everyKey !== null) this.str(everyKey);
    this.#close();
  }

  /** An INSTALL frame ahead of every frame written so far (a registry re-installed on a replaced shard thread). */
  prependInstall(lsn: number, registryVersion: number): void {
    assert(this.#frameStart < 0, 'prependInstall inside a frame');
    const used = this.pos;
    const size = PAYLOAD_OFFSET + VERSION_PAYLOAD_BYTES;
    this.#ensure(size);
    this.buf.copyWithin(size, 0, used);
    this.pos = 0;
    this.install(lsn, registryVersion);
    this.pos = used + size;
  }

  /** Drops the frame being written (the push was refused after it began). */
  abort(): void {
    if (this.#frameStart < 0) return;
    this.pos = this.#frameStart;
    this.#frameStart = -1;
    this.#valueCountAt = -1;
  }

  /** Drops the whole frames written from byte `pos` on (a push refused after its other shards' frames were written). */
  dropFrom(pos: number): void {
    assert(this.#frameStart < 0 && pos <= this.pos, 'dropFrom inside a frame');
    this.pos = pos;
  }

  #close(): number {
    const start = this.#frameStart;
    const length = this.pos - start - FRAME_LENGTH_CRC_BYTES;
    if (length > RECORD_BYTES_MAX) {
      this.abort();
      return -1;
    }
    this.#dv.setUint32(start, length, true);
    this.#dv.setUint32(start + 4, 0, true);
    this.#frameStart = -1;
    return this.pos - start;
  }

  #closeFeed(): void {
    if (this.#valueCountAt < 0) return;
    if (this.#values > PUSH_INDEX_MAX) fail('too many values in a feed');
    this.#dv.setUint16(this.#valueCountAt, this.#values, true);
    this.#valueCountAt = -1;
  }

  #ensure(extra: number): void {
    const need = this.pos + extra;
    if (need <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const grown = Buffer.allocUnsafeSlow(cap);
    this.buf.copy(grown, 0, 0, this.pos);
    this.#setBuf(grown);
  }

  #setBuf(b: Buffer): void {
    this.buf = b;
    this.#dv = new DataView(b.buffer, b.byteOffset, b.length);
  }
}

/** A broken writer invariant (a bug in the caller): thrown like assert() would. */
function fail(message: string): never {
  throw new assert.AssertionError({ message });
}

/** No lone surrogate (String#isWellFormed, which ES2022's typings lack). */
export function wellFormed(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c > 0xdbff) return false;
    const d = s.charCodeAt(i + 1);
    if (!(d >= 0xdc00 && d <= 0xdfff)) return false;
    i++;
  }
  return true;
}

/**
 * Little-endian reads by byte arithmetic: Buffer#readUInt32LE and friends check
 * their arguments on every call, which showed as ~10% of replay CPU. Callers stay
 * inside a record that was bounds-checked (wellFormed) or written by the writer.
 */
function u16(b: Uint8Array, at: number): number {
  return b[at] | (b[at + 1] << 8);
}

/** Fills in the crc of the frame at `start` (written by PushFrameWriter); returns the offset after it. */
export function sealFrame(buf: Buffer, start: number): number {
  const end = start + FRAME_LENGTH_CRC_BYTES + readU32(buf, start);
  buf.writeUInt32LE(crc32c(buf, start + FRAME_LENGTH_CRC_BYTES, end), start + 4);
  return end;
}

/** Offset after the frame at `start`. */
export function frameEnd(buf: Buffer, start: number): number {
  return start + FRAME_LENGTH_CRC_BYTES + readU32(buf, start);
}

/**
 * Walks a PUSH payload (`body` = offset of the type byte, `end` one past the
 * payload): every inner length must land exactly on `end`. Allocates nothing.
 */
export function pushWellFormed(buf: Buffer, body: number, end: number): boolean {
  let p = body + FRAME_TYPE_BYTES;
  if (end - p < PUSH_FIXED_BYTES) return false;
  if (!u64Safe(buf, p) || !u64Safe(buf, p + 8)) return false;
  const flags = buf[p + FLAGS_AT];
  if ((flags & ~FLAG_DEDUPE) !== 0) return false;
  p += FLAGS_AT + 1;
  if ((flags & FLAG_DEDUPE) !== 0) {
    p = skipStr(buf, p, end);
    if (p < 0) return false;
  }
  if (p + 2 > end) return false;
  const feeds = u16(buf, p);
  p += 2;
  for (let f = 0; f < feeds; f++) {
    if (p + 2 > end) return false;
    p = skipStr(buf, p + 2, end);
    if (p < 0 || p + 2 > end) return false;
    const values = u16(buf, p);
    p += 2;
    for (let v = 0; v < values; v++) {
      p = skipValue(buf, p, end);
      if (p < 0) return false;
    }
  }
  return p === end;
}

/** Offset after the str at `p` (tag, u32 length, bytes), or -1 when it is not one that ends by `end`. */
export function skipStr(buf: Buffer, p: number, end: number): number {
  if (p + 5 > end) return -1;
  const tag = buf[p];
  if (tag !== TAG_STR_ASCII && tag !== TAG_STR_UTF8 && tag !== TAG_STR_UTF16) return -1;
  const n = readU32(buf, p + 1);
  return p + 5 + n <= end ? p + 5 + n : -1;
}

function skipValue(buf: Buffer, p: number, end: number): number {
  if (p >= end) return -1;
  const tag = buf[p];
  if (tag > TAG_MAX) return -1;
  if (tag <= TAG_TRUE) return p + 1;
  if (tag === TAG_I32) return p + 5 <= end ? p + 5 : -1;
  if (tag === TAG_F64) return p + 9 <= end ? p + 9 : -1;
  return skipStr(buf, p, end);
}

/**
 * Reads one PUSH payload front to back. One instance per shard, reused: open()
 * reads the fixed part, then feeds are read in order (feedTable, key, value...).
 * The caller checked the record (WAL_CODEC.wellFormed on replay; live records
 * come from the front's writer).
 */
/**
 * What Buffer#toString(encoding, start, end) calls after checking its arguments:
 * Node's Buffer has these methods, @types/node does not declare them. Calling them
 * directly saved about 5% of replay CPU (the argument checks of toString showed
 * in the profile of bench/recovery.ts).
 */
interface SliceBuffer {
  latin1Slice(start: number, end: number): string;
  utf8Slice(start: number, end: number): string;
  ucs2Slice(start: number, end: number): string;
}

/** The string of `len` bytes at `from` of `b` written under str tag `tag` (the writer's str()). */
export function strOf(b: Buffer, from: number, len: number, tag: number): string {
  const sl = b as unknown as SliceBuffer;
  return tag === TAG_STR_ASCII ? sl.latin1Slice(from, from + len) : tag === TAG_STR_UTF8 ? sl.utf8Slice(from, from + len) : sl.ucs2Slice(from, from + len);
}

export class PushRecordReader {
  buf: Buffer = Buffer.alloc(0);
  p = 0;
  lsn = 0;
  timeMs = 0;
  registryVersion = 0;
  eventIndex = 0;
  /** The dedupe value, or null. */
  dedupe: string | null = null;
  feedCount = 0;

  /** `body` = offset of the type byte. */
  open(buf: Buffer, body: number): void {
    assert(buf[body] === RECORD_TYPE_PUSH, 'not a PUSH record');
    this.buf = buf;
    const p = body + FRAME_TYPE_BYTES;
    this.lsn = readU64(buf, p);
    this.timeMs = readU64(buf, p + 8);
    this.registryVersion = readU32(buf, p + 16);
    this.eventIndex = u16(buf, p + 20);
    this.p = p + FLAGS_AT + 1;
    this.dedupe = (buf[p + FLAGS_AT] & FLAG_DEDUPE) !== 0 ? this.str() : null;
    this.feedCount = u16(buf, this.p);
    this.p += 2;
  }

  /** Table index of the next feed; its key (str()) and values follow. */
  u16(): number {
    const v = u16(this.buf, this.p);
    this.p += 2;
    return v;
  }

  str(): string {
    this.strBytes();
    return strOf(this.buf, this.strAt, this.strLen, this.strTag);
  }

  /** Tag, offset in `buf` and byte length of the str read by the last strBytes(). */
  strTag = 0;
  strAt = 0;
  strLen = 0;

  /**
   * Steps over a str without decoding it, leaving where its bytes are in strTag,
   * strAt and strLen: a feed's key is looked up by its bytes (entity_index.ts),
   * so replay builds no key string per record.
   */
  strBytes(): void {
    const b = this.buf;
    const at = this.p;
    const n = readU32(b, at + 1);
    this.strTag = b[at];
    this.strAt = at + 5;
    this.strLen = n;
    this.p = at + 5 + n;
  }

  /**
   * When the next value is an ASCII string: steps over it as strBytes() does and
   * answers true (the shard looks it up by its bytes, shard/state/intern.ts); otherwise
   * answers false and stays put.
   */
  asciiBytes(): boolean {
    if (this.buf[this.p] !== TAG_STR_ASCII) return false;
    this.strBytes();
    return true;
  }

  value(): Value | undefined {
    const b = this.buf;
    const at = this.p;
    switch (b[at]) {
      case TAG_ABSENT: this.p = at + 1; return undefined;
      case TAG_NULL: this.p = at + 1; return null;
      case TAG_FALSE: this.p = at + 1; return false;
      case TAG_TRUE: this.p = at + 1; return true;
      case TAG_I32: this.p = at + 5; return b.readInt32LE(at + 1);
      case TAG_F64: this.p = at + 9; return b.readDoubleLE(at + 1);
      default: return this.str();
    }
  }
}
