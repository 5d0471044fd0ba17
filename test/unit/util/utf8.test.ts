/** UTF-8 validity of request bodies (src/util/utf8.ts), against node's own decoders. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firstInvalidUtf8, isUtf8Range } from '../../../src/util/utf8';
import { prng } from '../../harness/prng';
import { UTF8_INLINE_SCAN_BYTES_MAX } from '../../../src/limits';

const FATAL = new TextDecoder('utf-8', { fatal: true });

/** The naive answer: the longest prefix a fatal decoder accepts, found by trying every end. */
function naiveFirstInvalid(b: Uint8Array): number {
  const valid = (n: number): boolean => { try { FATAL.decode(b.subarray(0, n)); return true; } catch { return false; } };
  if (valid(b.length)) return -1;
  // The first bad byte is where the valid prefixes stop growing past the last whole character.
  let good = 0;
  for (let n = 1; n <= b.length; n++) if (valid(n)) good = n;
  return good;
}

test('well-formed text of every length class is valid; the classic ill-formed sequences are not, at their first byte', () => {
  for (const s of ['', 'plain', 'caf\u00e9', '\u4e2d\u6587', '\u{1f600}', 'a\u0301', '\u{10ffff}', '\u00ff\u00fe']) {
    const b = Buffer.from(s);
    assert.equal(isUtf8Range(b, 0, b.length), true, s);
    assert.equal(firstInvalidUtf8(b, 0, b.length), -1, s);
  }
  const bad: Array<[number[], number]> = [
    [[0xff], 0], [[0xfe], 0], [[0x80], 0], [[0x41, 0xbf], 1], // bytes no UTF-8 has; a stray continuation
    [[0xc0, 0xaf], 0], [[0xc1, 0xbf], 0], [[0xe0, 0x80, 0xaf], 0], [[0xf0, 0x80, 0x80, 0xaf], 0], // overlong forms
    [[0xed, 0xa0, 0x80], 0], [[0xed, 0xbf, 0xbf], 0], // encoded surrogates
    [[0xf4, 0x90, 0x80, 0x80], 0], [[0xf5, 0x80, 0x80, 0x80], 0], // above U+10FFFF
    [[0x41, 0xe4, 0xb8], 1], [[0xe4, 0xb8, 0x41], 0], [[0xf0, 0x9f, 0x98], 0], // truncated, at the end or before ASCII
  ];
  for (const [bytes, at] of bad) {
    const b = Uint8Array.from(bytes);
    assert.equal(isUtf8Range(b, 0, b.length), false, bytes.join(','));
    assert.equal(firstInvalidUtf8(b, 0, b.length), at, bytes.join(','));
  }
});

test('a range is judged alone: bytes outside it do not count, offsets are from its start', () => {
  const b = Buffer.concat([Buffer.from([0xff]), Buffer.from('ok\u00e9'), Buffer.from([0xc3])]);
  assert.equal(isUtf8Range(b, 1, b.length - 1), true);
  assert.equal(firstInvalidUtf8(b, 1, b.length - 1), -1);
  assert.equal(isUtf8Range(b, 1, b.length), false);
  assert.equal(firstInvalidUtf8(b, 1, b.length), b.length - 2);
  // Short ASCII ranges are scanned in place, longer or non-ASCII ones go to isUtf8: both judge the range only.
  const a = Buffer.concat([Buffer.from([0xff]), Buffer.from('abc'), Buffer.from([0xfe])]);
  assert.equal(isUtf8Range(a, 1, 4), true);
  assert.equal(isUtf8Range(a, 1, 5), false);
  for (const n of [UTF8_INLINE_SCAN_BYTES_MAX, UTF8_INLINE_SCAN_BYTES_MAX + 1]) {
    const long = Buffer.concat([Buffer.from([0xff]), Buffer.alloc(n, 0x61), Buffer.from([0xfe])]);
    assert.equal(isUtf8Range(long, 1, 1 + n), true, String(n));
    long[n] = 0x80;
    assert.equal(isUtf8Range(long, 1, 1 + n), false, String(n));
  }
});

test('property: on random byte strings both agree with a fatal TextDecoder (validity and first bad offset)', () => {
  const seed = 0x5eed;
  const rnd = prng(seed);
  // Bytes biased toward UTF-8's structure, so that valid multi-byte sequences and near misses both occur.
  const pick = (): number => {
    const r = rnd();
    if (r < 0.4) return 0x20 + Math.floor(rnd() * 0x5f);
    if (r < 0.7) return 0x80 + Math.floor(rnd() * 0x40);
    if (r < 0.8) return 0xc0 + Math.floor(rnd() * 0x20);
    if (r < 0.9) return 0xe0 + Math.floor(rnd() * 0x10);
    return 0xf0 + Math.floor(rnd() * 0x10);
  };
  let valid = 0;
  for (let i = 0; i < 20_000; i++) {
    const b = Uint8Array.from({ length: 1 + Math.floor(rnd() * 12) }, pick);
    const want = naiveFirstInvalid(b);
    assert.equal(firstInvalidUtf8(b, 0, b.length), want, `seed ${seed} case ${i}: ${Buffer.from(b).toString('hex')}`);
    assert.equal(isUtf8Range(b, 0, b.length), want === -1, `seed ${seed} case ${i}: ${Buffer.from(b).toString('hex')}`);
    if (want === -1) valid++;
  }
  assert.ok(valid > 500, `enough valid cases (${valid})`);
});
