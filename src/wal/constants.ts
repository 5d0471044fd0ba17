/**
 * Named sizes of the durability library's byte layout (units last). Its limits
 * (record and segment sizes, buffers, snapshots kept) are in src/limits.ts with
 * every other limit, and re-exported here under the library's names.
 */
import { strict as assert } from 'node:assert';
import { WAL_RECORD_BYTES_MAX, WAL_SEGMENT_BYTES_MAX_DEFAULT, WAL_STAGING_BYTES_INITIAL } from '../limits';

/** A WAL frame's header: u32 LE length + u32 LE crc32c. The type byte is counted in `length`. */
export const FRAME_LENGTH_CRC_BYTES = 8;
/** The u8 type that opens every frame body (it is covered by the crc). */
export const FRAME_TYPE_BYTES = 1;

/** Largest `length` field accepted (type + payload): 16 MiB - 1, top byte 0x00 (src/limits.ts says why). */
export const RECORD_BYTES_MAX = WAL_RECORD_BYTES_MAX;

/**
 * Record types (u8) of data format 1 (docs/durability.md "Formats"). 6..15 are
 * reserved for future WAL records; 16+ for other logs.
 */
/** One push as its shard applies it: registry indexes, key and typed values (push_record.ts). */
export const RECORD_TYPE_PUSH = 1;
export const RECORD_TYPE_INSTALL = 2;
export const RECORD_TYPE_RESET = 3;
/**
 * The first frame of every segment: the highest lsn the shard had before the
 * segment (0: none, its history starts here). Not in the lsn sequence; recovery
 * uses it to prove that nothing between two segments is missing.
 */
export const RECORD_TYPE_SEGMENT = 4;
/**
 * Entity keys removed by a forget request: per table of the record's registry
 * version, the canonical key; replay removes them where they are, hot or frozen
 * (forget_record.ts, docs/durability.md "Forgetting an entity").
 */
export const RECORD_TYPE_FORGET = 5;
/** Registry log entries: the payload is UTF-8 JSON and carries no lsn. */
export const RECORD_TYPE_JSON = 16;

/** INSTALL and RESET payload: u64 lsn + u32 registryVersion. */
export const VERSION_PAYLOAD_BYTES = 8 + 4;
/** FORGET payload fixed part: u64 lsn, u64 timeMs, u32 registryVersion, u8 flags, u16 entry count. */
export const FORGET_FIXED_BYTES = 8 + 8 + 4 + 1 + 2;
/** FORGET flags bit: the forget named every table; the caller's key (JSON text) follows the entries. */
export const FORGET_EVERY_TABLE = 1;
/** SEGMENT payload: u64 lsn the segment follows. */
export const SEGMENT_PAYLOAD_BYTES = 8;
/** A whole SEGMENT frame: a segment of this size or less holds no record. */
export const SEGMENT_HEADER_FRAME_BYTES = FRAME_LENGTH_CRC_BYTES + FRAME_TYPE_BYTES + SEGMENT_PAYLOAD_BYTES;

/** Default segment rotation size (the default of --wal-segment-bytes). */
export const SEGMENT_BYTES_MAX_DEFAULT = WAL_SEGMENT_BYTES_MAX_DEFAULT;
/** First capacity of a RecordEncoder staging buffer; it doubles on demand. */
export const STAGING_BYTES_INITIAL = WAL_STAGING_BYTES_INITIAL;
/** Width of the zero-padded lsn in segment and snapshot file names. */
export const LSN_DIGITS = 20;

/** Snapshot files. */
export const SNAPSHOT_MAGIC = 'SFSNAP01';
/** Snapshot file version (data format 1, docs/durability.md "Formats"): the body as a run of lz4 blocks (snapshot.ts). */
export const SNAPSHOT_FORMAT_VERSION = 1;
export const SNAPSHOT_HEADER_BYTES = 64;

/** Suffix of files that are being written and are not yet part of the store. */
export const TMP_SUFFIX = '.tmp';

assert(STAGING_BYTES_INITIAL > FRAME_LENGTH_CRC_BYTES + FRAME_TYPE_BYTES + VERSION_PAYLOAD_BYTES);
assert(SNAPSHOT_MAGIC.length === 8);
