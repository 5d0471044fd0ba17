/**
 * FrameDecoder (protocol/frame.ts): the same frames come out whatever the chunking
 * (split inside a length, a header or a payload; many frames per chunk), from the
 * allocation-free decode() the TCP front uses and from next().
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CT_JSON, DECODED_BAD_LENGTH, DECODED_FRAME, DECODED_NEED_MORE, DECODED_TOO_LARGE, encodeFrame, FrameDecoder } from '../../../src/protocol/frame';

const FRAMES: Array<[number, string]> = [[0x10, '{"event":"e","data":{"k":"é"}}'], [0x00, ''], [0x20, 'x'.repeat(300)], [0xffff, '{"a":1}']];
const WIRE = Buffer.concat(FRAMES.map(([op, body]) => encodeFrame(op, body)));

/** Feeds WIRE in chunks of the given sizes (repeated), decoding after every chunk. */
function decodeChunked(sizes: number[], useNext: boolean): Array<[number, string]> {
  const d = new FrameDecoder(1024);
  const out: Array<[number, string]> = [];
  let at = 0;
  for (let i = 0; at < WIRE.length; i++) {
    const n = sizes[i % sizes.length];
    d.push(WIRE.subarray(at, at + n));
    at += n;
    for (;;) {
      if (useNext) {
        const r = d.next();
        if (r.kind === 'need_more') break;
        assert.equal(r.kind, 'frame');
        if (r.kind === 'frame') { assert.equal(r.frame.contentType, CT_JSON); out.push([r.frame.op, r.frame.payload.toString('utf8')]); }
      } else {
        const r = d.decode();
        if (r === DECODED_NEED_MORE) break;
        assert.equal(r, DECODED_FRAME);
        assert.equal(d.contentType, CT_JSON);
        out.push([d.op, d.payloadBuf.toString('utf8', d.payloadStart, d.payloadEnd)]);
      }
    }
  }
  assert.equal(d.pendingBytes, 0);
  assert.equal(d.framesDecoded, FRAMES.length);
  return out;
}

test('FrameDecoder: every chunking gives the same frames, by decode() and by next()', () => {
  const chunkings = [[WIRE.length], [1], [2], [3], [5], [7, 1], [11], [64], [4, 3, 100], [500, 1]];
  for (const sizes of chunkings) {
    assert.deepEqual(decodeChunked(sizes, false), FRAMES, `decode() with chunks ${sizes}`);
    assert.deepEqual(decodeChunked(sizes, true), FRAMES, `next() with chunks ${sizes}`);
  }
});

test('FrameDecoder: a length below the header or above the limit is reported with what was declared', () => {
  const d = new FrameDecoder(16);
  d.push(Buffer.from([0, 0, 0, 2, 0, 0]));
  assert.equal(d.decode(), DECODED_BAD_LENGTH);
  assert.equal(d.declared, 2);
  const big = new FrameDecoder(16);
  big.push(Buffer.from([0, 0]));
  assert.equal(big.decode(), DECODED_NEED_MORE);
  big.push(Buffer.from([0, 20]));
  assert.equal(big.decode(), DECODED_TOO_LARGE);
  assert.deepEqual(big.next(), { kind: 'too_large', declared: 20, limit: 19 });
});
