/**
 * Byte-level input checks of the front, before any JSON is parsed.
 *
 * FrameDecoder: any split of a byte stream into chunks decodes to the same frames
 * (headers split across chunks, frames spanning many chunks, several frames in one
 * chunk), and a frame inside one chunk is a view of it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeFrame, FrameDecoder, type Frame } from '../../src/protocol/frame';
import { prng } from '../harness/prng';
import { jsonDepthExceeds, jsonTextDepthExceeds } from '../../src/util/json_depth';

function decodeAll(d: FrameDecoder): Frame[] {
  const out: Frame[] = [];
  for (;;) {
    const r = d.next();
    if (r.kind === 'need_more') return out;
    assert.equal(r.kind, 'frame');
    if (r.kind === 'frame') out.push(r.frame);
  }
}

test('random chunkings of a pipelined stream decode to the frames that were encoded', () => {
  const next = prng(11);
  const rng = { int: (n: number): number => Math.floor(next() * n) };
  for (let round = 0; round < 50; round++) {
    const frames = Array.from({ length: 1 + rng.int(20) }, (_, i) => encodeFrame(i, Buffer.alloc(rng.int(3000), i & 0xff)));
    const stream = Buffer.concat(frames);
    const d = new FrameDecoder(1 << 20);
    const got: Frame[] = [];
    for (let off = 0; off < stream.length;) {
      const n = 1 + rng.int(rng.int(2) === 0 ? 5 : 2000);
      d.push(stream.subarray(off, off + n));
      off += n;
      got.push(...decodeAll(d));
    }
    assert.equal(d.pendingBytes, 0);
    assert.equal(d.framesDecoded, frames.length);
    assert.equal(got.length, frames.length);
    got.forEach((f, i) => {
      assert.equal(f.op, i);
      assert.ok(f.payload.equals(frames[i].subarray(7)));
    });
  }
});

test('a 4 MiB frame in 4 KiB chunks: need_more until the last byte, then one frame', () => {
  const frame = encodeFrame(0x10, Buffer.alloc(4 * 1024 * 1024 - 3, 0x61));
  const d = new FrameDecoder(4 * 1024 * 1024);
  for (let off = 0; off < frame.length; off += 4096) {
    if (off > 0) assert.equal(d.next().kind, 'need_more');
    d.push(frame.subarray(off, off + 4096));
  }
  const r = d.next();
  assert.equal(r.kind, 'frame');
  if (r.kind === 'frame') assert.ok(r.frame.payload.equals(frame.subarray(7)));
  assert.equal(d.pendingBytes, 0);
});

test('a frame inside one chunk is a view of the chunk (no copy); oversize and short lengths are reported from the header alone', () => {
  const chunk = Buffer.concat([encodeFrame(1, 'abc'), encodeFrame(2, 'de')]);
  const d = new FrameDecoder(100);
  d.push(chunk);
  const r = d.next();
  assert.equal(r.kind, 'frame');
  if (r.kind === 'frame') assert.equal(r.frame.payload.buffer, chunk.buffer);
  const big = new FrameDecoder(10);
  const h = Buffer.alloc(2);
  big.push(Buffer.from([0, 0]));
  assert.equal(big.next().kind, 'need_more');
  h.writeUInt16BE(200);
  big.push(h);
  assert.deepEqual(big.next(), { kind: 'too_large', declared: 200, limit: 13 });
  const short = new FrameDecoder(10);
  short.push(Buffer.from([0, 0, 0, 2]));
  assert.deepEqual(short.next(), { kind: 'bad_length', declared: 2 });
});

test('jsonTextDepthExceeds agrees with jsonDepthExceeds on the parsed value (brackets and escapes inside strings are not nesting)', () => {
  const next = prng(7);
  const int = (n: number): number => Math.floor(next() * n);
  const strings = ['"[["', '"\\\\"', '"\\"[{"', '"a\\\\\\"]"', '"{}"', '""'];
  const gen = (d: number): string => {
    const k = int(d > 12 ? 2 : 5);
    if (k === 0) return strings[int(strings.length)];
    if (k === 1) return String(int(100));
    if (k === 2 || k === 3) return `[${Array.from({ length: int(3) }, () => gen(d + 1)).join(',')}]`;
    return `{${Array.from({ length: int(3) }, (_, i) => `"k${i}":${gen(d + 1)}`).join(',')}}`;
  };
  for (let i = 0; i < 2000; i++) {
    const text = gen(0);
    const max = 1 + int(8);
    assert.equal(jsonTextDepthExceeds(text, max), jsonDepthExceeds(JSON.parse(text), max), `${text} max ${max}`);
  }
  const deep = `{"a":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}}`;
  assert.equal(jsonTextDepthExceeds(deep, 64), true);
  assert.equal(jsonTextDepthExceeds(`{"s":"${'['.repeat(1000)}"}`, 64), false);
});
