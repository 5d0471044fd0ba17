/**
 * Framed TCP fast path (spec 4.8) on node:net. Frames may be pipelined; each one
 * takes a slot in the connection's FIFO and replies are written strictly in
 * request order as slots complete. A bad frame answers that frame (or closes that
 * connection: frame_too_large, bad length, truncated payload, a frame that does
 * not complete in time) and nobody else is affected. Connections past the cap get
 * one too_many_connections frame and are closed (docs/limits.md).
 */
import net from 'node:net';
import { errorJson, type ErrorCode, type ErrorDetail } from '../errors';
import { TCP_CLOSE_LINGER_MS, TCP_PIPELINE_DEPTH_MAX } from '../limits';
import {
  CT_JSON, CT_MSGPACK, DECODED_BAD_LENGTH, DECODED_NEED_MORE, DECODED_TOO_LARGE, encodeFrame, FrameDecoder, OP_AUTH, OP_BATCH_GET, OP_ERROR_RESPONSE, OP_GET, OP_PING, OP_PUSH, OP_PUSH_MANY,
  OP_PUSH_SYNC, OP_REGISTER, OP_RESET, OP_SET_FIRST, OP_SET_LAST, successOpcode, type Frame,
} from '../protocol/frame';
import type { Front } from './front';
import { TRANSPORT_TCP, type Reply } from './reply';
import { handlePushBytes, handleRequest, type RequestKind } from './requests';
import { ackBytes } from './push';

/** Buffer#utf8Slice: what toString('utf8', start, end) calls after checking its arguments (@types/node lacks it). */
interface Utf8Slice {
  utf8Slice(start: number, end: number): string;
}

/**
 * A frame's reply slot in the connection's FIFO. Answered once (a later answer is
 * ignored, as over HTTP); an error answer is counted in the error metrics here.
 */
class Slot implements Reply {
  readonly transport = TRANSPORT_TCP;
  bytes: Buffer | null = null;
  /** `op` is the request's opcode; a success reply goes out as successOpcode(op). */
  constructor(readonly conn: TcpConn, readonly op: number) {}
  ok(body: string): void {
    this.#success(body);
  }
  ack(lsn: number, version: number): void {
    if (this.bytes === null) this.#success(ackBytes(lsn, version));
  }
  #success(payload: string | Uint8Array): void {
    if (this.bytes !== null) return;
    this.bytes = encodeFrame(successOpcode(this.op), payload);
    this.conn.drain();
  }
  error(code: ErrorCode, detail: ErrorDetail = {}, registryVersion?: number): void {
    if (this.bytes !== null) return;
    this.conn.front.metrics.error(code);
    this.bytes = encodeFrame(OP_ERROR_RESPONSE, errorJson(code, detail, registryVersion));
    this.conn.drain();
  }
}

/** The request kind of each JSON opcode the adapter answers (requests.ts). */
const OP_KINDS: ReadonlyMap<number, RequestKind> = new Map<number, RequestKind>([
  [OP_PUSH, 'push'], [OP_GET, 'get'], [OP_BATCH_GET, 'batch_get'], [OP_REGISTER, 'register'], [OP_PING, 'ping'], [OP_RESET, 'reset'],
]);

export interface TcpOptions {
  frameBytesMax: number;
  /** A frame must be whole this long after its first byte arrived (while we are reading). */
  frameTimeoutMs: number;
  /** Close a connection with nothing received and nothing pending for this long; 0 = never. */
  idleTimeoutMs: number;
  connectionsMax: number;
}

/** Ends our side, then destroys the socket if the peer has not closed within the linger. */
function endWithLinger(socket: net.Socket, last?: Buffer): void {
  if (last === undefined) socket.end(); else socket.end(last);
  const t = setTimeout(() => socket.destroy(), TCP_CLOSE_LINGER_MS);
  t.unref();
  socket.once('close', () => clearTimeout(t));
}

class TcpConn {
  readonly #decoder: FrameDecoder;
  readonly #queue: Slot[] = [];
  #closing = false;
  /** Reading is paused while too many requests wait for replies, or while the kernel buffer is full (the client is not reading its replies). */
  #pausedForDepth = false;
  #pausedForWrite = false;
  /** When the frame now partially buffered started to count against the frame timeout (performance.now(): no wall clock step moves a timeout); 0 = none. */
  #partialSince = 0;
  #framesAtPartialStart = 0;
  #frameTimer: NodeJS.Timeout | null = null;
  /** With auth on, nothing but OP_AUTH is served until the token was presented. */
  #authed: boolean;
  /**
   * A reset or register in progress on this connection: frames decoded after it wait in
   * #held until it is answered, so a request pipelined behind it sees its effects (without
   * this, a push sent right behind a reset was validated and acked under the old registry
   * and then wiped by the reset; found by the fuzz suite).
   */
  #barrier: Slot | null = null;
  /** Frames behind the barrier, each with its reply slot already in the FIFO. */
  readonly #held: Array<{ frame: Frame; slot: Slot }> = [];
  #releasing = false;

  constructor(readonly socket: net.Socket, readonly front: Front, readonly opts: TcpOptions) {
    this.#decoder = new FrameDecoder(opts.frameBytesMax);
    this.#authed = front.opts.auth === null;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('end', () => this.#onEnd());
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      front.metrics.tcpConnections--;
      if (this.#frameTimer !== null) clearTimeout(this.#frameTimer);
    });
    socket.on('drain', () => {
      this.#pausedForWrite = false;
      this.#updateFlow();
    });
    if (opts.idleTimeoutMs > 0) {
      // node's socket timeout counts reads and writes; a connection waiting on its replies is not idle.
      socket.setTimeout(opts.idleTimeoutMs);
      socket.on('timeout', () => {
        if (this.#queue.length === 0 && this.#decoder.pendingBytes === 0 && !this.#closing) {
          this.#closing = true;
          endWithLinger(socket);
        }
      });
    }
    front.metrics.tcpConnections++;
  }

  /**
   * Starts the frame clock when a new partial frame is left buffered; stops it when
   * nothing is. Called after every read, so the cost per read is a comparison and,
   * for a new partial frame, one performance.now().
   */
  #trackPartial(): void {
    const d = this.#decoder;
    if (d.pendingBytes === 0) { this.#partialSince = 0; return; }
    if (this.#partialSince !== 0 && d.framesDecoded === this.#framesAtPartialStart) return;
    this.#partialSince = performance.now();
    this.#framesAtPartialStart = d.framesDecoded;
    if (this.#frameTimer === null) this.#armFrameTimer(this.opts.frameTimeoutMs);
  }

  #armFrameTimer(ms: number): void {
    this.#frameTimer = setTimeout(() => this.#onFrameTimer(), ms);
    this.#frameTimer.unref();
  }

  #onFrameTimer(): void {
    this.#frameTimer = null;
    if (this.#partialSince === 0 || this.#closing || this.socket.destroyed) return;
    // While we are not reading (backpressure is ours), the peer cannot finish: restart its clock.
    if (this.#pausedForDepth || this.#pausedForWrite) this.#partialSince = performance.now();
    const left = this.#partialSince + this.opts.frameTimeoutMs - performance.now();
    if (left > 0) { this.#armFrameTimer(left); return; }
    this.#fatal('frame_error', {
      message: `frame incomplete ${this.opts.frameTimeoutMs} ms after its first byte (${this.#decoder.pendingBytes} bytes received); the limit is SERVICE_TCP_FRAME_TIMEOUT`,
      extra: { timeout_ms: this.opts.frameTimeoutMs },
    });
  }

  #onData(chunk: Buffer): void {
    if (this.#closing) return;
    this.#decoder.push(chunk);
    this.#decodeAll();
    if (!this.#closing) this.#trackPartial();
  }

  #decodeAll(): void {
    const d = this.#decoder;
    for (;;) {
      const r = d.decode();
      if (r === DECODED_NEED_MORE) break;
      if (r === DECODED_TOO_LARGE) {
        this.#fatal('frame_too_large', { message: `frame length ${d.declared} is above the maximum ${d.limit} (SERVICE_TCP_MAX_FRAME_BYTES + 3)`, extra: { limit: d.limit, declared: d.declared } });
        return;
      }
      if (r === DECODED_BAD_LENGTH) {
        this.#fatal('frame_error', { message: `frame length ${d.declared} is below the 3-byte header` });
        return;
      }
      this.#dispatch(d.op, d.contentType, d.payloadBuf, d.payloadStart, d.payloadEnd);
      if (this.#closing) return; // a frame that closes the connection (unauthorized): nothing after it is served
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
    const slot = new Slot(this, OP_ERROR_RESPONSE);
    this.#queue.push(slot);
    this.#closing = true;
    slot.error(code, detail);
  }

  /** A decoded frame: its payload is bytes start..end of `buf` (a received chunk, or a copy). */
  #dispatch(op: number, contentType: number, buf: Buffer, start: number, end: number): void {
    if (!this.#authed && op !== OP_AUTH) {
      this.#fatal('unauthorized', { message: 'this server requires its auth token: send an AUTH frame (op 0x0002, {"token": "..."}) first' });
      return;
    }
    const slot = new Slot(this, op);
    this.#queue.push(slot);
    if (this.#barrier !== null) { this.#held.push({ frame: { op, contentType, payload: buf.subarray(start, end) }, slot }); return; }
    this.#run(slot, contentType, buf, start, end);
  }

  /** Answers one frame (opcode slot.op) into its slot. */
  #run(slot: Slot, contentType: number, buf: Buffer, start: number, end: number): void {
    const front = this.front;
    if (contentType === CT_MSGPACK) {
      slot.error('unsupported_content_type', { message: 'MessagePack (content type 0x02) is not supported in v0; send JSON (0x01)' });
      return;
    }
    if (contentType !== CT_JSON) {
      slot.error('frame_error', { message: `bad content-type byte 0x${contentType.toString(16).padStart(2, '0')}; expected 0x01 (JSON)` });
      return;
    }
    const op = slot.op;
    if (op === OP_AUTH) { this.#authenticate(buf.toString('utf8', start, end), slot); return; }
    if (op === OP_PUSH_SYNC || op === OP_PUSH_MANY || (op >= OP_SET_FIRST && op <= OP_SET_LAST)) {
      slot.error('op_not_implemented', { message: `opcode 0x${op.toString(16).padStart(4, '0')} is reserved and not implemented in v0`, extra: { op } });
      return;
    }
    const kind = OP_KINDS.get(op);
    if (kind === undefined) {
      slot.error('unknown_op', { message: `opcode 0x${op.toString(16).padStart(4, '0')} is not in the dispatch table`, extra: { op } });
      return;
    }
    // Reset and register hold the frames behind them until answered (#barrier); one
    // answered at once (a parse error, reset off) is released by the drain it triggers.
    if (kind === 'reset' || kind === 'register') this.#barrier = slot;
    if (kind === 'push' && handlePushBytes(front, buf, start, end, slot)) return;
    handleRequest(front, kind, kind === 'ping' || kind === 'reset' ? '' : (buf as unknown as Utf8Slice).utf8Slice(start, end), slot);
  }

  /**
   * OP_AUTH: `{"token": "..."}` checked in constant time; answered op 0x0002
   * `{"ok":true}`, also when auth is off (a client configured with a token works
   * everywhere). A wrong or missing token: `unauthorized`, then close.
   */
  #authenticate(payload: string, slot: Slot): void {
    const auth = this.front.opts.auth;
    let token: unknown;
    try {
      token = (JSON.parse(payload) as { token?: unknown } | null)?.token;
    } catch {
      token = undefined;
    }
    if (auth === null || auth.matches(token)) {
      this.#authed = true;
      slot.ok('{"ok":true}');
      return;
    }
    this.#queue.splice(this.#queue.indexOf(slot), 1);
    this.#fatal('unauthorized', { message: 'the AUTH frame does not carry this server\'s token' });
  }

  /** Dispatches, in order, the frames held behind a reset/register that has been answered. */
  #release(): void {
    if (this.#releasing) return; // a held frame answered at once re-enters drain(); the outer loop goes on
    this.#releasing = true;
    this.#barrier = null;
    while (this.#held.length > 0) {
      // #dispatch may set a new barrier (a held reset/register); TS cannot see that.
      const b = this.#barrier as Slot | null;
      if (b !== null) {
        if (b.bytes === null) break; // it is still running: wait for its answer
        this.#barrier = null;
      }
      const h = this.#held.shift()!;
      this.#run(h.slot, h.frame.contentType, h.frame.payload, 0, h.frame.payload.length);
    }
    const b = this.#barrier as Slot | null;
    if (b !== null && b.bytes !== null) this.#barrier = null;
    this.#releasing = false;
  }

  /** Writes every completed reply at the head of the FIFO. */
  drain(): void {
    if (this.#barrier !== null && this.#barrier.bytes !== null) this.#release();
    const q = this.#queue;
    let n = 0;
    while (n < q.length && q[n].bytes !== null) n++;
    if (n === 0) { this.#maybeClose(); return; }
    // Slots leave by shift(), not splice(): splice made an array per drain (per reply, one request in flight).
    const socket = this.socket;
    if (socket.destroyed) {
      for (let i = 0; i < n; i++) q.shift();
    } else {
      let flushed = true;
      if (n === 1) flushed = socket.write(q.shift()!.bytes!);
      else {
        socket.cork();
        for (let i = 0; i < n; i++) flushed = socket.write(q.shift()!.bytes!);
        socket.uncork();
      }
      if (!flushed) this.#pausedForWrite = true;
    }
    if (this.#pausedForDepth && q.length < TCP_PIPELINE_DEPTH_MAX / 2) this.#pausedForDepth = false;
    this.#updateFlow();
    this.#maybeClose();
  }

  #maybeClose(): void {
    if (this.#closing && this.#queue.length === 0 && !this.socket.destroyed && !this.socket.writableEnded) endWithLinger(this.socket);
  }
}

export function buildTcpServer(front: Front, opts: TcpOptions): net.Server {
  let open = 0;
  return net.createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
    if (open >= opts.connectionsMax) {
      front.metrics.error('too_many_connections');
      socket.on('error', () => socket.destroy());
      socket.resume(); // discard what the peer sends; reading also lets its close reach us
      endWithLinger(socket, encodeFrame(OP_ERROR_RESPONSE, errorJson('too_many_connections', {
        message: `the server has ${open} open TCP connections, its limit (SERVICE_TCP_CONNECTIONS_MAX); retry later`,
        extra: { limit: opts.connectionsMax },
      })));
      return;
    }
    open++;
    socket.once('close', () => { open--; });
    new TcpConn(socket, front, opts);
  });
}
