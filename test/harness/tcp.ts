/** A small framed-TCP client for tests: pipelined requests, replies matched in FIFO order, raw byte access. */
import net from 'node:net';
import { CT_JSON, encodeFrame, FrameDecoder, type Frame } from '../../src/protocol/frame';

export interface TcpReply {
  op: number;
  contentType: number;
  text: string;
  json: any;
}

export class TcpClient {
  readonly socket: net.Socket;
  readonly #decoder = new FrameDecoder(64 * 1024 * 1024);
  readonly #waiting: Array<(r: TcpReply) => void> = [];
  readonly #early: TcpReply[] = [];
  closed: Promise<void>;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (d: Buffer) => this.#onData(d));
    this.closed = new Promise((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => {});
    // The server closed its side: close ours (the socket is half-open so that tests can half-close first).
    socket.on('end', () => socket.end());
  }

  static connect(port: number): Promise<TcpClient> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true }, () => resolve(new TcpClient(s)));
      s.once('error', reject);
    });
  }

  #onData(d: Buffer): void {
    this.#decoder.push(d);
    for (;;) {
      const r = this.#decoder.next();
      if (r.kind !== 'frame') break;
      const reply = toReply(r.frame);
      const w = this.#waiting.shift();
      if (w) w(reply); else this.#early.push(reply);
    }
  }

  /** Next reply frame (in order). */
  next(): Promise<TcpReply> {
    const e = this.#early.shift();
    if (e) return Promise.resolve(e);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  request(op: number, payload: unknown, contentType = CT_JSON): Promise<TcpReply> {
    const body = typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload);
    this.socket.write(encodeFrame(op, body as string | Buffer, contentType));
    return this.next();
  }

  writeRaw(b: Buffer): void {
    this.socket.write(b);
  }

  close(): void {
    this.socket.destroy();
  }
}

function toReply(f: Frame): TcpReply {
  const text = f.payload.toString('utf8');
  let json: unknown;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { op: f.op, contentType: f.contentType, text, json };
}
