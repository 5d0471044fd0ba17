/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every
 * WAL frame, snapshot and registry-log record. Node 20 has no native crc32c, so
 * this is slicing-by-8: eight 256-entry tables let the loop consume 8 bytes per
 * iteration with independent lookups instead of one table step per byte.
 *
 *   table k (k = 0..7) lives at TABLE[k*256 .. k*256+255];
 *   TABLE[0] is the classic byte table; TABLE[k][i] = (TABLE[k-1][i] >>> 8) ^ TABLE[0][TABLE[k-1][i] & 0xff]
 *
 * Check value: crc32c("123456789") === 0xE3069283.
 */
import { strict as assert } from 'node:assert';

const POLYNOMIAL_REFLECTED = 0x82f63b78;
const TABLE_COUNT = 8;

const TABLE: Int32Array = buildTable();

function buildTable(): Int32Array {
  const t = new Int32Array(TABLE_COUNT * 256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let bit = 0; bit < 8; bit++) c = c & 1 ? (c >>> 1) ^ POLYNOMIAL_REFLECTED : c >>> 1;
    t[i] = c;
  }
  for (let k = 1; k < TABLE_COUNT; k++) {
    for (let i = 0; i < 256; i++) {
      const prev = t[(k - 1) * 256 + i];
      t[k * 256 + i] = (prev >>> 8) ^ t[prev & 0xff];
    }
  }
  return t;
}

/**
 * CRC-32C of `buf[start, end)`, as an unsigned 32-bit number. `seed` continues a
 * previous result (crc32c(a ++ b) === crc32c(b, 0, b.length, crc32c(a))).
 */
export function crc32c(buf: Uint8Array, start = 0, end: number = buf.length, seed = 0): number {
  assert(start >= 0, 'crc32c: negative start');
  assert(start <= end, 'crc32c: start after end');
  assert(end <= buf.length, 'crc32c: end past the buffer');
  const t = TABLE;
  let crc = ~seed;
  let i = start;
  const end8 = end - ((end - start) & 7);
  while (i < end8) {
    const a = crc ^ (buf[i] | (buf[i + 1] << 8) | (buf[i + 2] << 16) | (buf[i + 3] << 24));
    crc =
      t[1792 + (a & 0xff)] ^
      t[1536 + ((a >>> 8) & 0xff)] ^
      t[1280 + ((a >>> 16) & 0xff)] ^
      t[1024 + (a >>> 24)] ^
      t[768 + buf[i + 4]] ^
      t[512 + buf[i + 5]] ^
      t[256 + buf[i + 6]] ^
      t[buf[i + 7]];
    i += 8;
  }
  while (i < end) {
    crc = (crc >>> 8) ^ t[(crc ^ buf[i]) & 0xff];
    i++;
  }
  return ~crc >>> 0;
}
