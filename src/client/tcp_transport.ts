/**
 * Framed TCP transport (spec 4.8, src/protocol/frame.ts) with a small pool.
 *
 *   send() --> idle connection? --yes--> write frame, wait for the one reply
 *                 | no
 *                 +--> below poolSize? --yes--> open a connection, same
 *                 | no
 *                 +--> FIFO queue of waiting requests, served as replies free
 *                      connections
 *
 * A connection carries one request at a time: the protocol has no request ids
 * and replies come strictly in order, so with one in flight a reply can never be
 * matched to the wrong caller. A connection whose request timed out is
 * destroyed, because its late reply would otherwise answer the next request.
 * Idle connections are unref'd so a forgotten close() does not keep a process
 * alive.
 */
import net from 'node:net';
import {
  CT_JSON,
  FrameDecoder,
  OP_AUTH,
  OP_BATCH_GET,
  OP_ERROR_RESPONSE,
  OP_FORGET,
  OP_GET,
  OP_PING,
  OP_PUSH,
  OP_REGISTER,
  OP_RESET,
  encodeFrame,
  successOpcode,
} from '../protocol/frame';
import { StreamfeatError, errorFromBody, timeoutError, transportError, unparseable } from './errors';
import type { Operation, Reply, Transport } from './transport';

/** Spec 1.6: the TCP fast path listens on 8081 by default (used when the URL has no port). */
export const TCP_PORT_DEFAULT = 8081;
/** Connections per client. Small: each one is a socket on the server too. */
export const TCP_POOL_SIZE_DEFAULT = 4;
/**
 * Largest reply frame accepted. Bigger than the server's 4 MiB request cap on
 * purpose: a batch_get of 10 000 rows can answer with more than it was asked.
 */
export const TCP_REPLY_BYTES_MAX = 256 * 1024 * 1024;

const OPCODES: Record<Operation, number | null> = {
  ping: OP_PING,
  register: OP_REGISTER,
  push: OP_PUSH,
  get: OP_GET,
  batch_get: OP_BATCH_GET,
  reset: OP_RESET,
  registry: null,
  forget: OP_FORGET,
};

export interface TcpTransportOptions {
  poolSize?: number;
  /** Sent in an AUTH frame ahead of the first request of every connection. */
  token?: string;
}

class Job {
  readonly opcode: number;
  readonly frame: Buffer;
  readonly resolve: (r: Reply) => void;
  readonly reject: (e: StreamfeatError) => void;
  timer: NodeJS.Timeout | null = null;
  conn: Connection | null = null;
  done = false;

  constructor(opcode: number, frame: Buffer, resolve: (r: Reply) => void, reject: (e: StreamfeatError) => void) {
    this.opcode = opcode;
    this.frame = frame;
    this.resolve = resolve;
    this.reject = reject;
  }

  settle(err: StreamfeatError | null, reply: Reply | null): void {
    if (this.done) return;
    this.done = true;
    if (this.timer !== null) clearTimeout(this.timer);
    if (err !== null) this.reject(err);
    else this.resolve(reply as Reply);
  }
}

class Connection {
  readonly socket: net.Socket;
  readonly decoder = new FrameDecoder(TCP_REPLY_BYTES_MAX);
  job: Job | null = null;
  dead = false;
  /** The AUTH frame's reply has not come yet: the next reply frame is it. */
  authPending = false;

  constructor(socket: net.Socket) {
    this.socket = socket;
  }
}

export class TcpTransport implements Transport {
  readonly endpoint: string;
  readonly #host: string;
  readonly #port: number;
  readonly #poolSize: number;
  readonly #authFrame: Buffer | null;
  readonly #all = new Set<Connection>();
  readonly #idle: Connection[] = [];
  readonly #waiting: Job[] = [];
  #closed = false;

  constructor(url: URL, opts: TcpTransportOptions = {}) {
    this.#host = url.hostname.replace(/^\[|\]$/g, '');
    this.#port = url.port === '' ? TCP_PORT_DEFAULT : Number(url.port);
    this.#poolSize = Math.max(1, Math.floor(opts.poolSize ?? TCP_POOL_SIZE_DEFAULT));
    this.#authFrame = opts.token === undefined ? null : encodeFrame(OP_AUTH, JSON.stringify({ token: opts.token }), CT_JSON);
    this.endpoint = `tcp://${url.hostname}:${this.#port}`;
  }

  /** Open connections (for tests and diagnostics). */
  get connectionCount(): number {
    return this.#all.size;
  }

  send(op: Operation, body: string, timeoutMs: number): Promise<Reply> {
    if (this.#closed) return Promise.reject(closedError());
    const opcode = OPCODES[op];
    if (opcode === null) {
      return Promise.reject(
        new StreamfeatError('op_not_implemented', `${op} has no TCP opcode in v0; give the client an httpUrl to reach it over HTTP`, {
          status: 0,
        }),
      );
    }
    return new Promise<Reply>((resolve, reject) => {
      const job = new Job(opcode, encodeFrame(opcode, body, CT_JSON), resolve, reject);
      job.timer = setTimeout(() => this.#onTimeout(job, timeoutMs), timeoutMs);
      this.#dispatch(job);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#waiting.splice(0)) job.settle(closedError(), null);
    for (const conn of [...this.#all]) this.#kill(conn, closedError());
  }

  #dispatch(job: Job): void {
    const conn = this.#idle.pop();
    if (conn !== undefined) return this.#start(conn, job);
    if (this.#all.size < this.#poolSize) return this.#start(this.#open(), job);
    this.#waiting.push(job);
  }

  #open(): Connection {
    const socket = net.connect({ host: this.#host, port: this.#port });
    socket.setNoDelay(true);
    socket.setKeepAlive(true);
    const conn = new Connection(socket);
    this.#all.add(conn);
    socket.on('data', (chunk: Buffer) => this.#onData(conn, chunk));
    socket.on('error', (err) => this.#kill(conn, transportError(err)));
    socket.on('close', () => this.#kill(conn, transportError(closedByServer())));
    if (this.#authFrame !== null) {
      // Pipelined ahead of the first request: the server answers frames in order.
      socket.write(this.#authFrame);
      conn.authPending = true;
    }
    return conn;
  }

  #start(conn: Connection, job: Job): void {
    conn.job = job;
    job.conn = conn;
    conn.socket.ref();
    conn.socket.write(job.frame);
  }

  #onData(conn: Connection, chunk: Buffer): void {
    conn.decoder.push(chunk);
    for (;;) {
      const r = conn.decoder.next();
      if (r.kind === 'need_more') return;
      if (r.kind !== 'frame') {
        return this.#kill(conn, unparseable('', 0, `reply frame ${r.kind} (declared length ${r.declared})`));
      }
      const job = conn.job;
      if (job === null) return this.#kill(conn, unparseable('', 0, 'reply frame without a request'));
      const { op, contentType, payload } = r.frame;
      const text = payload.toString('utf8');
      if (contentType !== CT_JSON) {
        return this.#kill(conn, unparseable(text, 0, `reply content type ${hex(contentType)} is not JSON`));
      }
      if (conn.authPending) {
        conn.authPending = false;
        // Refused: the server closes the connection; the request waiting on it fails with the server's error.
        if (op === OP_ERROR_RESPONSE) return this.#kill(conn, errorFromBody(text, null));
        if (op !== OP_AUTH) return this.#kill(conn, unparseable(text, 0, `reply opcode ${hex(op)} does not answer AUTH`));
        continue;
      }
      if (op === OP_ERROR_RESPONSE) job.settle(errorFromBody(text, null), null);
      // successOpcode: 0x0023 for get, batch_get and reset (docs/wire.md). An echo of
      // the request opcode is what servers before 0.1 sent; still accepted.
      else if (op === successOpcode(job.opcode) || op === job.opcode) job.settle(null, { body: text, replay: false });
      else return this.#kill(conn, unparseable(text, 0, `reply opcode ${hex(op)} does not match request ${hex(job.opcode)}`));
      conn.job = null;
      this.#release(conn);
    }
  }

  #release(conn: Connection): void {
    if (conn.dead) return;
    const next = this.#waiting.shift();
    if (next !== undefined) return this.#start(conn, next);
    conn.socket.unref();
    this.#idle.push(conn);
  }

  /** Ends a connection; its request (if any) fails with `err`; queued requests get a new connection. */
  #kill(conn: Connection, err: StreamfeatError): void {
    if (conn.dead) return;
    conn.dead = true;
    this.#all.delete(conn);
    const i = this.#idle.indexOf(conn);
    if (i >= 0) this.#idle.splice(i, 1);
    conn.socket.destroy();
    const job = conn.job;
    conn.job = null;
    if (job !== null) job.settle(err, null);
    if (!this.#closed && this.#waiting.length > 0 && this.#all.size < this.#poolSize) {
      this.#start(this.#open(), this.#waiting.shift() as Job);
    }
  }

  #onTimeout(job: Job, timeoutMs: number): void {
    if (job.done) return;
    const err = timeoutError(timeoutMs);
    if (job.conn === null) {
      const i = this.#waiting.indexOf(job);
      if (i >= 0) this.#waiting.splice(i, 1);
      job.settle(err, null);
      return;
    }
    // The late reply would answer the next request on this connection: drop the connection.
    this.#kill(job.conn, err);
  }
}

function hex(n: number): string {
  return `0x${n.toString(16).padStart(4, '0')}`;
}

function closedByServer(): Error {
  return Object.assign(new Error('connection closed by server'), { code: 'ECONNRESET' });
}

function closedError(): StreamfeatError {
  return new StreamfeatError('ECONNABORTED', 'client is closed', { status: 0 });
}
