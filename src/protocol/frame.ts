/**
 * Framed TCP codec (spec 4.8, DESIGN.md section 5). Shared by the server and the
 * client library, so it imports nothing from either.
 *
 *   0        4      6     7
 *   +--------+------+-----+-----------------+
 *   | length | op   | ct  | payload ...     |   length = 3 + payload bytes (u32 BE)
 *   +--------+------+-----+-----------------+   op u16 BE, ct u8 (0x01 JSON, 0x02 MessagePack: reserved)
 */

export const OP_PING = 0x0000;
export const OP_REGISTER = 0x0001;
/** First frame of a connection when the server requires a token: {"token": "..."}; reply op 0x0002 {"ok":true} (docs/wire.md). */
export const OP_AUTH = 0x0002;
export const OP_PUSH = 0x0010;
export const OP_PUSH_SYNC = 0x0011;
export const OP_PUSH_MANY = 0x0012;
export const OP_GET = 0x0020;
/** Reply-only: the generic JSON success frame (the peer's OP_GET_RESPONSE). As a request it is unknown_op. */
export const OP_GET_RESPONSE = 0x0023;
export const OP_BATCH_GET = 0x0024;
export const OP_SET_FIRST = 0x0030;
export const OP_SET_LAST = 0x003f;
export const OP_RESET = 0x0040;
export const OP_ERROR_RESPONSE = 0xffff;

/**
 * Opcode of the success reply to request `op` (DESIGN.md section 5): GET, BATCH_GET
 * and RESET answer with OP_GET_RESPONSE, as the peer's clients expect; every other
 * opcode is echoed (PING, REGISTER, PUSH, as the peer does).
 */
export function successOpcode(op: number): number {
  return op === OP_GET || op === OP_BATCH_GET || op === OP_RESET ? OP_GET_RESPONSE : op;
}

export const CT_JSON = 0x01;
export const CT_MSGPACK = 0x02;

/** Bytes of the length prefix. */
export const FRAME_LENGTH_BYTES = 4;
/** Bytes counted by `length` before the payload: op (2) + content type (1). */
export const FRAME_HEADER_BYTES = 3;

/** Encodes one frame into a fresh Buffer. */
export function encodeFrame(op: number, payload: string | Buffer, contentType: number = CT_JSON): Buffer {
  const bodyBytes = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
  const out = Buffer.allocUnsafe(FRAME_LENGTH_BYTES + FRAME_HEADER_BYTES + bodyBytes);
  out.writeUInt32BE(FRAME_HEADER_BYTES + bodyBytes, 0);
  out.writeUInt16BE(op, 4);
  out.writeUInt8(contentType, 6);
  if (typeof payload === 'string') out.write(payload, 7, 'utf8');
  else payload.copy(out, 7);
  return out;
}

export interface Frame {
  op: number;
  contentType: number;
  payload: Buffer;
}

export type FrameDecodeResult =
  | { kind: 'frame'; frame: Frame }
  | { kind: 'need_more' }
  | { kind: 'too_large'; declared: number; limit: number }
  | { kind: 'bad_length'; declared: number };

/**
 * Incremental decoder: push chunks, pull frames. Received chunks are kept as a
 * list and each byte is copied at most once: a frame inside one chunk is
 * returned as a view of it (node:net hands out a fresh Buffer per chunk and
 * never reuses it, so a caller that keeps a payload keeps its chunk alive), and a
 * frame spread over several chunks is copied into one buffer when its last byte
 * arrives. Appending the chunk to the partial frame on every push instead made a
 * 4 MiB frame trickled in 4 KiB chunks cost O(n^2) copying (issue 11, finding 6).
 */
export class FrameDecoder {
  /** Unconsumed chunks; the first may be a view past frames already returned. */
  #chunks: Buffer[] = [];
  #bytes = 0;
  /** Frames returned so far (the TCP front restarts its partial-frame clock when this moves). */
  framesDecoded = 0;
  readonly #payloadBytesMax: number;

  constructor(payloadBytesMax: number) {
    this.#payloadBytesMax = payloadBytesMax;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
  }

  /** Bytes received but not yet returned as frames. */
  get pendingBytes(): number {
    return this.#bytes;
  }

  /** Byte i of the unconsumed input (i < pendingBytes); headers only, so the walk is short. */
  #byteAt(i: number): number {
    for (const c of this.#chunks) {
      if (i < c.length) return c[i];
      i -= c.length;
    }
    throw new RangeError('byteAt past the buffered input');
  }

  next(): FrameDecodeResult {
    if (this.#bytes < FRAME_LENGTH_BYTES) return { kind: 'need_more' };
    const first = this.#chunks[0];
    const length = first.length >= FRAME_LENGTH_BYTES
      ? first.readUInt32BE(0)
      : ((this.#byteAt(0) << 24) | (this.#byteAt(1) << 16) | (this.#byteAt(2) << 8) | this.#byteAt(3)) >>> 0;
    if (length < FRAME_HEADER_BYTES) return { kind: 'bad_length', declared: length };
    if (length > this.#payloadBytesMax + FRAME_HEADER_BYTES) {
      return { kind: 'too_large', declared: length, limit: this.#payloadBytesMax + FRAME_HEADER_BYTES };
    }
    const total = FRAME_LENGTH_BYTES + length;
    if (this.#bytes < total) return { kind: 'need_more' };
    let frame: Buffer;
    if (first.length >= total) {
      frame = first.subarray(0, total);
      if (first.length === total) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(total);
    } else {
      frame = Buffer.allocUnsafe(total);
      const chunks = this.#chunks;
      let filled = 0;
      let used = 0;
      while (filled < total) {
        const c = chunks[used];
        const take = Math.min(c.length, total - filled);
        c.copy(frame, filled, 0, take);
        filled += take;
        if (take === c.length) used++;
        else chunks[used] = c.subarray(take);
      }
      chunks.splice(0, used);
    }
    this.#bytes -= total;
    this.framesDecoded++;
    return { kind: 'frame', frame: { op: frame.readUInt16BE(4), contentType: frame.readUInt8(6), payload: frame.subarray(7) } };
  }
}
