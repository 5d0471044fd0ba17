/**
 * FORGET records (WAL type 5): entity keys a forget request removed, as one shard
 * applies them (docs/durability.md "Forgetting an entity").
 *
 *   payload: [u64 lsn][u64 timeMs][u32 registryVersion][u8 flags][u16 entryCount]
 *            entryCount x entry, then [everyKey: str] when flags & FORGET_EVERY_TABLE
 *   entry:   [u16 tableIndex][key: str]
 *   str:     as in PUSH records (push_record.ts): [u8 tag][u32 bytes][bytes]
 *
 * `tableIndex` is a table of `registryVersion` (CompiledRegistry.tableList), as in a
 * PUSH record's feeds, and `key` that table's canonical key (registry/key.ts). A
 * forget reaching several shards writes one record per shard, all with the same
 * lsn, each holding the entries whose key that shard owns. `everyKey` is the key as
 * the caller sent it (JSON text), so that a reader of retained history can apply
 * the forget to a table registered after it: every FORGET record of one forget
 * carries it.
 *
 * The front writes the frame (PushFrameWriter.forget) into the shard's batch
 * bytes in the forget's place among the pushes; the shard seals, writes and
 * applies it as it does a push, and replay applies it in its place again.
 */
import { FORGET_EVERY_TABLE, FORGET_FIXED_BYTES, FRAME_TYPE_BYTES, RECORD_TYPE_FORGET } from './constants';
import { skipStr, strOf } from './push_record';
import { readU32, readU64, u64Safe } from './u64';

/** A FORGET record decoded (it is small and rare: plain arrays). */
export interface ForgetEntries {
  lsn: number;
  timeMs: number;
  registryVersion: number;
  /** Table index and canonical key of each entity, in the order written. */
  tables: number[];
  keys: string[];
  /** The caller's key as JSON text when the forget named every table, else null. */
  everyKey: string | null;
}

/** Structural check of a FORGET body (`body` = offset of the type byte, `end` one past the payload). */
export function forgetWellFormed(buf: Buffer, body: number, end: number): boolean {
  let p = body + FRAME_TYPE_BYTES;
  if (buf[body] !== RECORD_TYPE_FORGET || end - p < FORGET_FIXED_BYTES) return false;
  if (!u64Safe(buf, p) || !u64Safe(buf, p + 8)) return false;
  const flags = buf[p + 20];
  if ((flags & ~FORGET_EVERY_TABLE) !== 0) return false;
  const n = buf[p + 21] | (buf[p + 22] << 8);
  p += FORGET_FIXED_BYTES;
  for (let i = 0; i < n; i++) {
    if (p + 2 > end) return false;
    p = skipStr(buf, p + 2, end);
    if (p < 0) return false;
  }
  if ((flags & FORGET_EVERY_TABLE) !== 0) p = skipStr(buf, p, end);
  return p === end;
}

/** Reads a well-formed FORGET record whose type byte is at `buf[body]`. */
export function decodeForget(buf: Buffer, body: number): ForgetEntries {
  let p = body + FRAME_TYPE_BYTES;
  const lsn = readU64(buf, p);
  const timeMs = readU64(buf, p + 8);
  const registryVersion = readU32(buf, p + 16);
  const flags = buf[p + 20];
  const n = buf[p + 21] | (buf[p + 22] << 8);
  p += FORGET_FIXED_BYTES;
  const tables = new Array<number>(n);
  const keys = new Array<string>(n);
  const str = (): string => {
    const len = readU32(buf, p + 1);
    const s = strOf(buf, p + 5, len, buf[p]);
    p += 5 + len;
    return s;
  };
  for (let i = 0; i < n; i++) {
    tables[i] = buf[p] | (buf[p + 1] << 8);
    p += 2;
    keys[i] = str();
  }
  const everyKey = (flags & FORGET_EVERY_TABLE) !== 0 ? str() : null;
  return { lsn, timeMs, registryVersion, tables, keys, everyKey };
}
