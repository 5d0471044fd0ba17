import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc32c } from '../../../src/wal';
import { prng } from './helpers';

/** Bit-at-a-time reference implementation (no tables). */
function naiveCrc32c(buf: Uint8Array, start = 0, end = buf.length): number {
  let crc = 0xffffffff;
  for (let i = start; i < end; i++) {
    crc ^= buf[i];
    for (let b = 0; b < 8; b++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

test('crc32c known vectors (check value and RFC 3720 B.4)', () => {
  assert.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
  assert.equal(crc32c(Buffer.alloc(0)), 0);
  assert.equal(crc32c(Buffer.alloc(32, 0x00)), 0x8a9136aa);
  assert.equal(crc32c(Buffer.alloc(32, 0xff)), 0x62a8ab43);
  const up = Buffer.alloc(32);
  const down = Buffer.alloc(32);
  for (let i = 0; i < 32; i++) {
    up[i] = i;
    down[i] = 31 - i;
  }
  assert.equal(crc32c(up), 0x46dd794e);
  assert.equal(crc32c(down), 0x113fdb5c);
});

test('crc32c matches the bitwise reference on random slices', () => {
  const seed = 0xc0ffee;
  const rnd = prng(seed);
  const buf = Buffer.alloc(300);
  for (let i = 0; i < buf.length; i++) buf[i] = Math.floor(rnd() * 256);
  for (let round = 0; round < 400; round++) {
    const start = Math.floor(rnd() * buf.length);
    const end = start + Math.floor(rnd() * (buf.length - start + 1));
    assert.equal(crc32c(buf, start, end), naiveCrc32c(buf, start, end), `seed ${seed} round ${round} [${start},${end})`);
  }
});

test('crc32c continues from a seed', () => {
  const a = Buffer.from('hello, ');
  const b = Buffer.from('world of checksums');
  assert.equal(crc32c(b, 0, b.length, crc32c(a)), crc32c(Buffer.from('hello, world of checksums')));
});
