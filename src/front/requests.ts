/**
 * The request adapter of both transports: an HTTP route (http_routes.ts, for the
 * uWS and node:net engines) and a TCP frame (tcp.ts) hand a request kind, the body
 * text and a Reply here (a push body first as its bytes: handlePushBytes). JSON
 * parsing (depth check first), the get-family envelope rule and the internal_error
 * catch live here once; the request logic is Front's.
 * Error metrics are counted where an error reply is written (the Reply
 * implementations), not here.
 */
import type { ErrorCode, SfError } from '../errors';
import { parseJsonBody } from '../util/json_body';
import { JSON_DEPTH_MAX, jsonTextDepthExceeds } from '../util/json_depth';
import { firstInvalidUtf8, isUtf8Range } from '../util/utf8';
import type { Front } from './front';
import type { Reply } from './reply';

/** Request kinds whose body is JSON (both transports). */
export type BodyKind = 'push' | 'get' | 'batch_get' | 'register' | 'forget';
/** Every request kind of the data plane's JSON requests. */
export type RequestKind = BodyKind | 'ping' | 'reset';

/**
 * The code a body nested deeper than JSON_DEPTH_MAX gets before it is parsed. Every
 * valid body is shallow (a batch_get with composite keys is 4 levels), so the kind's
 * shape error fits: for get and batch_get that is unsupported_request_shape for the
 * whole request (no per-entry answer: the text is refused before it is an entry
 * list); a key part nested within the limit is still key_parse_failure with its path.
 */
const TOO_DEEP: Record<BodyKind, ErrorCode> = {
  push: 'invalid_event', register: 'invalid_registration', get: 'unsupported_request_shape', batch_get: 'unsupported_request_shape',
  forget: 'unsupported_request_shape',
};

/** The envelope rule: errors of get and batch_get carry no registry_version (spec 2.7); the others do. */
export function errorCarriesVersion(kind: RequestKind): boolean {
  return kind !== 'get' && kind !== 'batch_get';
}

/**
 * Parses the JSON body of a request of `kind`. A body nested deeper than
 * JSON_DEPTH_MAX is refused from its text before JSON.parse (a push or get a
 * million levels deep cost ~330 ms of front CPU to parse); invalid JSON gets
 * invalid_json_body. Returns undefined after answering the error.
 */
function parseBody(front: Front, text: string, kind: BodyKind, reply: Reply): unknown {
  if (tooDeep(front, text, kind, reply)) return undefined;
  try {
    return parseJsonBody(text);
  } catch (err) {
    const e = err as SfError;
    front.fail(reply, { code: e.code, detail: e.detail }, errorCarriesVersion(kind));
    return undefined;
  }
}

/** True (after answering TOO_DEEP[kind]) when the body text nests deeper than JSON_DEPTH_MAX. */
function tooDeep(front: Front, text: string, kind: BodyKind, reply: Reply): boolean {
  if (!jsonTextDepthExceeds(text)) return false;
  front.fail(reply, { code: TOO_DEEP[kind], detail: { message: `request body is nested deeper than ${JSON_DEPTH_MAX} levels`, path: '' } }, errorCarriesVersion(kind));
  return true;
}

/**
 * A throw out of a request's handling becomes internal_error for this request only
 * (a Reply answers once: an answered request keeps its answer). Each entry point
 * catches inline rather than through a wrapper taking a closure: that was a closure
 * per request on the path every push takes. The envelope follows the rule of every
 * other error of `kind` (errorCarriesVersion): registry_version except on get and batch_get.
 */
function internalError(front: Front, reply: Reply, err: unknown, kind: RequestKind): void {
  front.log.error({ kind: 'server.internal_error', err });
  front.fail(reply, { code: 'internal_error', detail: { reason: String(err) } }, errorCarriesVersion(kind));
}

/** Buffer#utf8Slice: what toString('utf8', start, end) calls after checking its arguments (@types/node lacks it). */
interface Utf8Slice {
  utf8Slice(start: number, end: number): string;
}

/**
 * Answers invalid_json_body for a body of `kind` that is not UTF-8, b[start, end)
 * (RFC 8259 8.1; util/utf8.ts says why it is not decoded with replacements).
 */
export function refuseNotUtf8(front: Front, kind: BodyKind, reply: Reply, b: Uint8Array, start: number, end: number): void {
  const at = firstInvalidUtf8(b, start, end);
  front.fail(reply, {
    code: 'invalid_json_body',
    detail: { message: `body is not valid UTF-8: byte 0x${b[start + at].toString(16).padStart(2, '0')} at offset ${at} does not start or continue a UTF-8 sequence (JSON text must be UTF-8, RFC 8259 section 8.1)`, extra: { offset: at } },
  }, errorCarriesVersion(kind));
}

/**
 * One request of `kind` whose body is b[start, end) as received (a TCP frame's payload): a
 * JSON body must be UTF-8 (refuseNotUtf8); it is decoded once, then handleRequest.
 */
export function handleRequestBytes(front: Front, kind: RequestKind, b: Buffer, start: number, end: number, reply: Reply): void {
  if (kind === 'ping' || kind === 'reset') { handleRequest(front, kind, '', reply); return; }
  if (!isUtf8Range(b, start, end)) { refuseNotUtf8(front, kind, reply, b, start, end); return; }
  handleRequest(front, kind, (b as unknown as Utf8Slice).utf8Slice(start, end), reply);
}

/** Answers one request of `kind` with body `text` (ignored by ping and reset) into `reply`. */
export function handleRequest(front: Front, kind: RequestKind, text: string, reply: Reply): void {
  try {
    if (kind === 'ping') { front.ping(reply); return; }
    if (kind === 'reset') { front.control.reset(reply); return; }
    if (kind === 'register') {
      // Not parsed here: the coordinator parses it, off the data plane (a 4 MiB
      // register body was ~35 ms of front time to parse, and again to post as objects).
      if (!tooDeep(front, text, kind, reply)) front.control.register(text, reply);
      return;
    }
    const body = parseBody(front, text, kind, reply);
    if (body === undefined) return;
    if (kind === 'push') front.push(body, text, reply);
    else if (kind === 'get') front.get(body, reply);
    else if (kind === 'forget') front.forget(body, reply);
    else front.batchGet(body, reply);
  } catch (err) {
    internalError(front, reply, err, kind);
  }
}

/**
 * A push body as received, b[start, end): read straight from its bytes when the
 * reader takes it (front/push_text.ts); true then, or when it threw (answered
 * internal_error). false: not handled, and the caller decodes the body and goes on
 * with handleRequest(front, 'push', text, reply), which answers every error.
 */
export function handlePushBytes(front: Front, b: Uint8Array, start: number, end: number, reply: Reply): boolean {
  try {
    return front.pushBytes(b, start, end, reply);
  } catch (err) {
    internalError(front, reply, err, 'push');
    return true;
  }
}

/** `POST /push/{event}`: the peer's form of push, whose body is the data object alone. */
export function handlePushTo(front: Front, event: string, text: string, reply: Reply): void {
  try {
    const data = parseBody(front, text, 'push', reply);
    // The envelope is rebuilt as text (cluster mode logs it); `text` is valid JSON already.
    if (data !== undefined) front.push({ event, data }, `{"event":${JSON.stringify(event)},"data":${text}}`, reply);
  } catch (err) {
    internalError(front, reply, err, 'push');
  }
}
