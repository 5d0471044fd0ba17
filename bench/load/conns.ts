/**
 * Client connections of the load child: framed TCP and a minimal HTTP/1.1
 * keep-alive client, both with one request in flight. Each connection calls
 * one fixed callback per reply (no per-request closures) and carries the
 * timing fields of its current request.
 */
import net from 'node:net';
import { encodeFrame, FrameDecoder, OP_BATCH_GET, OP_ERROR_RESPONSE, OP_GET, OP_PUSH } from '../../src/protocol/frame';

export const enum ReqKind {
  Push = 0,
  Get = 1,
  Batch = 2,
}
export const KIND_NAMES = ['push', 'get', 'batch'] as const;

const PATHS = ['/push', '/get', '/batch_get'];
const OPS = [OP_PUSH, OP_GET, OP_BATCH_GET];
/** Replies we accept from the server (a batch of 100 rows of 30 features is ~100 KiB). */
const REPLY_BYTES_MAX = 64 * 1024 * 1024;
const CRLF2 = Buffer.from('\r\n\r\n');

export type ReplyHandler = (conn: Conn, ok: boolean, payload: Buffer | null) => void;
export type CloseHandler = (conn: Conn, err: string) => void;

export abstract class Conn {
  readonly id: number;
  readonly socket: net.Socket;
  /** Set by the driver: when the current request was sent / became due (ms, performance.now()). */
  sentAt: number;
  intendedAt: number;
  kind: ReqKind;
  /** Spare per-connection state for drivers (probe key, poll count). */
  tag: number;
  polls: number;
  busy: boolean;
  dead: boolean;
  readonly #onClose: CloseHandler;

  constructor(id: number, socket: net.Socket, onClose: CloseHandler) {
    this.id = id;
    this.socket = socket;
    this.sentAt = 0;
    this.intendedAt = 0;
    this.kind = ReqKind.Push;
    this.tag = 0;
    this.polls = 0;
    this.busy = false;
    this.dead = false;
    this.#onClose = onClose;
    socket.setNoDelay(true);
    socket.on('error', (e) => this.#die(String(e.message)));
    socket.on('close', () => this.#die('connection closed by server'));
  }

  #die(why: string): void {
    if (this.dead) return;
    this.dead = true;
    this.socket.destroy();
    this.#onClose(this, why);
  }

  /** Sends one request of `kind`; the reply comes to the handler. */
  abstract send(kind: ReqKind, body: string): void;

  close(): void {
    this.dead = true;
    this.socket.destroy();
  }
}

export class TcpConn extends Conn {
  readonly #decoder = new FrameDecoder(REPLY_BYTES_MAX);

  constructor(id: number, socket: net.Socket, onReply: ReplyHandler, onClose: CloseHandler) {
    super(id, socket, onClose);
    socket.on('data', (d: Buffer) => {
      this.#decoder.push(d);
      for (;;) {
        const r = this.#decoder.next();
        if (r.kind !== 'frame') break;
        this.busy = false;
        onReply(this, r.frame.op !== OP_ERROR_RESPONSE, r.frame.payload);
      }
    });
  }

  send(kind: ReqKind, body: string): void {
    this.kind = kind;
    this.busy = true;
    this.socket.write(encodeFrame(OPS[kind], body));
  }
}

export class HttpConn extends Conn {
  #buf: Buffer | null = null;
  /** Header end and body length of the response being read; -1 until its headers are in. */
  #bodyAt = -1;
  #bodyLen = 0;
  #status = 0;

  constructor(id: number, socket: net.Socket, onReply: ReplyHandler, onClose: CloseHandler) {
    super(id, socket, onClose);
    socket.on('data', (d: Buffer) => {
      this.#buf = this.#buf === null ? d : Buffer.concat([this.#buf, d]);
      for (;;) {
        const buf: Buffer = this.#buf;
        if (this.#bodyAt < 0 && !this.#readHead(buf)) return;
        const end = this.#bodyAt + this.#bodyLen;
        if (buf.length < end) return;
        const payload = buf.subarray(this.#bodyAt, end);
        this.#buf = buf.length === end ? null : buf.subarray(end);
        this.#bodyAt = -1;
        this.busy = false;
        onReply(this, this.#status >= 200 && this.#status < 300, payload);
        if (this.#buf === null) return;
      }
    });
  }

  /** Parses the status line and Content-Length; false while the head is incomplete. */
  #readHead(buf: Buffer): boolean {
    const at = buf.indexOf(CRLF2);
    if (at < 0) {
      if (buf.length > REPLY_BYTES_MAX) this.socket.destroy(new Error('response head too large'));
      return false;
    }
    const head = buf.toString('latin1', 0, at);
    this.#status = Number(head.slice(9, 12));
    const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (m === null) {
      // Our servers always send Content-Length; anything else is a broken reply.
      this.socket.destroy(new Error(`response without Content-Length: ${head.slice(0, 200)}`));
      return false;
    }
    this.#bodyLen = Number(m[1]);
    this.#bodyAt = at + 4;
    return true;
  }

  send(kind: ReqKind, body: string): void {
    this.kind = kind;
    this.busy = true;
    this.socket.write(
      `POST ${PATHS[kind]} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
}

export function connect(
  transport: 'tcp' | 'http',
  port: number,
  id: number,
  onReply: ReplyHandler,
  onClose: CloseHandler,
): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    s.once('error', reject);
    s.once('connect', () => {
      s.removeListener('error', reject);
      resolve(transport === 'tcp' ? new TcpConn(id, s, onReply, onClose) : new HttpConn(id, s, onReply, onClose));
    });
  });
}

export function connectAll(
  transport: 'tcp' | 'http',
  port: number,
  n: number,
  onReply: ReplyHandler,
  onClose: CloseHandler,
): Promise<Conn[]> {
  const all: Promise<Conn>[] = [];
  for (let i = 0; i < n; i++) all.push(connect(transport, port, i, onReply, onClose));
  return Promise.all(all);
}
