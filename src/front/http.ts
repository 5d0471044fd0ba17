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
 * route lookup in JS), the headers are walked once (below) and the values routes
 * and auth need are kept from that walk, a push body is read from uWS's buffer without being decoded (push_text.ts; other
 * bodies are decoded straight from that buffer), the ack is written as bytes
 * (push.ts ackBytes), and every response is written by one shared cork callback.
 * Anything else (404, 405, HEAD, `/push/{event}`, a trailing slash) goes through
 * the catch-all route and resolveRoute.
 *
 * uWS frames a request by its first Content-Length; a second one is read by a
 * proxy in front that frames by the last as part of the body, which smuggles the
 * rest past it as a request of its own. So every head's headers are walked once
 * (headProblem: ~0.2 µs and ~250 B per request with five headers, the strings uWS
 * makes for each name and value; uWS has no cheaper way to see a second header)
 * and one with two Content-Lengths, a Transfer-Encoding other than
 * `chunked`, or two Authorization headers is refused before any route runs. uWS
 * itself refuses Content-Length with Transfer-Encoding, a repeated or unknown
 * Transfer-Encoding and a Content-Length that is not a number (its own 400).
 * HTTP connections are counted (app.filter): one over the cap gets 503
 * too_many_connections before its first request and is closed.
 */
import uWS from 'uWebSockets.js';
import { HTTP_BODY_BYTES_MAX } from '../limits';
import type { Front } from './front';
import { ackBytes } from './push';
import {
  bodyTooLarge, HttpReply, refusedByAuth, refuseHead, resolveRoute, ROUTES, runPushBytes, runRoute, runRouteOn, statusLine, tooManyHttpConnections, type Header, type Route,
} from './http_routes';

const CONTENT_TYPE = Buffer.from('Content-Type');
const CONTENT_LENGTH = Buffer.from('Content-Length');
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
let wHead = false;

function corked(): void {
  const res = wRes!;
  // uWS writes "200 OK" itself when no status was written.
  if (wStatus !== 200) res.writeStatus(statusBytes(wStatus));
  res.writeHeader(CONTENT_TYPE, APPLICATION_JSON);
  if (wHeader !== null) res.writeHeader(wHeader[0], wHeader[1]);
  if (!wHead) res.end(wBody, wClose);
  // HEAD: endWithoutBody(length) of this uWS leaves the response pending (the next request
  // on the connection closes it), so the length is written as a header and the call takes
  // no argument; a HEAD answer that closes the connection can only be end('', true), which
  // says Content-Length: 0.
  else if (wClose) res.end('', true);
  else {
    res.writeHeader(CONTENT_LENGTH, String(typeof wBody === 'string' ? Buffer.byteLength(wBody) : wBody.length));
    res.endWithoutBody();
  }
}

// Headers of the request being checked (headProblem): counted by one shared callback, not a closure per
// request. The values are those of the request whose handler runs (valid until it returns).
let hContentLength = 0;
let hTransferEncoding = 0;
let hAuthorization = 0;
let hBadCoding = '';
let vContentLength = '';
let vAuthorization = '';
let vContentType = '';

/** req.forEach's callback: uWS lower-cases names. */
function countHeader(name: string, value: string): void {
  switch (name.length) {
    case 12:
      if (name === 'content-type' && vContentType === '') vContentType = value;
      break;
    case 13:
      if (name === 'authorization') { hAuthorization++; vAuthorization = value; }
      break;
    case 14:
      if (name === 'content-length') { hContentLength++; vContentLength = value; }
      break;
    case 17:
      if (name === 'transfer-encoding') {
        hTransferEncoding++;
        if (value.toLowerCase() !== 'chunked') hBadCoding = value;
      }
      break;
    default:
      break;
  }
}

/** Why the head of `req` is refused ('' when it is not): see the file comment. */
function headProblem(req: uWS.HttpRequest): string {
  hContentLength = 0;
  hTransferEncoding = 0;
  hAuthorization = 0;
  hBadCoding = '';
  vContentLength = '';
  vAuthorization = '';
  vContentType = '';
  req.forEach(countHeader);
  if (hContentLength > 1) return `${hContentLength} Content-Length headers; a request has at most one`;
  if (hContentLength + hTransferEncoding > 1) return 'Content-Length and Transfer-Encoding together, or Transfer-Encoding twice; send one of them once';
  if (hBadCoding !== '') return `Transfer-Encoding ${JSON.stringify(hBadCoding.slice(0, 40))} is not supported; send a Content-Length or "chunked"`;
  if (hAuthorization > 1) return `${hAuthorization} Authorization headers; send the token once`;
  return '';
}

/**
 * True (the 400 is on its way) when the head of `req` is refused. Not answered at
 * once: uWS goes on parsing what followed this request in the same read, and an
 * answered request lets the next one be routed (the smuggled one). Unanswered, a
 * next request makes uWS close the connection without routing it; otherwise the
 * 400 goes out on the next turn and the connection closes.
 */
function refusedHead(reply: UwsReply, req: uWS.HttpRequest): boolean {
  const problem = headProblem(req);
  if (problem === '') return false;
  setImmediate(() => refuseHead(reply, problem));
  return true;
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
    wHead = this.head;
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
    const bytes = chunks === null ? new Uint8Array(ab) : Buffer.concat([...chunks, Buffer.from(ab)]);
    // A push in one chunk is read from its bytes when it can be (no body string at all).
    if (chunks === null && route.pushBytes === true && runPushBytes(this.front, bytes, this)) return;
    this.#chunks = null;
    runRouteOn(this.front, route, bytes, this, this.#contentType);
  }
}

/** A request on a route resolved already (auth still to check). */
function serve(front: Front, route: Route, res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  const reply = new UwsReply(res, front);
  if (refusedHead(reply, req)) return;
  if (front.opts.auth !== null && refusedByAuth(front, reply, vAuthorization)) return;
  start(front, route, reply);
}

/** Runs `route` (head checked, auth passed): at once without a body, else once its body has arrived. */
function start(front: Front, route: Route, reply: UwsReply): void {
  const contentType = route.readsContentType === true ? vContentType : '';
  if (!route.readsBody) { runRoute(front, route, '', reply, contentType); return; }
  reply.readBody(route, contentType, Number(vContentLength || '0'));
}

/** The data plane's uWS app; at most `connectionsMax` connections open at once. */
export function buildHttpApp(front: Front, connectionsMax: number): uWS.TemplatedApp {
  const app = uWS.App();
  let open = 0;
  // Called with +1 when a connection opens (before anything is read) and -1 when it closes, refused ones too.
  app.filter((res, change) => {
    open += change as number;
    if (change !== 1 || open <= connectionsMax) return;
    front.metrics.error('too_many_connections');
    const body = tooManyHttpConnections(open - 1, connectionsMax);
    res.cork(() => {
      res.writeStatus(statusBytes(503));
      res.writeHeader(CONTENT_TYPE, APPLICATION_JSON);
      res.end(body, true);
    });
  });
  for (const [path, route] of ROUTES) {
    const handler = (res: uWS.HttpResponse, req: uWS.HttpRequest): void => serve(front, route, res, req);
    if (route.method === 'POST') app.post(path, handler);
    else app.get(path, handler);
  }
  app.any('/*', (res, req) => {
    const reply = new UwsReply(res, front);
    reply.head = req.getMethod() === 'head';
    if (refusedHead(reply, req)) return;
    const route = resolveRoute(front, req.getCaseSensitiveMethod(), req.getUrl(), reply, vAuthorization);
    if (route !== null) start(front, route, reply);
  });
  return app;
}
