/** The node:net engine's request-head parser (src/front/http_parse.ts), without sockets. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseChunkSize, parseHead, type RequestHead } from '../../../src/front/http_parse';

function ok(text: string): RequestHead {
  const r = parseHead(text);
  assert.ok(r.ok, r.ok ? '' : r.message);
  return r.head;
}

function bad(text: string, pattern: RegExp): void {
  const r = parseHead(text);
  assert.equal(r.ok, false, JSON.stringify(text));
  if (!r.ok) assert.match(r.message, pattern);
}

test('request line: method, path without the query, version; framing defaults', () => {
  const h = ok('POST /push?x=1&y HTTP/1.1\r\nHost: a');
  assert.deepEqual(h, { method: 'POST', path: '/push', contentLength: 0, chunked: false, keepAlive: true, http10: false, expectContinue: false, contentType: '', authorization: '' });
  assert.equal(ok('GET /registry HTTP/1.0').keepAlive, false);
  assert.equal(ok('GET /registry HTTP/1.0\r\nConnection: Keep-Alive').keepAlive, true);
  assert.equal(ok('GET / HTTP/1.1\r\nConnection: upgrade, close').keepAlive, false);
  assert.equal(ok('GET / HTTP/1.1\r\nConnection: upgrade\r\nConnection: close').keepAlive, false);
});

test('headers that frame and route: names are case-insensitive, values trimmed', () => {
  const h = ok('POST /register HTTP/1.1\r\ncontent-LENGTH:  42 \r\nCONTENT-TYPE: application/json; charset=utf-8\r\nexpect: 100-Continue\r\nX-Other: whatever: with colon');
  assert.equal(h.contentLength, 42);
  assert.equal(h.contentType, 'application/json; charset=utf-8');
  assert.equal(h.expectContinue, true);
  assert.equal(ok('GET /registry HTTP/1.1\r\nAUTHORIZATION:  Bearer t0k \r\nHost: a').authorization, 'Bearer t0k');
  const c = ok('POST /push HTTP/1.1\r\nTransfer-Encoding: Chunked');
  assert.equal(c.chunked, true);
  assert.equal(c.contentLength, -1);
  assert.equal(ok('POST / HTTP/1.1\r\nContent-Length: 99999999999999999999').contentLength, Number.MAX_SAFE_INTEGER);
  assert.equal(ok('GET / HTTP/1.1\r\nX-Tab: a\tb\r\nX-Latin1: \u00e9\u00ff').path, '/');
});

test('malformed heads are rejected with a reason (smuggling-prone forms included)', () => {
  bad('', /request line/);
  bad('GET /', /request line/);
  bad('GET / HTTP/1.2', /request line/);
  bad('GET / HTTP/1.1 extra', /request line/);
  bad('G(T / HTTP/1.1', /request line/);
  bad('GET / HTTP/1.1\r\nnocolon', /header line/);
  bad('GET / HTTP/1.1\r\n: empty name', /header line/);
  bad('GET / HTTP/1.1\r\nName : space before colon', /header name/);
  bad('GET / HTTP/1.1\r\nA: 1\r\n  folded', /header/);
  bad('POST / HTTP/1.1\r\nContent-Length: -1', /Content-Length/);
  bad('POST / HTTP/1.1\r\nContent-Length: 1,1', /Content-Length/);
  bad('POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2', /two Content-Length/);
  // Even with one value: a request has one Content-Length (whatever an engine or proxy behind would make of two).
  bad('POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5', /two Content-Length/);
  bad('POST / HTTP/1.1\r\ncontent-length: 5\r\nCONTENT-LENGTH: 5', /two Content-Length/);
  bad('GET / HTTP/1.1\r\nAuthorization: Bearer a\r\nauthorization: Bearer b', /two Authorization/);
  // Control characters: a bare CR or LF, a NUL, any other but a tab in a value; none in the request line.
  bad('GET / HTTP/1.1\r\nX: a\rb', /control character 0x0d/);
  bad('GET / HTTP/1.1\r\nX: a\nb', /control character 0x0a/);
  bad('GET / HTTP/1.1\r\nX: a\u0000b', /control character 0x00/);
  bad('GET / HTTP/1.1\r\nX: a\u0001b', /control character 0x01/);
  bad('GET / HTTP/1.1\r\nX: a\u007fb', /control character 0x7f/);
  bad('GET /\u0000 HTTP/1.1', /control character 0x00/);
  bad('GET / HTTP/1.1\r\nX: trailing CR\r', /control character 0x0d/);
  bad('POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked', /Transfer-Encoding/);
  bad('POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked', /Transfer-Encoding/);
  bad('POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3', /both/);
});

test('chunk-size lines: hex with optional extensions; anything else is -1', () => {
  assert.equal(parseChunkSize('0'), 0);
  assert.equal(parseChunkSize('1aF'), 0x1af);
  assert.equal(parseChunkSize('10;name=value'), 16);
  assert.equal(parseChunkSize('ffffffffffffffffff'), Number.MAX_SAFE_INTEGER);
  assert.equal(parseChunkSize(''), -1);
  assert.equal(parseChunkSize('zz'), -1);
  assert.equal(parseChunkSize('-1'), -1);
  assert.equal(parseChunkSize('0x10'), -1);
});
