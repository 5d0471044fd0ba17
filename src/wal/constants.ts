/**
 * Named sizes and limits of the durability library (units last). They live here
 * rather than in src/limits.ts because nothing outside src/wal/ depends on the
 * byte layout; the relations to the server-wide limits are asserted at the bottom.
 */
import { strict as assert } from 'node:assert';
import { HTTP_BODY_BYTES_MAX, TCP_FRAME_BYTES_MAX_DEFAULT } from '../limits';

/** Frame header: u32 LE length + u32 LE crc32c. The type byte is counted in `length`. */
export const FRAME_HEADER_BYTES = 8;
/** The u8 type that opens every frame body (it is covered by the crc). */
export const FRAME_TYPE_BYTES = 1;

/**
 * Largest `length` field accepted (type + payload): 16 MiB - 1, the largest value
 * whose top byte is 0x00. JSON text never holds a raw NUL, so a row can never
 * smuggle a valid-looking frame header into the log; this is what makes
 * resynchronisation after corruption safe (recover.ts). A derived row can be larger
 * than the pushed body (with_columns copies values): we allow three bodies of headroom.
 */
export const RECORD_BYTES_MAX = 2 ** 24 - 1;

/** Record types (u8). 5..15 are reserved for future WAL records; 16+ for other logs. */
export const RECORD_TYPE_EVENT = 1;
export const RECORD_TYPE_INSTALL = 2;
export const RECORD_TYPE_RESET = 3;
/** One push as its shard applies it: registry indexes, key and typed values (push_record.ts). */
export const RECORD_TYPE_PUSH = 4;
/** Registry log entries: the payload is UTF-8 JSON and carries no lsn. */
export const RECORD_TYPE_JSON = 16;

/**
 * EVENT payload fixed part: u64 lsn, u64 timeMs, u32 registryVersion, u16 event
 * name bytes, then the name, then u32 row bytes and the row JSON.
 */
export const EVENT_FIXED_BYTES = 8 + 8 + 4 + 2 + 4;
/** INSTALL and RESET payload: u64 lsn + u32 registryVersion. */
export const VERSION_PAYLOAD_BYTES = 8 + 4;
/** Event names are short identifiers; u16 is the on-disk bound. */
export const EVENT_NAME_BYTES_MAX = 0xffff;

/** Default segment rotation size. */
export const SEGMENT_BYTES_MAX_DEFAULT = 64 * 1024 * 1024;
/** First capacity of a RecordEncoder staging buffer; it doubles on demand. */
export const STAGING_BYTES_INITIAL = 64 * 1024;
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
export const SNAPSHOT_KEEP_DEFAULT = 2;

/** Suffix of files that are being written and are not yet part of the store. */
export const TMP_SUFFIX = '.tmp';

assert(RECORD_BYTES_MAX < 2 ** 24, 'a valid length must have a zero top byte (see RECORD_BYTES_MAX)');
assert(RECORD_BYTES_MAX >= 3 * HTTP_BODY_BYTES_MAX, 'a derived row of a maximal push must fit one record');
assert(RECORD_BYTES_MAX >= 3 * TCP_FRAME_BYTES_MAX_DEFAULT, 'a derived row of a maximal frame must fit one record');
assert(STAGING_BYTES_INITIAL > FRAME_HEADER_BYTES + FRAME_TYPE_BYTES + EVENT_FIXED_BYTES);
assert(SNAPSHOT_MAGIC.length === 8);
assert(SEGMENT_BYTES_MAX_DEFAULT >= RECORD_BYTES_MAX, 'a maximal record fits an empty default segment');
