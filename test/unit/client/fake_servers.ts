/**
 * Fake servers for the client tests: a node:http server and a node:net framed
 * server whose answers each test scripts. They record every request so tests
 * can check exactly what the client sent.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { FrameDecoder, encodeFrame } from '../../../src/protocol/frame';
import { prng } from '../../harness/prng';
export { prng };

export interface HttpRequestSeen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: unknown;
}

export interface HttpAnswer {
  status?: number;
  body?: string | object;
  headers?: Record<string, string>;
  /** Never answer (the client must time out). */
  hang?: boolean;
  /** Destroy the socket without answering. */
  reset?: boolean;
}

export type HttpHandler = (req: HttpRequestSeen, index: number) => HttpAnswer | Promise<HttpAnswer>;

export interface FakeHttp {
  url: string;
  port: number;
  requests: HttpRequestSeen[];
  close(): Promise<void>;
}

export async function startFakeHttp(handler: HttpHandler): Promise<FakeHttp> {
  const requests: HttpRequestSeen[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown = undefined;
      try {
        json = body === '' ? undefined : JSON.parse(body);
      } catch {
        json = undefined;
      }
      const seen: HttpRequestSeen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, json };
      requests.push(seen);
      void Promise.resolve(handler(seen, requests.length - 1)).then((a) => {
        if (a.hang === true) return;
        if (a.reset === true) {
          req.socket.destroy();
          return;
        }
        const text = a.body === undefined ? '{}' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
        res.writeHead(a.status ?? 200, { 'content-type': 'application/json', ...(a.headers ?? {}) });
        res.end(text);
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface TcpFrameSeen {
  op: number;
  contentType: number;
  body: string;
  json: unknown;
  /** Which connection (0, 1, ...) carried it. */
  conn: number;
}

export interface TcpAnswer {
  op?: number;
  body?: string | object;
  /** Send the reply in pieces of this many bytes (tests the decoder). */
  chunkBytes?: number;
  hang?: boolean;
  close?: boolean;
  delayMs?: number;
  /** Raw bytes instead of a frame. */
  raw?: Buffer;
}

export type TcpHandler = (frame: TcpFrameSeen, index: number) => TcpAnswer | Promise<TcpAnswer>;

export interface FakeTcp {
  url: string;
  port: number;
  frames: TcpFrameSeen[];
  connections: number;
  /** Highest number of requests seen outstanding on one connection at once. */
  maxInFlightPerConn: number;
  /** Highest number of requests outstanding across all connections at once. */
  maxInFlightTotal: number;
  close(): Promise<void>;
}

export async function startFakeTcp(handler: TcpHandler): Promise<FakeTcp> {
  const sockets = new Set<net.Socket>();
  let inFlightTotal = 0;
  const state: FakeTcp = {
    url: '',
    port: 0,
    frames: [],
    connections: 0,
    maxInFlightPerConn: 0,
    maxInFlightTotal: 0,
    close: async () => undefined,
  };
  const server = net.createServer((socket) => {
    const conn = state.connections++;
    sockets.add(socket);
    // Without this, Nagle plus delayed ACKs holds each small chunked write ~40 ms.
    socket.setNoDelay(true);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const decoder = new FrameDecoder(64 * 1024 * 1024);
    let inFlight = 0;
    let chain = Promise.resolve();
    socket.on('data', (chunk: Buffer) => {
      decoder.push(chunk);
      for (;;) {
        const r = decoder.next();
        if (r.kind !== 'frame') break;
        const body = r.frame.payload.toString('utf8');
        let json: unknown = undefined;
        try {
          json = body === '' ? undefined : JSON.parse(body);
        } catch {
          json = undefined;
        }
        const seen: TcpFrameSeen = { op: r.frame.op, contentType: r.frame.contentType, body, json, conn };
        state.frames.push(seen);
        const index = state.frames.length - 1;
        inFlight++;
        inFlightTotal++;
        state.maxInFlightPerConn = Math.max(state.maxInFlightPerConn, inFlight);
        state.maxInFlightTotal = Math.max(state.maxInFlightTotal, inFlightTotal);
        // Replies go out in request order (FIFO), like the real server.
        chain = chain.then(async () => {
          const a = await handler(seen, index);
          if (a.delayMs !== undefined) await new Promise((r2) => setTimeout(r2, a.delayMs));
          if (a.hang === true) return new Promise<void>(() => undefined);
          inFlight--;
          inFlightTotal--;
          if (a.close === true) {
            socket.destroy();
            return;
          }
          const bytes =
            a.raw ?? encodeFrame(a.op ?? seen.op, a.body === undefined ? '{}' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body));
          await writeChunked(socket, bytes, a.chunkBytes ?? bytes.length);
        });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  state.url = `tcp://127.0.0.1:${port}`;
  state.port = port;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return state;
}

async function writeChunked(socket: net.Socket, bytes: Buffer, chunkBytes: number): Promise<void> {
  for (let i = 0; i < bytes.length; i += chunkBytes) {
    if (socket.destroyed) return;
    socket.write(bytes.subarray(i, i + chunkBytes));
    if (chunkBytes < bytes.length) await new Promise((r) => setImmediate(r));
  }
}

/** A port nothing listens on (bound then released). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

