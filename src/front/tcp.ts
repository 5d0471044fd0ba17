/**
 * Framed TCP fast path (spec 4.8) on node:net. Frames may be pipelined; each one
 * takes a slot in the connection's FIFO and replies are written strictly in
 * request order as slots complete. A bad frame answers that frame (or closes that
 * connection: frame_too_large, bad length, truncated payload) and nobody else
 * is affected.
 */
import net from 'node:net';
import { errorJson, type ErrorCode, type ErrorDetail } from '../errors';
import { TCP_PIPELINE_DEPTH_MAX } from '../limits';
import {
  CT_JSON, CT_MSGPACK, encodeFrame, FrameDecoder, OP_BATCH_GET, OP_ERROR_RESPONSE, OP_GET, OP_PING, OP_PUSH, OP_PUSH_MANY,
  OP_PUSH_SYNC, OP_REGISTER, OP_RESET, OP_SET_FIRST, OP_SET_LAST, successOpcode, type Frame,
} from '../protocol/frame';
import type { Front } from './front';
import { TRANSPORT_TCP, type Reply } from './reply';

class Slot implements Reply {
  readonly transport = TRANSPORT_TCP;
  bytes: Buffer | null = null;
  /** `op` is the request's opcode; a success reply goes out as successOpcode(op). */
  constructor(readonly conn: TcpConn, readonly op: number) {}
  ok(body: string): void {
    this.bytes = encodeFrame(successOpcode(this.op), body);
    this.conn.drain();
  }
  error(code: ErrorCode, detail: ErrorDetail = {}, registryVersion?: number): void {
    this.bytes = encodeFrame(OP_ERROR_RESPONSE, errorJson(code, detail, registryVersion));
    this.conn.drain();
  }
}

class TcpConn {
  readonly #decoder: FrameDecoder;
  readonly #queue: Slot[] = [];
  #closing = false;
  /** Reading is paused while too many requests wait for replies, or while the kernel buffer is full (the client is not reading its replies). */
  #pausedForDepth = false;
  #pausedForWrite = false;

  constructor(readonly socket: net.Socket, readonly front: Front, frameBytesMax: number) {
    this.#decoder = new FrameDecoder(frameBytesMax);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('end', () => this.#onEnd());
    socket.on('error', () => socket.destroy());
    socket.on('close', () => { front.metrics.tcpConnections--; });
    socket.on('drain', () => {
      this.#pausedForWrite = false;
      this.#updateFlow();
    });
    front.metrics.tcpConnections++;
  }

  #onData(chunk: Buffer): void {
    if (this.#closing) return;
    this.#decoder.push(chunk);
    for (;;) {
      const r = this.#decoder.next();
      if (r.kind === 'need_more') break;
      if (r.kind === 'too_large') {
        this.#fatal('frame_too_large', { message: `frame length ${r.declared} is above the maximum ${r.limit} (SERVICE_TCP_MAX_FRAME_BYTES + 3)`, extra: { limit: r.limit, declared: r.declared } });
        return;
      }
      if (r.kind === 'bad_length') {
        this.#fatal('frame_error', { message: `frame length ${r.declared} is below the 3-byte header` });
        return;
      }
      this.#dispatch(r.frame);
    }
    if (this.#queue.length >= TCP_PIPELINE_DEPTH_MAX) this.#pausedForDepth = true;
    this.#updateFlow();
  }

  #updateFlow(): void {
    if (this.socket.destroyed) return;
    if (this.#pausedForDepth || this.#pausedForWrite) this.socket.pause();
    else this.socket.resume();
  }

  #onEnd(): void {
    if (this.#decoder.pendingBytes > 0 && !this.#closing) {
      this.#fatal('frame_error', { message: `connection half-closed inside a frame (${this.#decoder.pendingBytes} bytes of a truncated frame)` });
      return;
    }
    this.#closing = true;
    this.drain();
  }

  /** Answers in order what is queued, then this error, then closes. */
  #fatal(code: ErrorCode, detail: ErrorDetail): void {
    this.front.metrics.error(code);
    const slot = new Slot(this, OP_ERROR_RESPONSE);
    this.#queue.push(slot);
    this.#closing = true;
    slot.error(code, detail);
  }

  #dispatch(frame: Frame): void {
    const slot = new Slot(this, frame.op);
    this.#queue.push(slot);
    const front = this.front;
    if (frame.contentType === CT_MSGPACK) {
      front.metrics.error('unsupported_content_type');
      slot.error('unsupported_content_type', { message: 'MessagePack (content type 0x02) is not supported in v0; send JSON (0x01)' });
      return;
    }
    if (frame.contentType !== CT_JSON) {
      front.metrics.error('frame_error');
      slot.error('frame_error', { message: `bad content-type byte 0x${frame.contentType.toString(16).padStart(2, '0')}; expected 0x01 (JSON)` });
      return;
    }
    const op = frame.op;
    if (op === OP_PUSH_SYNC || op === OP_PUSH_MANY || (op >= OP_SET_FIRST && op <= OP_SET_LAST)) {
      front.metrics.error('op_not_implemented');
      slot.error('op_not_implemented', { message: `opcode 0x${op.toString(16).padStart(4, '0')} is reserved and not implemented in v0`, extra: { op } });
      return;
    }
    if (op === OP_PING) { front.ping(slot); return; }
    if (op === OP_RESET) { front.reset(slot); return; }
    if (op !== OP_PUSH && op !== OP_GET && op !== OP_BATCH_GET && op !== OP_REGISTER) {
      front.metrics.error('unknown_op');
      slot.error('unknown_op', { message: `opcode 0x${op.toString(16).padStart(4, '0')} is not in the dispatch table`, extra: { op } });
      return;
    }
    let body: unknown;
    const text = frame.payload.toString('utf8');
    try {
      body = JSON.parse(text);
    } catch (err) {
      front.metrics.error('invalid_json_body');
      const getFamily = op === OP_GET || op === OP_BATCH_GET;
      slot.error('invalid_json_body', { message: `payload is not valid JSON: ${(err as Error).message}` }, getFamily ? undefined : front.version);
      return;
    }
    try {
      if (op === OP_PUSH) front.push(body, text, slot);
      else if (op === OP_GET) front.get(body, slot);
      else if (op === OP_BATCH_GET) front.batchGet(body, slot);
      else front.register(body, slot);
    } catch (err) {
      front.log.error({ kind: 'server.internal_error', err: String((err as Error)?.stack ?? err) });
      if (slot.bytes === null) slot.error('internal_error', { reason: String(err) });
    }
  }

  /** Writes every completed reply at the head of the FIFO. */
  drain(): void {
    const q = this.#queue;
    let n = 0;
    while (n < q.length && q[n].bytes !== null) n++;
    if (n === 0) { this.#maybeClose(); return; }
    const out = q.splice(0, n);
    if (!this.socket.destroyed) {
      let flushed = true;
      if (out.length === 1) flushed = this.socket.write(out[0].bytes!);
      else {
        this.socket.cork();
        for (const s of out) flushed = this.socket.write(s.bytes!);
        this.socket.uncork();
      }
      if (!flushed) this.#pausedForWrite = true;
    }
    if (this.#pausedForDepth && q.length < TCP_PIPELINE_DEPTH_MAX / 2) this.#pausedForDepth = false;
    this.#updateFlow();
    this.#maybeClose();
  }

  #maybeClose(): void {
    if (this.#closing && this.#queue.length === 0 && !this.socket.destroyed) this.socket.end();
  }
}

export function buildTcpServer(front: Front, frameBytesMax: number): net.Server {
  return net.createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
    new TcpConn(socket, front, frameBytesMax);
  });
}
