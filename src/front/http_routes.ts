/**
 * The HTTP data plane's routes (spec 4.1-4.7), independent of the HTTP engine.
 * Both engines (uWebSockets.js in http.ts, node:net in http_net.ts) resolve a
 * request head here and hand the whole body to the route with an HttpReply, so
 * a route, a method rule or a content-type rule changes in one place for both.
 */
import { errorJson, ERRORS, type ErrorCode, type ErrorDetail } from '../errors';
import { HTTP_BODY_BYTES_MAX } from '../limits';
import type { Metrics } from '../admin/metrics';
import type { Front } from './front';
import { isValidName } from '../registry/model';
import { TRANSPORT_HTTP, type Reply } from './reply';
import { handlePushBytes, handlePushTo, handleRequest, refuseNotUtf8, type BodyKind, type RequestKind } from './requests';
import { ackBody } from './push';
import { isUtf8Range } from '../util/utf8';

/**
 * UTF-8 as Buffer#toString decodes it, but straight from a Uint8Array (uWS lends an
 * ArrayBuffer: no Buffer object per body) and about twice as fast on a push body.
 * Bodies are checked to be UTF-8 first (runRouteOn), so nothing is replaced.
 * `ignoreBOM`: a leading BOM stays in the text (JSON.parse refuses it: invalid_json_body).
 */
const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 400: '400 Bad Request', 401: '401 Unauthorized', 403: '403 Forbidden', 404: '404 Not Found', 405: '405 Method Not Allowed',
  409: '409 Conflict', 413: '413 Payload Too Large', 415: '415 Unsupported Media Type', 500: '500 Internal Server Error',
  501: '501 Not Implemented', 503: '503 Service Unavailable', 504: '504 Gateway Timeout',
};

export function statusLine(status: number): string {
  return STATUS_TEXT[status] ?? `${status} Status`;
}

/** One response header beyond Content-Type (and the engine's framing headers). */
export type Header = readonly [name: string, value: string];

const REPLAY_HEADER: Header = ['X-Service-Idempotent-Replay', '1'];

/**
 * A Reply over HTTP: every answer is one JSON response. An engine implements
 * `write` (called at most once per request; later calls are ignored). Every error
 * answer goes through `refuse`, which counts it in the error metrics.
 */
export abstract class HttpReply implements Reply {
  readonly transport = TRANSPORT_HTTP;
  /** The request is HEAD: its answer is written with the Content-Length its body has, and without the body (RFC 9110 9.3.2). */
  head = false;
  constructor(readonly metrics: Metrics) {}
  abstract write(status: number, body: string, header: Header | null, close: boolean): void;

  ok(body: string, replay = false): void {
    this.write(200, body, replay ? REPLAY_HEADER : null, false);
  }

  ack(lsn: number, version: number): void {
    this.ok(ackBody(lsn, version, false));
  }

  error(code: ErrorCode, detail: ErrorDetail = {}, registryVersion?: number): void {
    this.refuse(code, detail, registryVersion, null, false);
  }

  /** The request cannot be framed or read (oversize, malformed): answer, then close the connection. */
  errorAndClose(code: ErrorCode, detail: ErrorDetail): void {
    this.refuse(code, detail, undefined, null, true);
  }

  /** An error answer with one extra header and/or closing the connection after it. */
  refuse(code: ErrorCode, detail: ErrorDetail, registryVersion: number | undefined, header: Header | null, close: boolean): void {
    this.metrics.error(code);
    this.write(ERRORS[code].status, errorJson(code, detail, registryVersion), header, close);
  }
}

export interface Route {
  readonly method: string;
  /** GET /registry ignores its body; the uWS engine then answers without reading it. */
  readonly readsBody: boolean;
  /**
   * Reset and register change the registry every later request is judged under: an
   * engine that pipelines (http_net.ts) runs the requests behind one only once it is
   * answered, as tcp.ts does for frames.
   */
  readonly barrier?: boolean;
  /** The route reads the Content-Type header (the uWS engine fetches it only then). */
  readonly readsContentType?: boolean;
  /** POST /push: an engine holding the body's bytes tries runPushBytes before decoding them. */
  readonly pushBytes?: boolean;
  /** The body is JSON of this kind: it must be UTF-8 (runRouteOn), and an error about it follows the kind's envelope rule. */
  readonly bodyKind?: BodyKind;
  run(front: Front, body: string, reply: HttpReply, contentType: string): void;
}

/** A POST route answered by the request adapter (requests.ts, the same for TCP). */
function requestRoute(kind: RequestKind, barrier = false): Route {
  const bodyKind = kind === 'ping' || kind === 'reset' ? undefined : kind;
  return { method: 'POST', readsBody: true, barrier, bodyKind, run: (front, body, reply) => handleRequest(front, kind, body, reply) };
}

/**
 * The exact routes. A Map, not an object: a path like `/constructor` must not find
 * Object.prototype members. The uWS engine also registers each one with uWS
 * (http.ts), so that a request to one is not routed by its URL string in JS.
 */
export const ROUTES: ReadonlyMap<string, Route> = new Map<string, Route>([
  ['/push', { ...requestRoute('push'), pushBytes: true }],
  ['/get', requestRoute('get')],
  ['/batch_get', requestRoute('batch_get')],
  // An extension of the spec (docs/wire.md "Forgetting an entity").
  ['/forget', requestRoute('forget')],
  ['/ping', requestRoute('ping')],
  ['/reset', requestRoute('reset', true)],
  ['/register', {
    method: 'POST',
    readsBody: true,
    barrier: true,
    readsContentType: true,
    bodyKind: 'register',
    run(front, body, reply, contentType) {
      const ct = contentType.split(';')[0].trim().toLowerCase();
      if (ct !== 'application/json') {
        reply.error('unsupported_media_type', { message: `Content-Type must be application/json, got ${JSON.stringify(contentType)}`, path: '/register' }, front.version);
        return;
      }
      handleRequest(front, 'register', body, reply);
    },
  }],
  ['/registry', { method: 'GET', readsBody: false, run: (front, _b, reply) => reply.ok(front.registryBody()) }],
  // beava serves these on the data plane too (docs/compatibility.md); the admin sidecar keeps
  // its own (spec 4.7). The data plane listens only once recovery is done, so it is ready
  // whenever it answers.
  ['/health', { method: 'GET', readsBody: false, run: (_f, _b, reply) => reply.ok('{"status":"ok"}') }],
  ['/ready', { method: 'GET', readsBody: false, run: (_f, _b, reply) => reply.ok('{"status":"ready"}') }],
]);

/** `POST /push/{event}`: the peer's form of push (body = the data object), for producers written for it. */
const PUSH_PATH_PREFIX = '/push/';

function pushPathRoute(event: string): Route {
  return { method: 'POST', readsBody: true, bodyKind: 'push', run: (front, body, reply) => handlePushTo(front, event, body, reply) };
}

/** The route of a path: exact routes, then `/push/{event}`. A trailing slash is ignored (as the peer does). */
function routeOf(path: string): Route | undefined {
  const p = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  const exact = ROUTES.get(p);
  if (exact !== undefined) return exact;
  if (p.startsWith(PUSH_PATH_PREFIX)) {
    const event = p.slice(PUSH_PATH_PREFIX.length);
    if (isValidName(event)) return pushPathRoute(event);
  }
  return undefined;
}

const WWW_AUTHENTICATE: Header = ['WWW-Authenticate', 'Bearer realm="streamfeat"'];

/**
 * The route of a request head, or null when the request is answered already
 * (auth on and the token missing or wrong: 401 unauthorized, then close, for every
 * path, so routes are not revealed either; unknown route: 404 not_found; known
 * route, wrong method: 405 with Allow). `method` is matched case-insensitively
 * (uWS lower-cases methods); HEAD is served by a GET route (the engine writes no
 * body: reply.head). `authorization` is the header's value ('' if absent).
 */
export function resolveRoute(front: Front, method: string, path: string, reply: HttpReply, authorization: string): Route | null {
  if (refusedByAuth(front, reply, authorization)) return null;
  const route = routeOf(path);
  const m = method.toUpperCase();
  if (route !== undefined && (route.method === m || (m === 'HEAD' && route.method === 'GET'))) return route;
  const code: ErrorCode = route === undefined ? 'not_found' : 'method_not_allowed';
  const detail: ErrorDetail = route === undefined
    ? { message: `no route ${m} ${path}`, path }
    : { message: `${m} is not allowed on ${path}; use ${route.method}`, extra: { method: m, path } };
  reply.refuse(code, detail, undefined, route === undefined ? null : route.method === 'GET' ? ALLOW_GET : ALLOW_POST, false);
  return null;
}

const ALLOW_GET: Header = ['Allow', 'GET, HEAD'];
const ALLOW_POST: Header = ['Allow', 'POST'];

/**
 * True (after answering 401 unauthorized and closing) when auth is on and the
 * Authorization header's value (`authorization`, '' if absent) lacks the token.
 */
export function refusedByAuth(front: Front, reply: HttpReply, authorization: string): boolean {
  const auth = front.opts.auth;
  if (auth === null || auth.allowsHeader(authorization)) return false;
  // Close: the body is not read, so the connection cannot be framed further.
  reply.refuse('unauthorized', { message: 'this server requires its auth token: send Authorization: Bearer <token>' }, undefined, WWW_AUTHENTICATE, true);
  return true;
}

/** Runs a route on a complete body (the request adapter turns a throw into internal_error for this request only). */
export function runRoute(front: Front, route: Route, body: string, reply: HttpReply, contentType: string): void {
  if (route.readsBody) front.metrics.httpRequestsTotal++;
  route.run(front, body, reply, contentType);
}

/**
 * Runs a route on its complete body as received, b: a JSON body must be UTF-8 (else
 * invalid_json_body, requests.ts refuseNotUtf8); it is decoded once.
 */
export function runRouteOn(front: Front, route: Route, b: Uint8Array, reply: HttpReply, contentType: string): void {
  const kind = route.bodyKind;
  if (kind !== undefined && !isUtf8Range(b, 0, b.length)) {
    front.metrics.httpRequestsTotal++;
    refuseNotUtf8(front, kind, reply, b, 0, b.length);
    return;
  }
  runRoute(front, route, UTF8.decode(b), reply, contentType);
}

/**
 * A pushBytes route's body still as bytes: true when it was read straight from
 * them (requests.ts handlePushBytes) and counted as runRoute counts; false: decode
 * it and runRoute.
 */
export function runPushBytes(front: Front, b: Uint8Array, reply: HttpReply): boolean {
  if (!handlePushBytes(front, b, 0, b.length, reply)) return false;
  front.metrics.httpRequestsTotal++;
  return true;
}

/** A body over HTTP_BODY_BYTES_MAX (declared, or counted while it streams): answer and close. */
export function bodyTooLarge(reply: HttpReply, declared: number | null): void {
  reply.errorAndClose('http_protocol_error', {
    message: declared === null
      ? `request body is over the ${HTTP_BODY_BYTES_MAX}-byte limit`
      : `request body of ${declared} bytes is over the ${HTTP_BODY_BYTES_MAX}-byte limit`,
  });
}

/**
 * A head whose framing could be read two ways (request smuggling: two Content-Lengths,
 * Content-Length with Transfer-Encoding, ...) or that names the caller twice (two
 * Authorization headers): 400 http_protocol_error before any route runs, then close.
 */
export function refuseHead(reply: HttpReply, message: string): void {
  reply.errorAndClose('http_protocol_error', { message });
}

/** The answer to a connection over the HTTP connection cap (503, written before its first request is read). */
export function tooManyHttpConnections(open: number, limit: number): string {
  return errorJson('too_many_connections', {
    message: `the server has ${open} open HTTP connections, its limit (SERVICE_HTTP_CONNECTIONS_MAX, lowered at start to fit the descriptor limit: server.fd_budget); retry later`,
    extra: { limit },
  });
}
