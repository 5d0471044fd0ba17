/**
 * HTTP data plane on uWebSockets.js (spec 4.1-4.7). Every route reads the whole
 * body (bounded by HTTP_BODY_BYTES_MAX), parses JSON once and hands it to the
 * Front. Responses written after the handler returns are corked.
 */
import uWS from 'uWebSockets.js';
import { errorJson, ERRORS, type ErrorCode, type ErrorDetail } from '../errors';
import { HTTP_BODY_BYTES_MAX } from '../limits';
import type { Front } from './front';
import { TRANSPORT_HTTP, type Reply } from './reply';

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 400: '400 Bad Request', 403: '403 Forbidden', 404: '404 Not Found', 405: '405 Method Not Allowed',
  409: '409 Conflict', 413: '413 Payload Too Large', 415: '415 Unsupported Media Type', 500: '500 Internal Server Error',
  501: '501 Not Implemented', 503: '503 Service Unavailable', 504: '504 Gateway Timeout',
};

export function statusLine(status: number): string {
  return STATUS_TEXT[status] ?? `${status} Status`;
}

class HttpReply implements Reply {
  readonly transport = TRANSPORT_HTTP;
  aborted = false;
  constructor(readonly res: uWS.HttpResponse) {}

  #write(status: number, body: string, replay: boolean, close: boolean): void {
    if (this.aborted) return;
    this.aborted = true; // a response is written once
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status)).writeHeader('Content-Type', 'application/json');
      if (replay) this.res.writeHeader('X-Service-Idempotent-Replay', '1');
      this.res.end(body, close);
    });
  }

  ok(body: string, replay = false): void {
    this.#write(200, body, replay, false);
  }

  error(code: ErrorCode, detail: ErrorDetail = {}, registryVersion?: number): void {
    this.#write(ERRORS[code].status, errorJson(code, detail, registryVersion), false, false);
  }

  errorAndClose(code: ErrorCode, detail: ErrorDetail): void {
    this.#write(ERRORS[code].status, errorJson(code, detail), false, true);
  }
}

type BodyHandler = (body: string, reply: HttpReply, req: RequestInfo) => void;

interface RequestInfo {
  contentType: string;
}

/** Reads the body; oversize bodies get http_protocol_error and the connection closes. */
function withBody(front: Front, handler: BodyHandler) {
  return (res: uWS.HttpResponse, req: uWS.HttpRequest): void => {
    front.metrics.httpRequestsTotal++;
    const reply = new HttpReply(res);
    res.onAborted(() => { reply.aborted = true; });
    const info: RequestInfo = { contentType: req.getHeader('content-type') };
    const declared = Number(req.getHeader('content-length') || '0');
    if (declared > HTTP_BODY_BYTES_MAX) {
      front.metrics.error('http_protocol_error');
      reply.errorAndClose('http_protocol_error', { message: `request body of ${declared} bytes is over the ${HTTP_BODY_BYTES_MAX}-byte limit` });
      return;
    }
    let chunks: Buffer[] | null = null;
    let size = 0;
    res.onData((ab, isLast) => {
      if (reply.aborted) return;
      size += ab.byteLength;
      if (size > HTTP_BODY_BYTES_MAX) {
        front.metrics.error('http_protocol_error');
        reply.errorAndClose('http_protocol_error', { message: `request body is over the ${HTTP_BODY_BYTES_MAX}-byte limit` });
        return;
      }
      // uWS reuses the ArrayBuffer after this callback. A body in one chunk (the
      // common case) is decoded straight from it; earlier chunks are copied.
      if (!isLast) { (chunks ??= []).push(Buffer.from(ab.slice(0))); return; }
      const body = chunks === null ? Buffer.from(ab).toString('utf8') : Buffer.concat([...chunks, Buffer.from(ab)]).toString('utf8');
      try {
        handler(body, reply, info);
      } catch (err) {
        front.log.error({ kind: 'server.internal_error', err: String((err as Error)?.stack ?? err) });
        reply.error('internal_error', { reason: String(err) });
      }
    });
  };
}

/** Parses JSON; on failure answers invalid_json_body and returns undefined. */
function parseJson(front: Front, body: string, reply: Reply, withVersion = true): unknown {
  try {
    return JSON.parse(body);
  } catch (err) {
    front.metrics.error('invalid_json_body');
    reply.error('invalid_json_body', { message: `body is not valid JSON: ${(err as Error).message}` }, withVersion ? front.version : undefined);
    return undefined;
  }
}

const ROUTES: Record<string, string> = {
  '/push': 'POST', '/register': 'POST', '/get': 'POST', '/batch_get': 'POST', '/ping': 'POST', '/reset': 'POST', '/registry': 'GET',
};

export function buildHttpApp(front: Front): uWS.TemplatedApp {
  const app = uWS.App();
  // Get-family errors carry no registry_version (docs/wire.md).
  const json = (fn: (v: unknown, reply: Reply) => void): BodyHandler => (body, reply) => {
    const v = parseJson(front, body, reply, false);
    if (v !== undefined) fn(v, reply);
  };
  app.post('/push', withBody(front, (text, reply) => {
    const v = parseJson(front, text, reply);
    if (v !== undefined) front.push(v, text, reply);
  }));
  app.post('/get', withBody(front, json((v, r) => front.get(v, r))));
  app.post('/batch_get', withBody(front, json((v, r) => front.batchGet(v, r))));
  app.post('/ping', withBody(front, (_b, r) => front.ping(r)));
  app.post('/reset', withBody(front, (_b, r) => front.reset(r)));
  app.post('/register', withBody(front, (body, reply, info) => {
    const ct = info.contentType.split(';')[0].trim().toLowerCase();
    if (ct !== 'application/json') {
      front.metrics.error('unsupported_media_type');
      reply.error('unsupported_media_type', { message: `Content-Type must be application/json, got ${JSON.stringify(info.contentType)}`, path: '/register' }, front.version);
      return;
    }
    const v = parseJson(front, body, reply);
    if (v !== undefined) front.register(v, reply);
  }));
  app.get('/registry', (res) => {
    res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end(front.registryBody());
  });
  app.any('/*', (res, req) => {
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const path = req.getUrl();
    const allowed = ROUTES[path];
    const code: ErrorCode = allowed === undefined ? 'not_found' : 'method_not_allowed';
    front.metrics.error(code);
    const detail: ErrorDetail = allowed === undefined
      ? { message: `no route ${method} ${path}`, path }
      : { message: `${method} is not allowed on ${path}; use ${allowed}`, extra: { method, path } };
    res.writeStatus(statusLine(ERRORS[code].status)).writeHeader('Content-Type', 'application/json');
    if (allowed !== undefined) res.writeHeader('Allow', allowed);
    res.end(errorJson(code, detail));
  });
  return app;
}
