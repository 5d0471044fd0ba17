/**
 * HTTP data plane on uWebSockets.js, the default engine (`--http-engine uws`).
 * Routes live in http_routes.ts (shared with the node:net engine); this file
 * adapts uWS: it reads the whole body (bounded by HTTP_BODY_BYTES_MAX) and
 * writes each response corked. uWS closes a connection on which a pipelined
 * request arrives while an earlier one is still answered asynchronously
 * (uNetworking/uWebSockets.js#277); pipelining clients use `--http-engine net`.
 *
 * Every push passes through here, so a request allocates little: each exact
 * route is registered with uWS for its method (no URL or method string read, no
 * route lookup in JS), headers are read only when the route or auth needs them,
 * a push body is read from uWS's buffer without being decoded (push_text.ts; other
 * bodies are decoded straight from that buffer), the ack is written as bytes
 * (push.ts ackBytes), and every response is written by one shared cork callback.
 * Anything else (404, 405, `/push/{event}`, a trailing slash) goes through the
 * catch-all route and resolveRoute.
 */
import uWS from 'uWebSockets.js';
import { HTTP_BODY_BYTES_MAX } from '../limits';
import type { Front } from './front';
import { ackBytes } from './push';
import { bodyTooLarge, HttpReply, refusedByAuth, resolveRoute, ROUTES, runPushBytes, runRoute, statusLine, type Header, type Route } from './http_routes';

/**
 * UTF-8 as Buffer#toString decodes it (invalid bytes become U+FFFD), but straight
 * from the ArrayBuffer uWS lends (no Buffer object per body) and about twice as
 * fast on a push body. `ignoreBOM`: a leading BOM stays in the text, as it did
 * (JSON.parse refuses it: invalid_json_body).
 */
const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });

const CONTENT_TYPE = Buffer.from('Content-Type');
const APPLICATION_JSON = Buffer.from('application/json');
/** Status lines as bytes, made on first use (uWS copies a string argument through a UTF-8 conversion). */
const STATUS_BYTES = new Map<number, Buffer>();

function statusBytes(status: number): Buffer {
  let b = STATUS_BYTES.get(status);
  if (b === undefined) { b = Buffer.from(statusLine(status), 'latin1'); STATUS_BYTES.set(status, b); }
  return b;
}

// The response being written: res.cork runs its callback at once, so one
// callback (corked) serves every response instead of a closure per response.
let wRes: uWS.HttpResponse | null = null;
let wStatus = 0;
let wBody: string | Uint8Array = '';
let wHeader: Header | null = null;
let wClose = false;

function corked(): void {
  const res = wRes!;
  // uWS writes "200 OK" itself when no status was written.
  if (wStatus !== 200) res.writeStatus(statusBytes(wStatus));
  res.writeHeader(CONTENT_TYPE, APPLICATION_JSON);
  if (wHeader !== null) res.writeHeader(wHeader[0], wHeader[1]);
  res.end(wBody, wClose);
}

/**
 * One request: its reply, and the state of reading its body. uWS wants an abort
 * handler and a data handler per request; `events` is both (one closure per
 * request instead of two, and their contexts): uWS calls it with no argument
 * when the client went away, with a body chunk otherwise.
 */
class UwsReply extends HttpReply {
  aborted = false;
  #route: Route | null = null;
  #contentType = '';
  #chunks: Buffer[] | null = null;
  #size = 0;
  readonly events = (ab?: ArrayBuffer, isLast?: boolean): void => {
    if (ab === undefined) this.aborted = true;
    else this.#data(ab, isLast === true);
  };

  constructor(readonly res: uWS.HttpResponse, readonly front: Front) {
    super(front.metrics);
    res.onAborted(this.events);
  }

  write(status: number, body: string, header: Header | null, close: boolean): void {
    this.#send(status, body, header, close);
  }

  override ack(lsn: number, version: number): void {
    this.#send(200, ackBytes(lsn, version), null, false);
  }

  #send(status: number, body: string | Uint8Array, header: Header | null, close: boolean): void {
    if (this.aborted) return;
    this.aborted = true; // a response is written once
    wRes = this.res;
    wStatus = status;
    wBody = body;
    wHeader = header;
    wClose = close;
    try {
      this.res.cork(corked);
    } finally {
      wRes = null;
      wBody = '';
      wHeader = null;
    }
  }

  /**
   * Reads the body of a request on `route` (head checks done), then runs the route.
   * `contentType` is '' unless the route reads it.
   */
  readBody(route: Route, contentType: string, declared: number): void {
    if (declared > HTTP_BODY_BYTES_MAX) { bodyTooLarge(this, declared); return; }
    this.#route = route;
    this.#contentType = contentType;
    this.res.onData(this.events);
  }

  #data(ab: ArrayBuffer, isLast: boolean): void {
    if (this.aborted) return;
    this.#size += ab.byteLength;
    if (this.#size > HTTP_BODY_BYTES_MAX) { bodyTooLarge(this, null); return; }
    // uWS reuses the ArrayBuffer after this callback. A body in one chunk (the
    // common case) is decoded straight from it; earlier chunks are copied.
    if (!isLast) { (this.#chunks ??= []).push(Buffer.from(ab.slice(0))); return; }
    const chunks = this.#chunks;
    const route = this.#route!;
    // A push in one chunk is read from its bytes when it can be (no body string at all).
    if (chunks === null && route.pushBytes === true && runPushBytes(this.front, new Uint8Array(ab), this)) return;
    const body = chunks === null ? UTF8.decode(ab) : Buffer.concat([...chunks, Buffer.from(ab)]).toString('utf8');
    this.#chunks = null;
    runRoute(this.front, route, body, this, this.#contentType);
  }
}

/** A request on a route resolved already (auth still to check). */
function serve(front: Front, route: Route, res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  const reply = new UwsReply(res, front);
  if (front.opts.auth !== null && refusedByAuth(front, reply, req.getHeader('authorization'))) return;
  start(front, route, reply, req);
}

/** Runs `route` (auth passed): at once without a body, else once its body has arrived. */
function start(front: Front, route: Route, reply: UwsReply, req: uWS.HttpRequest): void {
  const contentType = route.readsContentType === true ? req.getHeader('content-type') : '';
  if (!route.readsBody) { runRoute(front, route, '', reply, contentType); return; }
  reply.readBody(route, contentType, Number(req.getHeader('content-length') || '0'));
}

export function buildHttpApp(front: Front): uWS.TemplatedApp {
  const app = uWS.App();
  for (const [path, route] of ROUTES) {
    const handler = (res: uWS.HttpResponse, req: uWS.HttpRequest): void => serve(front, route, res, req);
    if (route.method === 'POST') app.post(path, handler);
    else app.get(path, handler);
  }
  app.any('/*', (res, req) => {
    const reply = new UwsReply(res, front);
    const route = resolveRoute(front, req.getCaseSensitiveMethod(), req.getUrl(), reply, req.getHeader('authorization'));
    if (route !== null) start(front, route, reply, req);
  });
  return app;
}
