import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashString32, hashValue, hashLo, hashHi } from '../../../src/ops/sketch';
import { hashBytes32 } from '../../../src/ops/sketch/hash';
import { Prng } from './prng';

/** Byte-wise MurmurHash3 x86_32, written from the reference C code, as the oracle. */
function murmur3Bytes(b: Uint8Array, seed: number): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed | 0;
  const nblocks = b.length >> 2;
  const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r));
  for (let i = 0; i < nblocks; i++) {
    const j = i * 4;
    let k = b[j] | (b[j + 1] << 8) | (b[j + 2] << 16) | (b[j + 3] << 24);
    k = Math.imul(rotl(Math.imul(k, c1), 15), c2);
    h = rotl(h ^ k, 13);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const t = nblocks * 4;
  const rest = b.length & 3;
  if (rest > 0) {
    let k = 0;
    for (let i = rest - 1; i >= 0; i--) k ^= b[t + i] << (8 * i);
    k = Math.imul(rotl(Math.imul(k, c1), 15), c2);
    h ^= k;
  }
  h ^= b.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

test('the byte oracle matches published murmur3 x86_32 vectors', () => {
  const enc = (s: string) => new Uint8Array(Buffer.from(s, 'latin1'));
  assert.equal(murmur3Bytes(enc(''), 0), 0);
  assert.equal(murmur3Bytes(enc(''), 1), 0x514e28b7);
  assert.equal(murmur3Bytes(enc(''), 0xffffffff), 0x81f16f39);
  assert.equal(murmur3Bytes(enc('\xff\xff\xff\xff'), 0), 0x76293b50);
  assert.equal(murmur3Bytes(enc('!Ce\x87'), 0), 0xf55b516b);
  assert.equal(murmur3Bytes(enc('!Ce'), 0), 0x7e4a8634);
  assert.equal(murmur3Bytes(enc('Hello, world!'), 1234), 0xfaf6cdb3);
  assert.equal(murmur3Bytes(enc('The quick brown fox jumps over the lazy dog'), 0x9747b28c), 0x2fa826cd);
});

test('hashString32 equals murmur3 over the UTF-16LE bytes', () => {
  const rng = new Prng(7);
  for (let i = 0; i < 2000; i++) {
    const s = i === 0 ? '' : rng.string(40) + (i % 3 === 0 ? '\ud83d\ude00' : '');
    const seed = rng.int(0x7fffffff);
    const want = murmur3Bytes(new Uint8Array(Buffer.from(s, 'utf16le')), seed);
    assert.equal(hashString32(s, seed), want, `seed 7, case ${i}: ${JSON.stringify(s)}`);
  }
});

test('hashBytes32 equals murmur3 over the bytes it is given, wherever they sit in the buffer', () => {
  const rng = new Prng(11);
  for (let i = 0; i < 2000; i++) {
    const len = rng.int(40);
    const pad = rng.int(8);
    const buf = new Uint8Array(pad + len + rng.int(8));
    for (let j = 0; j < buf.length; j++) buf[j] = rng.int(256);
    const seed = rng.int(0x7fffffff);
    assert.equal(hashBytes32(buf, pad, len, seed), murmur3Bytes(buf.subarray(pad, pad + len), seed), `seed 11, case ${i}`);
  }
  const s = 'The quick brown fox';
  assert.equal(hashBytes32(Buffer.from(s, 'utf16le'), 0, 2 * s.length, 99), hashString32(s, 99));
});

test('hashValue separates types and keeps SameValueZero equality', () => {
  assert.notEqual(hashValue('5'), hashValue(5));
  assert.notEqual(hashValue('true'), hashValue(true));
  assert.notEqual(hashValue(1), hashValue(true));
  assert.notEqual(hashValue(0), hashValue(false));
  assert.notEqual(hashValue(''), hashValue(0));
  assert.notEqual(hashValue(true), hashValue(false));
  assert.equal(hashValue(0), hashValue(-0));
  assert.equal(hashValue(NaN), hashValue(Number('x')));
  assert.notEqual(hashValue(1), hashValue(1 + Number.EPSILON));
  // "a" and "a\0" differ (odd tail vs a padded block).
  assert.notEqual(hashValue('a'), hashValue('a\0'));
});

test('hashValue is a pinned, deterministic 53-bit function', () => {
  // Pinned outputs: a change here changes every saved sketch, so it must be deliberate.
  const pins: [string | number | boolean, number][] = [
    ['', hashValue('')],
    ['a', hashValue('a')],
    [5, hashValue(5)],
    [true, hashValue(true)],
  ];
  for (const [v, h] of pins) {
    assert.ok(Number.isSafeInteger(h) && h >= 0, `hash of ${String(v)} is a 53-bit integer`);
    assert.equal(hashValue(v), h);
  }
  assert.deepEqual(
    pins.map(([, h]) => h),
    PINNED,
  );
});

const PINNED = [1064990368117601, 5700804273512426, 8115701485779352, 3692599004154431];

test('hashValue bits are uniform and collision-free on structured inputs', () => {
  const n = 200_000;
  const seen = new Set<number>();
  const lowBuckets = new Float64Array(256);
  const highBuckets = new Float64Array(256);
  for (let i = 0; i < n; i++) {
    const h = i % 2 === 0 ? hashValue(i) : hashValue('user-' + i);
    assert.ok(Number.isSafeInteger(h) && h >= 0);
    seen.add(h);
    lowBuckets[hashLo(h) & 255]++;
    highBuckets[hashHi(h) >>> 13]++;
  }
  assert.equal(seen.size, n, 'no collisions among 200k values');
  // Chi-square with 255 degrees of freedom: mean 255, sd ~22.6; 400 is > 6 sd.
  for (const buckets of [lowBuckets, highBuckets]) {
    const e = n / 256;
    let chi = 0;
    for (let i = 0; i < 256; i++) chi += ((buckets[i] - e) * (buckets[i] - e)) / e;
    assert.ok(chi < 400, `chi-square ${chi.toFixed(1)} over 256 buckets`);
  }
});
