/**
 * A raw HTTP/1.1 client for tests of the HTTP engines: writes any bytes
 * (pipelined requests, chunked bodies, broken heads) on one socket and reads
 * the responses in order, interim 100 Continue included, framed by
 * Content-Length (both engines send it on every response).
 */
import net from 'node:net';

export interface RawResponse {
  status: number;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: string;
  json: any;
}

export class RawHttp {
  readonly socket: net.Socket;
  #buf = Buffer.alloc(0);
  readonly #ready: RawResponse[] = [];
  readonly #waiting: Array<(r: RawResponse | null) => void> = [];
  #ended = false;
  /** Resolves when the server closes (FIN or reset). */
  readonly closed: Promise<void>;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('error', () => {});
    socket.on('data', (d: Buffer) => this.#onData(d));
    this.closed = new Promise((resolve) => {
      const done = (): void => {
        this.#ended = true;
        for (const w of this.#waiting.splice(0)) w(null);
        resolve();
      };
      socket.once('end', done);
      socket.once('close', done);
    });
  }

  static connect(port: number): Promise<RawHttp> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ port, host: '127.0.0.1' }, () => resolve(new RawHttp(s)));
      s.once('error', reject);
    });
  }

  write(data: string | Buffer): Promise<void> {
    return new Promise((resolve) => this.socket.write(data, () => resolve()));
  }

  /** The next response, or null if the server closed first; rejects after `ms`. */
  next(ms = 15_000): Promise<RawResponse | null> {
    const r = this.#ready.shift();
    if (r !== undefined) return Promise.resolve(r);
    if (this.#ended) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no HTTP response within ${ms} ms`)), ms);
      this.#waiting.push((x) => { clearTimeout(t); resolve(x); });
    });
  }

  /** Everything the server sends until it closes. */
  async rest(ms = 15_000): Promise<RawResponse[]> {
    const out: RawResponse[] = [];
    for (;;) {
      const r = await this.next(ms);
      if (r === null) return out;
      out.push(r);
    }
  }

  close(): void {
    this.socket.destroy();
  }

  #onData(d: Buffer): void {
    this.#buf = Buffer.concat([this.#buf, d]);
    for (;;) {
      const end = this.#buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const lines = this.#buf.subarray(0, end).toString('latin1').split('\r\n');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
      if (m === null) throw new Error(`bad status line ${JSON.stringify(lines[0])}`);
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        const c = l.indexOf(':');
        headers[l.slice(0, c).trim().toLowerCase()] = l.slice(c + 1).trim();
      }
      const len = Number(headers['content-length'] ?? '0');
      if (this.#buf.length < end + 4 + len) return;
      const body = this.#buf.subarray(end + 4, end + 4 + len).toString('utf8');
      this.#buf = this.#buf.subarray(end + 4 + len);
      let json: unknown;
      try { json = JSON.parse(body); } catch { json = undefined; }
      const r: RawResponse = { status: Number(m[1]), headers, body, json };
      const w = this.#waiting.shift();
      if (w !== undefined) w(r); else this.#ready.push(r);
    }
  }
}

/** One request's bytes: `POST path` with a JSON body and Content-Length, plus extra head lines. */
export function rawRequest(path: string, body: unknown, extra: string[] = [], method = 'POST'): string {
  const b = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
  return [`${method} ${path} HTTP/1.1`, 'Host: x', 'Content-Type: application/json', `Content-Length: ${Buffer.byteLength(b)}`, ...extra, '', b].join('\r\n');
}
