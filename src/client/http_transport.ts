/**
 * HTTP/JSON transport (spec 4.1-4.7) over node:http with a keep-alive agent, so
 * consecutive calls reuse connections instead of paying a TCP handshake each.
 */
import http from 'node:http';
import https from 'node:https';
import { StreamfeatError, errorFromBody, timeoutError, transportError } from './errors';
import type { Operation, Reply, Transport } from './transport';

/** Keep-alive sockets per host; bounds how many requests run in parallel. */
export const HTTP_SOCKETS_MAX_DEFAULT = 16;
/** Idle keep-alive sockets kept open per host. */
export const HTTP_FREE_SOCKETS_MAX = 8;
const REPLAY_HEADER = 'x-service-idempotent-replay';

const ROUTES: Record<Operation, { method: 'GET' | 'POST'; path: string }> = {
  ping: { method: 'POST', path: '/ping' },
  register: { method: 'POST', path: '/register' },
  push: { method: 'POST', path: '/push' },
  get: { method: 'POST', path: '/get' },
  batch_get: { method: 'POST', path: '/batch_get' },
  reset: { method: 'POST', path: '/reset' },
  registry: { method: 'GET', path: '/registry' },
  forget: { method: 'POST', path: '/forget' },
};

export interface HttpTransportOptions {
  socketsMax?: number;
  /** Extra headers on every request (e.g. for a proxy in front of the server). */
  headers?: Record<string, string>;
}

export class HttpTransport implements Transport {
  readonly endpoint: string;
  readonly #module: typeof http | typeof https;
  readonly #agent: http.Agent;
  readonly #hostname: string;
  readonly #port: number;
  readonly #basePath: string;
  readonly #headers: Record<string, string>;
  #closed = false;

  constructor(url: URL, opts: HttpTransportOptions = {}) {
    const secure = url.protocol === 'https:';
    this.#module = secure ? https : http;
    this.#hostname = url.hostname.replace(/^\[|\]$/g, '');
    this.#port = url.port === '' ? (secure ? 443 : 80) : Number(url.port);
    this.#basePath = url.pathname.replace(/\/+$/, '');
    this.endpoint = `${url.protocol}//${url.host}${this.#basePath}`;
    const agentOpts = { keepAlive: true, maxSockets: opts.socketsMax ?? HTTP_SOCKETS_MAX_DEFAULT, maxFreeSockets: HTTP_FREE_SOCKETS_MAX };
    this.#agent = secure ? new https.Agent(agentOpts) : new http.Agent(agentOpts);
    this.#headers = opts.headers ?? {};
  }

  send(op: Operation, body: string, timeoutMs: number): Promise<Reply> {
    if (this.#closed) return Promise.reject(closedError());
    const route = ROUTES[op];
    const headers: Record<string, string | number> = { ...this.#headers, accept: 'application/json' };
    const payload = route.method === 'POST' ? Buffer.from(body, 'utf8') : null;
    if (payload !== null) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = payload.length;
    }
    return new Promise<Reply>((resolve, reject) => {
      const req = this.#module.request({
        agent: this.#agent,
        hostname: this.#hostname,
        port: this.#port,
        method: route.method,
        path: this.#basePath + route.path,
        headers,
      });
      let settled = false;
      const finish = (err: StreamfeatError | null, reply: Reply | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err !== null) reject(err);
        else resolve(reply as Reply);
      };
      const timer = setTimeout(() => {
        finish(timeoutError(timeoutMs), null);
        req.destroy();
      }, timeoutMs);
      req.on('error', (err) => finish(transportError(err), null));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => finish(transportError(err), null));
        res.on('aborted', () => finish(transportError(Object.assign(new Error('response aborted'), { code: 'ECONNRESET' })), null));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) finish(null, { body: text, replay: res.headers[REPLAY_HEADER] === '1' });
          else finish(errorFromBody(text, status), null);
        });
      });
      req.end(payload ?? undefined);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#agent.destroy();
  }
}

function closedError(): StreamfeatError {
  return new StreamfeatError('ECONNABORTED', 'client is closed', { status: 0 });
}
