/**
 * HTTP/1.1 data plane on node:net (`--http-engine net`), for clients that
 * pipeline: uWS closes a connection when a request arrives while an earlier one
 * is still answered asynchronously (uNetworking/uWebSockets.js#277), and every
 * streamfeat answer but ping and GET /registry is asynchronous.
 *
 * One NetConn per socket, no per-request objects beyond the reply slot: bytes
 * are parsed in place (a head is searched for in the buffered bytes; body bytes
 * are kept as slices of the chunks they came in), each request takes a slot in
 * the connection's FIFO when its head is read, and responses are written
 * strictly in request order as slots complete (as the TCP path does), those
 * that complete together (one read, one shard batch) in one write. Routes are
 * http_routes.ts, shared with uWS. A reset or register is a barrier on its
 * connection (as in tcp.ts): requests read behind it run only once it is
 * answered, so a push pipelined right behind a reset is judged under the registry
 * the reset leaves, never acked under the old one and then wiped.
 *
 * Closes the connection after answering: a malformed head, a head over
 * HTTP_HEADER_BYTES_MAX, a body over HTTP_BODY_BYTES_MAX, a malformed chunk,
 * a head or body past its timeout (all http_protocol_error), and a request
 * with `Connection: close` (or HTTP/1.0 without keep-alive).
 */
import net from 'node:net';
import {
  HTTP_BODY_BYTES_MAX, HTTP_BODY_TIMEOUT_MS, HTTP_HEADER_BYTES_MAX, HTTP_HEADER_TIMEOUT_MS, HTTP_IDLE_TIMEOUT_MS,
  HTTP_PIPELINE_DEPTH_MAX, HTTP_TIMEOUT_SWEEP_MS,
} from '../limits';
import type { Front } from './front';
import { parseChunkSize, parseHead, type RequestHead } from './http_parse';
import { bodyTooLarge, HttpReply, resolveRoute, runRoute, statusLine, type Header, type Route } from './http_routes';

const CRLF = Buffer.from('\r\n');
const CRLFCRLF = Buffer.from('\r\n\r\n');
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';
const EMPTY = Buffer.alloc(0);

// Where the parser is: a head, or one of the body states.
const ST_HEAD = 0;
const ST_LENGTH = 1;
const ST_CHUNK_SIZE = 2;
const ST_CHUNK_DATA = 3;
const ST_CHUNK_END = 4;
const ST_TRAILER = 5;

/** One request's place in the FIFO; its response is serialized when it is written. */
class NetReply extends HttpReply {
  answered = false;
  /** Expect: 100-continue still owed; written once this request is at the head of the FIFO. */
  continuePending = false;
  #status = 0;
  #body = '';
  #header: Header | null = null;

  /** `close`: the client asked for it (Connection: close, HTTP/1.0). */
  constructor(readonly conn: NetConn, readonly keepAlive10: boolean, public close: boolean) {
    super(conn.front.metrics);
  }

  write(status: number, body: string, header: Header | null, close: boolean): void {
    if (this.answered) return;
    this.answered = true;
    this.#status = status;
    this.#body = body;
    this.#header = header;
    if (close) this.close = true;
    this.conn.requestDrain();
  }

  serialize(): string {
    let head = `HTTP/1.1 ${statusLine(this.#status)}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(this.#body)}\r\n`;
    if (this.#header !== null) head += `${this.#header[0]}: ${this.#header[1]}\r\n`;
    if (this.close) head += 'Connection: close\r\n';
    else if (this.keepAlive10) head += 'Connection: keep-alive\r\n';
    return `${head}\r\n${this.#body}`;
  }
}

/** A request read behind a reset/register still running (NetConn.#held). */
interface HeldRequest {
  route: Route;
  body: string;
  slot: NetReply;
  contentType: string;
}

class NetConn {
  /** Unparsed bytes are #buf[#off..]; only a partial head or chunk line is ever carried over to the next read. */
  #buf: Buffer = EMPTY;
  #off = 0;
  /** Bytes at #off already searched for the end of the head. */
  #scanned = 0;
  #state = ST_HEAD;
  readonly #queue: NetReply[] = [];
  /** No more requests are read: answer what is queued, then close. */
  #closing = false;
  #parsing = false;
  #drainQueued = false;
  /** The request whose body is being read. */
  #slot: NetReply | null = null;
  #route: Route | null = null;
  #contentType = '';
  #remaining = 0;
  #size = 0;
  #parts: Buffer[] = [];
  #lastRequest = false;
  #headStarted = false;
  /** When the current phase began: a head's first byte, a body's head, or idleness (performance.now(): no wall clock step moves a timeout). */
  #since = performance.now();
  #pausedForDepth = false;
  #pausedForWrite = false;
  #paused = false;
  /** A reset or register of this connection not answered yet: the requests read behind it wait in #held. */
  #barrier: NetReply | null = null;
  /** Requests read behind the barrier, each with its slot already in the FIFO (so the depth limit counts them). */
  readonly #held: HeldRequest[] = [];
  #releasing = false;

  constructor(readonly socket: net.Socket, readonly front: Front) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('end', () => this.#onEnd());
    socket.on('error', () => socket.destroy());
    socket.on('drain', () => {
      this.#pausedForWrite = false;
      this.#updateFlow();
    });
  }

  #onData(chunk: Buffer): void {
    if (this.#closing) return; // after an error or Connection: close, the rest is discarded
    if (this.#off >= this.#buf.length) {
      this.#buf = chunk;
    } else {
      this.#buf = Buffer.concat([this.#buf.subarray(this.#off), chunk]);
    }
    this.#off = 0;
    const now = performance.now();
    this.#parsing = true;
    try {
      while (!this.#closing && this.#off < this.#buf.length) {
        if (!(this.#state === ST_HEAD ? this.#readHead(now) : this.#readBody(now))) break;
      }
    } finally {
      this.#parsing = false;
    }
    if (this.#off >= this.#buf.length) this.#buf = EMPTY; // drop the chunk; body slices keep what they need
    if (this.#queue.length >= HTTP_PIPELINE_DEPTH_MAX) this.#pausedForDepth = true;
    this.drain();
  }

  /** Returns false when more bytes are needed or the connection is closing. */
  #readHead(now: number): boolean {
    const buf = this.#buf;
    if (!this.#headStarted) {
      // RFC 9112 2.2: empty lines before a request line are ignored.
      while (this.#off < buf.length && (buf[this.#off] === 0x0d || buf[this.#off] === 0x0a)) this.#off++;
      if (this.#off >= buf.length) return false;
      this.#headStarted = true;
      this.#since = now;
    }
    const off = this.#off;
    const end = buf.indexOf(CRLFCRLF, off + (this.#scanned > 3 ? this.#scanned - 3 : 0));
    if (end < 0 || end + 4 - off > HTTP_HEADER_BYTES_MAX) {
      this.#scanned = buf.length - off;
      if (end >= 0 || this.#scanned > HTTP_HEADER_BYTES_MAX) this.#fail(`request head is over the ${HTTP_HEADER_BYTES_MAX}-byte limit (HTTP_HEADER_BYTES_MAX)`);
      return false;
    }
    const text = buf.toString('latin1', off, end);
    this.#off = end + 4;
    this.#scanned = 0;
    this.#headStarted = false;
    const r = parseHead(text);
    if (!r.ok) { this.#fail(r.message); return false; }
    this.#startRequest(r.head, now);
    return true;
  }

  #startRequest(head: RequestHead, now: number): void {
    const slot = new NetReply(this, head.http10 && head.keepAlive, !head.keepAlive);
    this.#queue.push(slot);
    if (head.contentLength > HTTP_BODY_BYTES_MAX) {
      this.#closing = true;
      bodyTooLarge(slot, head.contentLength);
      return;
    }
    const route = resolveRoute(this.front, head.method, head.path, slot, head.authorization);
    this.#slot = slot;
    this.#route = route;
    this.#contentType = head.contentType;
    this.#size = 0;
    this.#lastRequest = !head.keepAlive;
    this.#since = now;
    if (head.chunked) this.#state = ST_CHUNK_SIZE;
    else if (head.contentLength === 0) { this.#complete(now); return; }
    else { this.#state = ST_LENGTH; this.#remaining = head.contentLength; }
    if (head.expectContinue && this.#off >= this.#buf.length) {
      if (slot.answered) {
        // Answered on its head (404/405): the client may never send the body it
        // was waiting to send, so the connection cannot be framed further.
        slot.close = true;
        this.#closing = true;
        this.#slot = null;
        this.#state = ST_HEAD;
      } else {
        slot.continuePending = true;
      }
    }
  }

  #readBody(now: number): boolean {
    const buf = this.#buf;
    switch (this.#state) {
      case ST_LENGTH:
      case ST_CHUNK_DATA: {
        const n = Math.min(buf.length - this.#off, this.#remaining);
        this.#parts.push(buf.subarray(this.#off, this.#off + n));
        this.#off += n;
        this.#remaining -= n;
        if (this.#remaining > 0) return false;
        if (this.#state === ST_LENGTH) this.#complete(now);
        else this.#state = ST_CHUNK_END;
        return true;
      }
      case ST_CHUNK_END:
        if (buf.length - this.#off < 2) return false;
        if (buf[this.#off] !== 0x0d || buf[this.#off + 1] !== 0x0a) { this.#fail('chunk data is not followed by CRLF'); return false; }
        this.#off += 2;
        this.#state = ST_CHUNK_SIZE;
        return true;
      case ST_CHUNK_SIZE:
      case ST_TRAILER: {
        const eol = buf.indexOf(CRLF, this.#off);
        if (eol < 0 || eol - this.#off > HTTP_HEADER_BYTES_MAX) {
          if (eol >= 0 || buf.length - this.#off > HTTP_HEADER_BYTES_MAX) this.#fail(`chunk-size or trailer line over ${HTTP_HEADER_BYTES_MAX} bytes`);
          return false;
        }
        const line = buf.toString('latin1', this.#off, eol);
        this.#off = eol + 2;
        if (this.#state === ST_TRAILER) {
          if (line === '') this.#complete(now); // trailer fields are read and ignored
          return true;
        }
        const size = parseChunkSize(line);
        if (size < 0) { this.#fail(`malformed chunk-size line ${JSON.stringify(line.slice(0, 40))}`); return false; }
        if (size === 0) { this.#state = ST_TRAILER; return true; }
        this.#size += size;
        if (this.#size > HTTP_BODY_BYTES_MAX) { this.#abort((slot) => bodyTooLarge(slot, null)); return false; }
        this.#remaining = size;
        this.#state = ST_CHUNK_DATA;
        return true;
      }
      default:
        return false;
    }
  }

  /** The body is complete: run the route (unless the head was answered already). */
  #complete(now: number): void {
    const slot = this.#slot!;
    const route = this.#route;
    const parts = this.#parts;
    this.#slot = null;
    this.#route = null;
    this.#parts = [];
    this.#state = ST_HEAD;
    this.#since = now;
    slot.continuePending = false;
    if (this.#lastRequest) this.#closing = true;
    if (route === null) return;
    const body = parts.length === 0 ? '' : parts.length === 1 ? parts[0].toString('utf8') : Buffer.concat(parts).toString('utf8');
    if (this.#barrier !== null) this.#held.push({ route, body, slot, contentType: this.#contentType });
    else this.#run(route, body, slot, this.#contentType);
  }

  #run(route: Route, body: string, slot: NetReply, contentType: string): void {
    if (route.barrier === true) this.#barrier = slot;
    runRoute(this.front, route, body, slot, contentType);
  }

  /** Runs, in order, the requests held behind a barrier that has been answered, up to the next barrier still running. */
  #release(): void {
    if (this.#releasing) return; // a held request answered at once re-enters drain(); the outer loop goes on
    this.#releasing = true;
    while (this.#barrier !== null && this.#barrier.answered) {
      this.#barrier = null;
      while (this.#barrier === null && this.#held.length > 0) {
        const h = this.#held.shift()!;
        this.#run(h.route, h.body, h.slot, h.contentType);
      }
    }
    this.#releasing = false;
  }

  /** Answers the request being read (or a new slot if it has its answer) with `answer`, then closes. */
  #abort(answer: (slot: NetReply) => void): void {
    let slot = this.#slot;
    if (slot === null || slot.answered) {
      slot = new NetReply(this, false, true);
      this.#queue.push(slot);
    }
    this.#slot = null;
    this.#route = null;
    this.#parts = [];
    this.#state = ST_HEAD;
    this.#closing = true;
    answer(slot);
  }

  #fail(message: string): void {
    this.#abort((slot) => slot.errorAndClose('http_protocol_error', { message }));
  }

  #onEnd(): void {
    // A request cut off by the client's half-close gets no answer; the ones before it do.
    const s = this.#slot;
    if (s !== null && !s.answered && this.#queue[this.#queue.length - 1] === s) this.#queue.pop();
    this.#slot = null;
    this.#closing = true;
    this.drain();
  }

  /**
   * A response is ready. Answers complete in bursts (a shard batch answers many
   * requests in one callback), so the write waits for the end of the current
   * task: one write per connection per burst, not one per response.
   */
  requestDrain(): void {
    if (this.#parsing || this.#drainQueued) return; // #onData drains once after the whole read
    this.#drainQueued = true;
    queueMicrotask(this.#drainTask);
  }

  readonly #drainTask = (): void => {
    this.#drainQueued = false;
    this.drain();
  };

  /** Writes every completed response at the head of the FIFO, in one write. */
  drain(): void {
    if (this.#barrier !== null && this.#barrier.answered) this.#release();
    const q = this.#queue;
    const socket = this.socket;
    let n = 0;
    while (n < q.length && q[n].answered) n++;
    if (n > 0) {
      let out = '';
      let close = false;
      for (let i = 0; i < n && !close; i++) {
        out += q[i].serialize();
        close = q[i].close;
      }
      if (close) q.length = 0;
      else q.splice(0, n);
      if (socket.destroyed) return;
      if (!socket.write(out)) this.#pausedForWrite = true;
      if (close) {
        this.#closing = true;
        this.#since = performance.now();
        socket.end();
        return;
      }
    }
    if (socket.destroyed) return;
    if (q.length > 0 && q[0].continuePending) {
      q[0].continuePending = false;
      socket.write(CONTINUE);
    }
    if (q.length === 0) {
      if (this.#closing) { this.#since = performance.now(); socket.end(); return; }
      if (n > 0 && this.#slot === null && !this.#headStarted) this.#since = performance.now(); // idle from the last response
    }
    if (this.#pausedForDepth && q.length < HTTP_PIPELINE_DEPTH_MAX / 2) this.#pausedForDepth = false;
    this.#updateFlow();
  }

  /** Pauses or resumes reading on a change only (resume() on a flowing socket still schedules work). */
  #updateFlow(): void {
    const pause = this.#pausedForDepth || this.#pausedForWrite;
    if (pause === this.#paused || this.socket.destroyed) return;
    this.#paused = pause;
    if (pause) this.socket.pause();
    else this.socket.resume();
  }

  /** Called every HTTP_TIMEOUT_SWEEP_MS by the server. */
  checkTimeouts(now: number): void {
    if (this.socket.destroyed) return;
    const age = now - this.#since;
    if (this.#closing) {
      // Our FIN is sent; a client that neither closes nor stops sending is dropped.
      if (this.#queue.length === 0 && this.socket.writableEnded && age > HTTP_IDLE_TIMEOUT_MS) this.socket.destroy();
      return;
    }
    if (this.#paused) return; // we are the slow side
    if (this.#slot !== null) {
      if (age > HTTP_BODY_TIMEOUT_MS) this.#fail(`request body not complete within ${HTTP_BODY_TIMEOUT_MS} ms of its head (HTTP_BODY_TIMEOUT_MS)`);
    } else if (this.#headStarted) {
      if (age > HTTP_HEADER_TIMEOUT_MS) this.#fail(`request head not complete within ${HTTP_HEADER_TIMEOUT_MS} ms (HTTP_HEADER_TIMEOUT_MS)`);
    } else if (this.#queue.length === 0 && age > HTTP_IDLE_TIMEOUT_MS) {
      this.socket.destroy(); // idle keep-alive connection, nothing owed
    }
  }
}

export function buildNetHttpServer(front: Front): net.Server {
  const conns = new Set<NetConn>();
  const server = net.createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
    const conn = new NetConn(socket, front);
    conns.add(conn);
    socket.once('close', () => conns.delete(conn));
  });
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const c of conns) c.checkTimeouts(now);
  }, HTTP_TIMEOUT_SWEEP_MS);
  sweep.unref();
  server.once('close', () => clearInterval(sweep));
  return server;
}
