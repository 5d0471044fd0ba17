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
 * Incremental decoder: push chunks, pull frames. Keeps at most one partial
 * frame buffered. Payloads are views into the received chunks (node:net hands
 * out a fresh Buffer per chunk and never reuses it), so decoding a frame copies
 * nothing; a caller that keeps a payload keeps its chunk alive.
 */
export class FrameDecoder {
  #buf: Buffer = Buffer.alloc(0);
  readonly #payloadBytesMax: number;

  constructor(payloadBytesMax: number) {
    this.#payloadBytesMax = payloadBytesMax;
  }

  push(chunk: Buffer): void {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
  }

  /** Bytes received but not yet returned as frames. */
  get pendingBytes(): number {
    return this.#buf.length;
  }

  next(): FrameDecodeResult {
    const buf = this.#buf;
    if (buf.length < FRAME_LENGTH_BYTES) return { kind: 'need_more' };
    const length = buf.readUInt32BE(0);
    if (length < FRAME_HEADER_BYTES) return { kind: 'bad_length', declared: length };
    if (length > this.#payloadBytesMax + FRAME_HEADER_BYTES) {
      return { kind: 'too_large', declared: length, limit: this.#payloadBytesMax + FRAME_HEADER_BYTES };
    }
    const total = FRAME_LENGTH_BYTES + length;
    if (buf.length < total) return { kind: 'need_more' };
    const op = buf.readUInt16BE(4);
    const contentType = buf.readUInt8(6);
    const payload = buf.subarray(7, total);
    this.#buf = buf.length === total ? Buffer.alloc(0) : buf.subarray(total);
    return { kind: 'frame', frame: { op, contentType, payload } };
  }
}
