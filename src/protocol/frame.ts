/**
 * Framed TCP codec (spec 4.8; the layout and opcodes are in docs/wire.md). Shared by the server and the
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
/** An extension of the spec: forget an entity (docs/wire.md); answered with OP_GET_RESPONSE, as RESET is. */
export const OP_FORGET = 0x0041;
export const OP_ERROR_RESPONSE = 0xffff;

/**
 * Opcode of the success reply to request `op`: GET, BATCH_GET and RESET answer with
 * OP_GET_RESPONSE, beava's generic JSON success frame, so clients written for it work
 * unchanged, and so does FORGET (an extension: the generic frame, like RESET's); every
 * other opcode is echoed (PING, REGISTER, PUSH, as beava does;
 * docs/wire.md, docs/compatibility.md).
 */
export function successOpcode(op: number): number {
  return op === OP_GET || op === OP_BATCH_GET || op === OP_RESET || op === OP_FORGET ? OP_GET_RESPONSE : op;
}

export const CT_JSON = 0x01;
export const CT_MSGPACK = 0x02;

/** Bytes of the length prefix. */
export const FRAME_LENGTH_BYTES = 4;
/** Bytes counted by `length` before the payload: op (2) + content type (1). */
export const FRAME_OP_CT_BYTES = 3;

/** Encodes one frame into a fresh Buffer. */
export function encodeFrame(op: number, payload: string | Uint8Array, contentType: number = CT_JSON): Buffer {
  const bodyBytes = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
  const out = Buffer.allocUnsafe(FRAME_LENGTH_BYTES + FRAME_OP_CT_BYTES + bodyBytes);
  out.writeUInt32BE(FRAME_OP_CT_BYTES + bodyBytes, 0);
  out.writeUInt16BE(op, 4);
  out.writeUInt8(contentType, 6);
  if (typeof payload === 'string') out.write(payload, 7, 'utf8');
  else out.set(payload, 7);
  return out;
}

const EMPTY = Buffer.alloc(0);

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

/** What FrameDecoder.decode() found. */
export const DECODED_FRAME = 0;
export const DECODED_NEED_MORE = 1;
/** The declared length (FrameDecoder.declared) is above the limit (FrameDecoder.limit). */
export const DECODED_TOO_LARGE = 2;
/** The declared length (FrameDecoder.declared) is below the 3-byte header. */
export const DECODED_BAD_LENGTH = 3;
export type Decoded = typeof DECODED_FRAME | typeof DECODED_NEED_MORE | typeof DECODED_TOO_LARGE | typeof DECODED_BAD_LENGTH;

/**
 * Incremental decoder: push chunks, pull frames. Received chunks are kept as a
 * list and each byte is copied at most once: a frame inside one chunk is
 * returned in place (node:net hands out a fresh Buffer per chunk and never
 * reuses it, so a caller that keeps a payload keeps its chunk alive), and a
 * frame spread over several chunks is copied into one buffer when its last byte
 * arrives. Appending the chunk to the partial frame on every push instead made a
 * 4 MiB frame trickled in 4 KiB chunks cost O(n^2) copying.
 *
 * decode() allocates nothing for a frame inside one chunk: it leaves the frame in
 * fields (op, contentType, payloadBuf[payloadStart, payloadEnd)), which the TCP
 * front reads for every push; next() wraps it in objects for the client and tests.
 */
export class FrameDecoder {
  /** Unconsumed chunks; the first is consumed up to #off. */
  #chunks: Buffer[] = [];
  #off = 0;
  #bytes = 0;
  /** Frames returned so far (the TCP front restarts its partial-frame clock when this moves). */
  framesDecoded = 0;
  readonly limit: number;
  /** After DECODED_FRAME: the frame's opcode, content type and payload (bytes payloadStart..payloadEnd of payloadBuf). */
  op = 0;
  contentType = 0;
  payloadBuf: Buffer = EMPTY;
  payloadStart = 0;
  payloadEnd = 0;
  /** After DECODED_TOO_LARGE or DECODED_BAD_LENGTH: the length the frame declared. */
  declared = 0;

  constructor(payloadBytesMax: number) {
    this.limit = payloadBytesMax + FRAME_OP_CT_BYTES;
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
    i += this.#off;
    for (const c of this.#chunks) {
      if (i < c.length) return c[i];
      i -= c.length;
    }
    throw new RangeError('byteAt past the buffered input');
  }

  /** The next frame, left in this decoder's fields (see DECODED_*). */
  decode(): Decoded {
    if (this.#bytes < FRAME_LENGTH_BYTES) return DECODED_NEED_MORE;
    const first = this.#chunks[0];
    const off = this.#off;
    const length = first.length - off >= FRAME_LENGTH_BYTES
      ? first.readUInt32BE(off)
      : ((this.#byteAt(0) << 24) | (this.#byteAt(1) << 16) | (this.#byteAt(2) << 8) | this.#byteAt(3)) >>> 0;
    if (length < FRAME_OP_CT_BYTES) { this.declared = length; return DECODED_BAD_LENGTH; }
    if (length > this.limit) { this.declared = length; return DECODED_TOO_LARGE; }
    const total = FRAME_LENGTH_BYTES + length;
    if (this.#bytes < total) return DECODED_NEED_MORE;
    let frame: Buffer;
    let at: number;
    if (first.length - off >= total) {
      frame = first;
      at = off;
      if (first.length - off === total) { this.#chunks.shift(); this.#off = 0; } else this.#off = off + total;
    } else {
      frame = Buffer.allocUnsafe(total);
      at = 0;
      const chunks = this.#chunks;
      let filled = 0;
      let used = 0;
      let from = off;
      while (filled < total) {
        const c = chunks[used];
        const take = Math.min(c.length - from, total - filled);
        c.copy(frame, filled, from, from + take);
        filled += take;
        if (from + take === c.length) { used++; from = 0; } else from += take;
      }
      chunks.splice(0, used);
      this.#off = from;
    }
    this.#bytes -= total;
    this.framesDecoded++;
    this.op = (frame[at + 4] << 8) | frame[at + 5];
    this.contentType = frame[at + 6];
    this.payloadBuf = frame;
    this.payloadStart = at + FRAME_LENGTH_BYTES + FRAME_OP_CT_BYTES;
    this.payloadEnd = at + total;
    return DECODED_FRAME;
  }

  next(): FrameDecodeResult {
    switch (this.decode()) {
      case DECODED_NEED_MORE: return { kind: 'need_more' };
      case DECODED_BAD_LENGTH: return { kind: 'bad_length', declared: this.declared };
      case DECODED_TOO_LARGE: return { kind: 'too_large', declared: this.declared, limit: this.limit };
      default: return { kind: 'frame', frame: { op: this.op, contentType: this.contentType, payload: this.payloadBuf.subarray(this.payloadStart, this.payloadEnd) } };
    }
  }
}
