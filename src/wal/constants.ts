/**
 * Named sizes of the durability library's byte layout (units last). Its limits
 * (record and segment sizes, buffers, snapshots kept) are in src/limits.ts with
 * every other limit, and re-exported here under the library's names.
 */
import { strict as assert } from 'node:assert';
import { SNAPSHOT_KEEP_DEFAULT, WAL_RECORD_BYTES_MAX, WAL_SEGMENT_BYTES_MAX_DEFAULT, WAL_STAGING_BYTES_INITIAL } from '../limits';

/** Frame header: u32 LE length + u32 LE crc32c. The type byte is counted in `length`. */
export const FRAME_HEADER_BYTES = 8;
/** The u8 type that opens every frame body (it is covered by the crc). */
export const FRAME_TYPE_BYTES = 1;

/** Largest `length` field accepted (type + payload): 16 MiB - 1, top byte 0x00 (src/limits.ts says why). */
export const RECORD_BYTES_MAX = WAL_RECORD_BYTES_MAX;

/** Record types (u8). 6..15 are reserved for future WAL records; 16+ for other logs. */
export const RECORD_TYPE_EVENT = 1;
export const RECORD_TYPE_INSTALL = 2;
export const RECORD_TYPE_RESET = 3;
/** One push as its shard applies it: registry indexes, key and typed values (push_record.ts). */
export const RECORD_TYPE_PUSH = 4;
/**
 * The first frame of every segment this version writes: the highest lsn the shard
 * had before the segment (0: none, its history starts here). Not in the lsn
 * sequence; recovery uses it to prove that nothing between two segments is missing.
 */
export const RECORD_TYPE_SEGMENT = 5;
/** Registry log entries: the payload is UTF-8 JSON and carries no lsn. */
export const RECORD_TYPE_JSON = 16;

/**
 * EVENT payload fixed part: u64 lsn, u64 timeMs, u32 registryVersion, u16 event
 * name bytes, then the name, then u32 row bytes and the row JSON.
 */
export const EVENT_FIXED_BYTES = 8 + 8 + 4 + 2 + 4;
/** INSTALL and RESET payload: u64 lsn + u32 registryVersion. */
export const VERSION_PAYLOAD_BYTES = 8 + 4;
/** SEGMENT payload: u64 lsn the segment follows. */
export const SEGMENT_PAYLOAD_BYTES = 8;
/** A whole SEGMENT frame: a segment of this size or less holds no record. */
export const SEGMENT_HEADER_FRAME_BYTES = FRAME_HEADER_BYTES + FRAME_TYPE_BYTES + SEGMENT_PAYLOAD_BYTES;
/** Event names are short identifiers; u16 is the on-disk bound. */
export const EVENT_NAME_BYTES_MAX = 0xffff;

/** Default segment rotation size (the default of --wal-segment-bytes). */
export const SEGMENT_BYTES_MAX_DEFAULT = WAL_SEGMENT_BYTES_MAX_DEFAULT;
/** First capacity of a RecordEncoder staging buffer; it doubles on demand. */
export const STAGING_BYTES_INITIAL = WAL_STAGING_BYTES_INITIAL;
/** Width of the zero-padded lsn in segment and snapshot file names. */
export const LSN_DIGITS = 20;

/** Snapshot files. */
export const SNAPSHOT_MAGIC = 'SFSNAP01';
/** File version written: 2 = the body as a run of lz4 blocks (snapshot.ts); 1 = one lz4 block. */
export const SNAPSHOT_FORMAT_VERSION = 2;
/** File versions read (1: written before streamed snapshots). */
export const SNAPSHOT_FORMAT_VERSIONS_READ: readonly number[] = [1, 2];
export const SNAPSHOT_HEADER_BYTES = 64;
/** How many verified snapshots writeSnapshot keeps by default. */
export { SNAPSHOT_KEEP_DEFAULT };

/** Suffix of files that are being written and are not yet part of the store. */
export const TMP_SUFFIX = '.tmp';

assert(STAGING_BYTES_INITIAL > FRAME_HEADER_BYTES + FRAME_TYPE_BYTES + EVENT_FIXED_BYTES);
assert(SNAPSHOT_MAGIC.length === 8);
