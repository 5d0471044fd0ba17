/**
 * What both hand-off variants of bench/handoff.ts do on the shard side, and the
 * ring's control slots: decode every PUSH record of a batch (the shard's apply
 * minus the op updates), so the comparison is about moving bytes between threads.
 */
import { FRAME_LENGTH_CRC_BYTES } from '../src/wal/constants';
import { frameEnd, PushRecordReader } from '../src/wal/push_record';

/** Int32 slots of the ring's control array. */
export const CTRL_PRODUCED = 0;
export const CTRL_CONSUMED = 1;
export const CTRL_STOP = 2;
export const CTRL_SLOTS = 4;
/** Ring size: a power of two far above SHARD_BATCHES_IN_FLIGHT_MAX batches of 512 records. */
export const RING_BYTES = 16 * 1024 * 1024;

const reader = new PushRecordReader();

/** Decodes every frame of buf[start, end); returns a checksum so the work is not optimised away. */
export function walk(buf: Buffer, start: number, end: number): number {
  let sum = 0;
  for (let p = start; p < end; p = frameEnd(buf, p)) {
    reader.open(buf, p + FRAME_LENGTH_CRC_BYTES);
    for (let f = reader.feedCount; f > 0; f--) {
      sum += reader.u16();
      sum += reader.str().length;
      for (let n = reader.u16(); n > 0; n--) {
        const v = reader.value();
        sum += typeof v === 'number' ? 1 : typeof v === 'string' ? v.length : 0;
      }
    }
  }
  return sum;
}
