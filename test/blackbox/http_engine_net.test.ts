/**
 * What only the node:net HTTP engine (`--http-engine net`) does, over real
 * sockets: pipelining answered in request order, keep-alive and
 * Connection: close, chunked bodies, Expect: 100-continue, and the
 * http_protocol_error answers (malformed heads, a head over
 * HTTP_HEADER_BYTES_MAX, a head that never completes, bodies over the cap).
 * The routes and error envelopes shared with uWS run in the HTTP black-box
 * files, which scripts/run_tests.js runs against both engines.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { post, startServer, type TestServer } from '../harness/server';
import { RawHttp, rawRequest, type RawResponse } from '../harness/http_raw';
import { HTTP_BODY_BYTES_MAX, HTTP_HEADER_BYTES_MAX, HTTP_HEADER_TIMEOUT_MS, HTTP_IDLE_TIMEOUT_MS, HTTP_PIPELINE_DEPTH_MAX } from '../../src/limits';

let srv: TestServer;

before(async () => {
  srv = await startServer({ memoryOnly: true, shards: 2, args: ['--http-engine', 'net'] });
  assert.equal(srv.logs.find((l) => l.kind === 'server.http_bound')?.engine, 'net');
  const r = await post(srv.base, '/register', {
    nodes: [
      { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] } },
      { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' }, total: { op: 'sum', params: { field: 'amount', window: 'forever' } } } },
    ],
  });
  assert.equal(r.status, 200, r.text);
});

after(async () => {
  await srv.stop();
  srv.cleanup();
});

const push = (user: string, amount = 1): string => rawRequest('/push', { event: 'Txn', data: { user, amount } });
const getReq = (user: string): string => rawRequest('/get', { table: 'UserT', key: user });

function assertProtocolError(r: RawResponse | null, pattern: RegExp): void {
  assert.ok(r !== null, 'an answer before the close');
  assert.equal(r.status, 400, r.body);
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers.connection, 'close');
  assert.equal(r.json?.error?.code, 'http_protocol_error', r.body);
  assert.match(r.json.error.message, pattern);
}

async function assertServing(): Promise<void> {
  assert.equal(srv.proc.exitCode, null, 'server process is alive');
  assert.equal((await post(srv.base, '/ping', '')).status, 200);
}

test('pipelining 10 deep in one write: every response, in request order, although answers complete asynchronously', async () => {
  const c = await RawHttp.connect(srv.httpPort);
  try {
    // Users on both shards, an async get after the pushes, sync answers (ping, registry, 404) in between.
    const reqs = [
      push('p1', 2), push('p2', 3), rawRequest('/ping', ''), push('p1', 5), getReq('p1'),
      rawRequest('/nope', {}), push('p2', 7), 'GET /registry HTTP/1.1\r\nHost: x\r\n\r\n', getReq('p2'), rawRequest('/push', '{bad json'),
    ];
    await c.write(reqs.join(''));
    const rs: RawResponse[] = [];
    for (let i = 0; i < reqs.length; i++) rs.push((await c.next())!);
    assert.deepEqual(rs.map((r) => r.status), [200, 200, 200, 200, 200, 404, 200, 200, 200, 400]);
    const lsns = [rs[0], rs[1], rs[3], rs[6]].map((r) => r.json.ack_lsn);
    assert.deepEqual([...lsns].sort((a, b) => a - b), lsns, 'pushes acked in request order');
    assert.equal(rs[2].json.pong, true);
    assert.deepEqual(rs[4].json, { cnt: 2, total: 7 });
    assert.equal(rs[5].json.error.code, 'not_found');
    assert.ok(Array.isArray(rs[7].json.nodes));
    assert.deepEqual(rs[8].json, { cnt: 2, total: 10 });
    assert.equal(rs[9].json.error.code, 'invalid_json_body');
    // The connection stays open for more.
    await c.write(rawRequest('/ping', ''));
    assert.equal((await c.next())!.json.pong, true);
  } finally {
    c.close();
  }
});

test('pipelining past the depth limit: a client that writes 3000 requests at once gets 3000 answers in order', async () => {
  const c = await RawHttp.connect(srv.httpPort);
  try {
    const n = 3 * HTTP_PIPELINE_DEPTH_MAX - 72;
    const reqs: string[] = [];
    for (let i = 0; i < n; i++) reqs.push(i % 3 === 2 ? getReq('deep') : push('deep'));
    void c.write(reqs.join(''));
    let pushes = 0;
    for (let i = 0; i < n; i++) {
      const r = (await c.next())!;
      assert.equal(r.status, 200, r.body);
      if (i % 3 === 2) assert.equal(r.json.cnt, pushes, `get #${i} sees every push before it`);
      else pushes++;
    }
  } finally {
    c.close();
  }
});

test('keep-alive: one socket serves many requests (node http.Agent); Connection: close and HTTP/1.0 close after the response', async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<unknown>();
  try {
    for (let i = 0; i < 20; i++) {
      const status = await new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ event: 'Txn', data: { user: 'ka', amount: 1 } });
        const req = http.request({ host: '127.0.0.1', port: srv.httpPort, path: '/push', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('socket', (s) => sockets.add(s));
        req.on('error', reject);
        req.end(body);
      });
      assert.equal(status, 200);
    }
    assert.equal(sockets.size, 1, 'all 20 requests on one kept-alive socket');
  } finally {
    agent.destroy();
  }
  // Connection: close: answered, then closed; a request pipelined after it is not read.
  const c = await RawHttp.connect(srv.httpPort);
  await c.write(rawRequest('/ping', '', ['Connection: close']) + rawRequest('/ping', ''));
  const rs = await c.rest();
  assert.equal(rs.length, 1);
  assert.equal(rs[0].json.pong, true);
  assert.equal(rs[0].headers.connection, 'close');
  // HTTP/1.0 closes by default and stays open with Connection: keep-alive.
  const h10 = await RawHttp.connect(srv.httpPort);
  await h10.write('POST /ping HTTP/1.0\r\nContent-Length: 0\r\n\r\n');
  assert.equal((await h10.rest()).length, 1);
  const k10 = await RawHttp.connect(srv.httpPort);
  try {
    for (let i = 0; i < 2; i++) {
      await k10.write('POST /ping HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n');
      const r = (await k10.next())!;
      assert.equal(r.headers.connection, 'keep-alive');
      assert.equal(r.json.pong, true);
    }
  } finally {
    k10.close();
  }
});

test('chunked request bodies: several chunks, extensions and trailers, byte-by-byte writes, and pipelined after a chunked one', async () => {
  const body = JSON.stringify({ event: 'Txn', data: { user: 'chunky', amount: 4 } });
  const chunked = (parts: string[], trailer = ''): string =>
    ['POST /push HTTP/1.1', 'Host: x', 'Content-Type: application/json', 'Transfer-Encoding: chunked', '', ''].join('\r\n')
    + parts.map((p, i) => `${Buffer.byteLength(p).toString(16)}${i === 0 ? ';ext=1' : ''}\r\n${p}\r\n`).join('')
    + `0\r\n${trailer}\r\n`;
  const c = await RawHttp.connect(srv.httpPort);
  try {
    await c.write(chunked([body.slice(0, 10), body.slice(10, 11), body.slice(11)], 'X-Trailer: 1\r\n') + getReq('chunky'));
    assert.equal((await c.next())!.status, 200);
    assert.deepEqual((await c.next())!.json, { cnt: 1, total: 4 });
    // One byte per write: the parser must resume at every position of heads, sizes and data.
    const bytes = Buffer.from(chunked([body.slice(0, 20), body.slice(20)]));
    for (let i = 0; i < bytes.length; i++) await c.write(bytes.subarray(i, i + 1));
    assert.equal((await c.next())!.status, 200);
    await c.write(getReq('chunky'));
    assert.deepEqual((await c.next())!.json, { cnt: 2, total: 8 });
  } finally {
    c.close();
  }
  // A malformed chunk size and chunk data without its CRLF: http_protocol_error, then close.
  for (const bad of ['zz\r\nabc\r\n0\r\n\r\n', '3\r\nabcXY0\r\n\r\n']) {
    const d = await RawHttp.connect(srv.httpPort);
    await d.write('POST /push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n' + bad);
    const rs = await d.rest();
    assert.equal(rs.length, 1);
    assertProtocolError(rs[0], /chunk/);
  }
  // A chunked body that grows over the cap is stopped as it streams.
  const e = await RawHttp.connect(srv.httpPort);
  const piece = 'x'.repeat(64 * 1024);
  await e.write('POST /push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
  for (let sent = 0; sent <= HTTP_BODY_BYTES_MAX && !e.socket.destroyed; sent += piece.length) e.socket.write(`${piece.length.toString(16)}\r\n${piece}\r\n`);
  assertProtocolError(await e.next(), /over the \d+-byte limit/);
  e.close();
  await assertServing();
});

test('Expect: 100-continue: 100 Continue, then the body, then the answer; not before earlier pipelined answers; a 404 is final', async () => {
  const body = JSON.stringify({ event: 'Txn', data: { user: 'cont', amount: 1 } });
  const head = ['POST /push HTTP/1.1', 'Host: x', 'Content-Type: application/json', `Content-Length: ${body.length}`, 'Expect: 100-continue', '', ''].join('\r\n');
  const c = await RawHttp.connect(srv.httpPort);
  try {
    // An async get is pipelined before it: its answer comes first, then the 100.
    await c.write(getReq('cont') + head);
    assert.deepEqual((await c.next())!.json, {});
    const interim = (await c.next())!;
    assert.equal(interim.status, 100);
    await c.write(body);
    const r = (await c.next())!;
    assert.equal(r.status, 200, r.body);
    assert.equal(typeof r.json.ack_lsn, 'number');
    // Body sent together with the head: no 100 needed, just the answer.
    await c.write(head + body);
    assert.equal((await c.next())!.status, 200);
  } finally {
    c.close();
  }
  // Expect on an unknown route: the final 404 instead of 100, and the connection closes.
  const d = await RawHttp.connect(srv.httpPort);
  await d.write(head.replace('/push', '/nope'));
  const rs = await d.rest();
  assert.deepEqual(rs.map((x) => x.status), [404]);
  // Expect with a body over the cap: 400 http_protocol_error, no 100.
  const e = await RawHttp.connect(srv.httpPort);
  await e.write(head.replace(`Content-Length: ${body.length}`, `Content-Length: ${HTTP_BODY_BYTES_MAX + 1}`));
  const es = await e.rest();
  assert.equal(es.length, 1);
  assertProtocolError(es[0], /over the \d+-byte limit/);
  const g = await post(srv.base, '/get', { table: 'UserT', key: 'cont' });
  assert.deepEqual(g.json, { cnt: 2, total: 2 });
});

test('malformed heads: 400 http_protocol_error with the JSON envelope, then close; answers owed before it come first', async () => {
  const cases = [
    'GARBAGE\r\n\r\n',
    'POST /ping HTTP/2.0\r\n\r\n',
    'POST  /ping HTTP/1.1\r\n\r\n',
    'POST /ping HTTP/1.1\r\nNo colon here\r\n\r\n',
    'POST /ping HTTP/1.1\r\nBad Name: x\r\n\r\n',
    'POST /ping HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n',
    'POST /ping HTTP/1.1\r\nContent-Length: 12x\r\n\r\n',
    'POST /ping HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
    'POST /ping HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n',
    'POST /ping HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n',
    '\x00\x01\x02\xff binary\r\n\r\n',
  ];
  for (const bad of cases) {
    const c = await RawHttp.connect(srv.httpPort);
    await c.write(Buffer.from(bad, 'latin1'));
    const rs = await c.rest();
    assert.equal(rs.length, 1, JSON.stringify(bad));
    assertProtocolError(rs[0], /./);
  }
  // A good async request, then garbage: the get is answered first, then the error, then the close.
  const c = await RawHttp.connect(srv.httpPort);
  await c.write(getReq('nobody') + 'NOT HTTP AT ALL\r\n\r\n' + rawRequest('/ping', ''));
  const rs = await c.rest();
  assert.equal(rs.length, 2);
  assert.deepEqual(rs[0].json, {});
  assertProtocolError(rs[1], /malformed request line/);
  // Content-Length twice is refused even with one value (a proxy may read it otherwise); a query string is ignored for routing.
  const d = await RawHttp.connect(srv.httpPort);
  await d.write('POST /ping?x=1 HTTP/1.1\r\nContent-Length: 0\r\ncontent-length: 0\r\n\r\n');
  const ds = await d.rest();
  assert.equal(ds.length, 1);
  assertProtocolError(ds[0], /two Content-Length/);
  const q = await RawHttp.connect(srv.httpPort);
  try {
    await q.write('POST /ping?x=1 HTTP/1.1\r\nContent-Length: 0\r\n\r\n');
    assert.equal((await q.next())!.json.pong, true);
  } finally {
    q.close();
  }
  await assertServing();
});

test('a head over HTTP_HEADER_BYTES_MAX is http_protocol_error (with or without its blank line); one just under it is served', async () => {
  const line = (n: number): string => `X-Pad: ${'a'.repeat(n)}\r\n`;
  const base = 'POST /ping HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n';
  const fits = base + line(HTTP_HEADER_BYTES_MAX - base.length - 'X-Pad: \r\n\r\n'.length) + '\r\n';
  assert.equal(fits.length, HTTP_HEADER_BYTES_MAX);
  const c = await RawHttp.connect(srv.httpPort);
  try {
    await c.write(fits);
    assert.equal((await c.next())!.json.pong, true);
  } finally {
    c.close();
  }
  const over = base + line(HTTP_HEADER_BYTES_MAX - base.length - 'X-Pad: \r\n\r\n'.length + 1) + '\r\n';
  for (const bytes of [over, base + line(64 * 1024)]) { // complete, and never-ending
    const d = await RawHttp.connect(srv.httpPort);
    await d.write(bytes);
    const rs = await d.rest();
    assert.equal(rs.length, 1);
    assertProtocolError(rs[0], /HTTP_HEADER_BYTES_MAX/);
  }
  await assertServing();
});

test('slowloris: a head trickled a byte at a time is cut off at HTTP_HEADER_TIMEOUT_MS; an idle keep-alive connection closes; others are served meanwhile', async () => {
  const slow = await RawHttp.connect(srv.httpPort);
  const idle = await RawHttp.connect(srv.httpPort);
  await idle.write(rawRequest('/ping', ''));
  assert.equal((await idle.next())!.json.pong, true);
  const started = Date.now();
  const head = 'POST /ping HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'z'.repeat(200);
  let i = 0;
  const trickle = setInterval(() => { if (!slow.socket.destroyed && i < head.length) slow.socket.write(head[i++]); }, 250);
  try {
    // Meanwhile the server keeps answering others.
    for (let k = 0; k < 5; k++) {
      await new Promise((r) => setTimeout(r, 500));
      await assertServing();
    }
    const rs = await slow.rest(HTTP_HEADER_TIMEOUT_MS + 20_000);
    const took = Date.now() - started;
    assert.equal(rs.length, 1);
    assertProtocolError(rs[0], /HTTP_HEADER_TIMEOUT_MS/);
    assert.ok(took >= HTTP_HEADER_TIMEOUT_MS, `cut off after ${took} ms, not before the timeout`);
    assert.ok(i < head.length, 'the head was still incomplete');
    await idle.closed;
    assert.ok(Date.now() - started >= HTTP_IDLE_TIMEOUT_MS - 1000);
    assert.deepEqual(await idle.rest(), [], 'an idle connection is closed without a response');
  } finally {
    clearInterval(trickle);
    slow.close();
    idle.close();
  }
});
