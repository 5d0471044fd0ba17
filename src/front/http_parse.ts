/**
 * HTTP/1.1 request-head parser of the node:net engine (RFC 9112), pure: a head
 * (request line and header lines, without the final blank line) in, what the
 * connection needs to frame and route the request out. Strict where leniency
 * lets one request be read two ways (request smuggling): a header line without
 * a colon, whitespace before the colon, an obsolete line fold, Content-Length
 * together with Transfer-Encoding, Content-Length twice (even with one value),
 * any transfer coding other than `chunked`, a control character anywhere in the
 * head but a tab in a header value (a bare CR, a NUL: RFC 9110 5.5), and two
 * Authorization headers (engines and proxies disagree on which one counts) are errors.
 */

export interface RequestHead {
  method: string;
  /** The target's path, without the query string (what uWS's getUrl() gives). */
  path: string;
  /** -1 when the body is chunked; 0 when there is no body. */
  contentLength: number;
  chunked: boolean;
  /** HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`. */
  keepAlive: boolean;
  http10: boolean;
  expectContinue: boolean;
  contentType: string;
  /** The Authorization header ('' when absent), for the optional token check (auth.ts). */
  authorization: string;
}

export type HeadResult = { ok: true; head: RequestHead } | { ok: false; message: string };

const REQUEST_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (\S+) HTTP\/1\.([01])$/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const DIGITS = /^\d+$/;
/** A control character other than HTAB, or a CR or LF that is not part of a CRLF line end. */
const BAD_CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|(?<!\r)\n/;

function bad(message: string): HeadResult {
  return { ok: false, message };
}

/** `text` is the head as latin1 (one char per byte), lines split by CRLF. */
export function parseHead(text: string): HeadResult {
  const ctl = BAD_CONTROL.exec(text);
  if (ctl !== null) return bad(`control character 0x${text.charCodeAt(ctl.index).toString(16).padStart(2, '0')} at byte ${ctl.index} of the request head; only a tab may appear in a header value`);
  let eol = text.indexOf('\r\n');
  if (eol < 0) eol = text.length;
  const line = text.slice(0, eol);
  const m = REQUEST_LINE.exec(line);
  if (m === null) return bad(`malformed request line ${JSON.stringify(line.slice(0, 100))}; expected METHOD SP TARGET SP HTTP/1.1`);
  const target = m[2];
  const q = target.indexOf('?');
  const http10 = m[3] === '0';
  let contentLength = -2; // not given
  let chunked = false;
  let connection = '';
  let expectContinue = false;
  let contentType = '';
  let authorization: string | null = null;
  let pos = eol + 2;
  while (pos < text.length) {
    let end = text.indexOf('\r\n', pos);
    if (end < 0) end = text.length;
    const h = text.slice(pos, end);
    pos = end + 2;
    const colon = h.indexOf(':');
    if (colon <= 0) return bad(`malformed header line ${JSON.stringify(h.slice(0, 100))}`);
    const rawName = h.slice(0, colon);
    if (!HEADER_NAME.test(rawName)) return bad(`malformed header name ${JSON.stringify(rawName.slice(0, 100))}`);
    const value = h.slice(colon + 1).trim();
    // Only the headers that frame or route a request are read; others are skipped unparsed.
    switch (rawName.length) {
      case 6:
        if (rawName.toLowerCase() === 'expect') expectContinue = value.toLowerCase() === '100-continue';
        break;
      case 10:
        if (rawName.toLowerCase() === 'connection') connection = connection === '' ? value.toLowerCase() : `${connection},${value.toLowerCase()}`;
        break;
      case 12:
        if (rawName.toLowerCase() === 'content-type') contentType = value;
        break;
      case 13:
        if (rawName.toLowerCase() === 'authorization') {
          if (authorization !== null) return bad('two Authorization headers; send the token once');
          authorization = value;
        }
        break;
      case 14:
        if (rawName.toLowerCase() === 'content-length') {
          if (!DIGITS.test(value)) return bad(`Content-Length ${JSON.stringify(value.slice(0, 40))} is not a decimal number`);
          if (contentLength !== -2) return bad('two Content-Length headers; a request has at most one');
          contentLength = value.length > 15 ? Number.MAX_SAFE_INTEGER : Number(value);
        }
        break;
      case 17:
        if (rawName.toLowerCase() === 'transfer-encoding') {
          if (chunked || value.toLowerCase() !== 'chunked') return bad(`Transfer-Encoding ${JSON.stringify(value.slice(0, 40))} is not supported; send a Content-Length or "chunked"`);
          chunked = true;
        }
        break;
      default:
        break;
    }
  }
  if (chunked && contentLength !== -2) return bad('both Content-Length and Transfer-Encoding: chunked');
  const tokens = connection === '' ? [] : connection.split(',').map((t) => t.trim());
  const keepAlive = http10 ? tokens.includes('keep-alive') : !tokens.includes('close');
  return {
    ok: true,
    head: {
      method: m[1],
      path: q < 0 ? target : target.slice(0, q),
      contentLength: chunked ? -1 : contentLength === -2 ? 0 : contentLength,
      chunked,
      keepAlive,
      http10,
      expectContinue,
      contentType,
      authorization: authorization ?? '',
    },
  };
}

/**
 * A chunk-size line (`1a2b;ext=1`): the size, or -1 when it is not hex.
 * Sizes above 2^53 come out as MAX_SAFE_INTEGER (over any body limit).
 */
export function parseChunkSize(line: string): number {
  const semi = line.indexOf(';');
  const hex = (semi < 0 ? line : line.slice(0, semi)).trim();
  if (!/^[0-9a-fA-F]+$/.test(hex)) return -1;
  return hex.length > 13 ? Number.MAX_SAFE_INTEGER : parseInt(hex, 16);
}
