/**
 * HTTP framing attacks and edge cases over raw sockets, on the engine the run picks
 * (scripts/run_tests.js runs this file on uws and again on net): request smuggling
 * (two Content-Lengths, Content-Length with Transfer-Encoding, unknown codings),
 * two Authorization headers, heads uWS cannot parse, HEAD answers without a body,
 * the HTTP connection cap, and bodies that are not UTF-8. After each attack the
 * smuggled push must not have been applied.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { HTTP_ENGINE, post, startServer, type TestServer } from '../harness/server';
import { RawHttp, rawRequest } from '../harness/http_raw';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const NODES = [
  { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', note: 'str' }, optional_fields: ['note'] } },
  { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' } } },
];

const SMUGGLED = rawRequest('/push', { event: 'Txn', data: { user: 'smuggled' } });

/** Every byte a raw connection receives, and whether the server closed it. */
class Bytes {
  text = '';
  closed = false;
  private constructor(readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => { this.text += d.toString('latin1'); });
    socket.on('error', () => {});
    socket.on('close', () => { this.closed = true; });
  }

  static connect(port: number): Promise<Bytes> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ port, host: '127.0.0.1' }, () => resolve(new Bytes(s)));
      s.once('error', reject);
    });
  }

  async until(ok: () => boolean, ms = 3000): Promise<void> {
    const end = performance.now() + ms;
    while (!ok() && performance.now() < end) await sleep(5);
  }
}

interface Head { status: number; headers: Record<string, string>; rest: string }

function parseHead(text: string): Head {
  const end = text.indexOf('\r\n\r\n');
  assert.ok(end >= 0, JSON.stringify(text));
  const lines = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(lines[0])![1]), headers, rest: text.slice(end + 4) };
}

describe(`HTTP framing (${HTTP_ENGINE})`, () => {
  let srv: TestServer;
  before(async () => {
    srv = await startServer({ memoryOnly: true });
    assert.equal((await post(srv.base, '/register', { nodes: NODES })).status, 200);
  });
  after(async () => { await srv.stop(); srv.cleanup(); });

  async function count(user: string): Promise<unknown> {
    return (await post(srv.base, '/get', { table: 'UserT', key: user })).json;
  }

  async function exchange(bytes: string | Buffer): Promise<Bytes> {
    const b = await Bytes.connect(srv.httpPort);
    b.socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
    await b.until(() => b.closed);
    return b;
  }

  function assertJson400(b: Bytes, pattern: RegExp): void {
    const h = parseHead(b.text);
    assert.equal(h.status, 400, b.text);
    const body = JSON.parse(h.rest);
    assert.equal(body.error.code, 'http_protocol_error', b.text);
    assert.match(body.error.message, pattern);
    assert.ok(b.closed, 'the connection is closed after the refusal');
  }

  test('two Content-Lengths: refused before any route runs; a push smuggled behind them is not applied', async () => {
    const ping = (cl: string[], body: string): string => ['POST /ping HTTP/1.1', 'Host: x', ...cl.map((v) => `Content-Length: ${v}`), '', body].join('\r\n');
    // Alone (nothing behind it): 400 on both engines, even with equal values.
    assertJson400(await exchange(ping(['2', '2'], '{}')), /Content-Length/);
    assertJson400(await exchange(ping(['2', String(2 + SMUGGLED.length)], '{}')), /Content-Length/);
    // The attack: the first length frames /ping, the second (what a proxy framing by the last one uses) covers the push.
    const attack = await exchange(ping(['2', String(2 + SMUGGLED.length)], `{}${SMUGGLED}`));
    if (HTTP_ENGINE === 'net') assertJson400(attack, /two Content-Length/);
    // uWS parses the bytes behind the refused request at once; the push after it makes uWS close
    // the connection (a request while one is unanswered) before it is routed, so no answer at all.
    else assert.deepEqual({ text: attack.text, closed: attack.closed }, { text: '', closed: true });
    assert.deepEqual(await count('smuggled'), {});
  });

  test('Content-Length with Transfer-Encoding, a coding other than chunked, Transfer-Encoding twice, a list length: 400, nothing applied', async () => {
    const heads = [
      ['Content-Length: 3', 'Transfer-Encoding: chunked'],
      ['Transfer-Encoding: chunked', 'Content-Length: 3'],
      ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'],
      ['Transfer-Encoding: identity'],
      ['Transfer-Encoding: gzip, chunked'],
      [`Content-Length: 2, ${2 + SMUGGLED.length}`],
    ];
    for (const lines of heads) {
      const b = await exchange(['POST /ping HTTP/1.1', 'Host: x', ...lines, '', `{}${SMUGGLED}`].join('\r\n'));
      const h = parseHead(b.text);
      assert.equal(h.status, 400, `${lines.join(' / ')}: ${b.text}`);
      assert.ok(b.closed);
      // uWS refuses most of these itself, in native code, with its own HTML page (docs/wire.md).
      if (HTTP_ENGINE === 'net' || h.headers['content-type'] === 'application/json') assert.equal(JSON.parse(h.rest).error.code, 'http_protocol_error');
    }
    assert.deepEqual(await count('smuggled'), {});
  });

  test('two Authorization headers are refused (engines and proxies disagree on which one counts)', async () => {
    assertJson400(await exchange(['POST /ping HTTP/1.1', 'Host: x', 'Authorization: Bearer a', 'Authorization: Bearer b', 'Content-Length: 0', '', ''].join('\r\n')), /Authorization/);
  });

  test('whitespace before a colon, an obs-fold, a bare CR, a NUL: net answers 400 at once; uws routes nothing (documented)', async () => {
    const push = JSON.stringify({ event: 'Txn', data: { user: 'malformed' } });
    const heads = ['Host : x', 'Host: x\r\n folded', 'X-A: a\rb', 'X-A: a\u0000b', 'X-A: a\u0001b'];
    for (const line of heads) {
      const b = await Bytes.connect(srv.httpPort);
      b.socket.write(Buffer.from(['POST /push HTTP/1.1', line, `Content-Length: ${push.length}`, '', push].join('\r\n'), 'latin1'));
      if (HTTP_ENGINE === 'net') {
        await b.until(() => b.closed);
        assertJson400(b, /control character|header/);
      } else {
        // uWS neither answers nor closes: its own timer closes the connection later (docs/wire.md).
        await sleep(300);
        assert.equal(b.text, '', JSON.stringify(line));
        b.socket.destroy();
      }
    }
    assert.deepEqual(await count('malformed'), {});
  });

  test('HEAD: the GET answer\'s status and Content-Length, no body; the connection stays usable', async () => {
    const registryLength = Buffer.byteLength((await fetch(`${srv.base}/registry`).then((r) => r.text())));
    const cases: Array<[string, number, number | null, string | undefined]> = [
      ['/registry', 200, registryLength, undefined],
      ['/health', 200, Buffer.byteLength('{"status":"ok"}'), undefined],
      ['/push', 405, null, 'POST'],
      ['/registry/', 200, registryLength, undefined],
      ['/nope', 404, null, undefined],
    ];
    const b = await Bytes.connect(srv.httpPort);
    for (const [path, status, length, allow] of cases) {
      b.text = '';
      b.socket.write(`HEAD ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await b.until(() => b.text.includes('\r\n\r\n'));
      await sleep(50); // a body, if any, would be here by now
      const h = parseHead(b.text);
      assert.equal(h.status, status, `${path}: ${b.text}`);
      assert.equal(h.rest, '', `HEAD ${path} has no body`);
      if (length !== null) assert.equal(Number(h.headers['content-length']), length, path);
      else assert.ok(Number(h.headers['content-length']) > 0, `${path}: the length of the error body it would have`);
      assert.equal(h.headers.allow, allow);
    }
    // The same connection then serves a GET, framed as usual.
    b.text = '';
    b.socket.write('GET /registry HTTP/1.1\r\nHost: x\r\n\r\n');
    await b.until(() => b.text.length > 0 && parseHead(b.text).rest.length >= registryLength);
    assert.equal(JSON.parse(parseHead(b.text).rest).registry_version, 1);
    assert.equal(b.closed, false);
    b.socket.destroy();
  });

  test('a body that is not UTF-8 is invalid_json_body with the offset; nothing is stored; multi-byte UTF-8 is accepted', async () => {
    const prefix = '{"event":"Txn","data":{"user":"';
    for (const bad of [[0xff], [0xfe], [0xed, 0xa0, 0x80]]) {
      const body = Buffer.concat([Buffer.from(prefix), Buffer.from(bad), Buffer.from('"}}')]);
      const r = await post(srv.base, '/push', body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.code, 'invalid_json_body');
      assert.equal(r.json.error.offset, prefix.length);
      assert.equal(r.json.registry_version, 1);
      // POST /push/{event}: the same rule.
      const p = await post(srv.base, '/push/Txn', Buffer.concat([Buffer.from('{"user":"'), Buffer.from(bad), Buffer.from('"}')]));
      assert.equal(p.json.error.code, 'invalid_json_body', p.text);
    }
    const g = await post(srv.base, '/get', Buffer.concat([Buffer.from('{"table":"UserT","key":"'), Buffer.from([0xff]), Buffer.from('"}')]));
    assert.equal(g.status, 400);
    assert.equal(g.json.error.code, 'invalid_json_body');
    assert.equal(g.json.registry_version, undefined);
    const reg = await post(srv.base, '/register', Buffer.concat([Buffer.from('{"nodes":[],"x":"'), Buffer.from([0xff]), Buffer.from('"}')]));
    assert.equal(reg.json.error.code, 'invalid_json_body', reg.text);
    assert.deepEqual(await count('\ufffd'), {});
    for (const key of ['\u00e9', '\u00ff', '\u{1f600}']) {
      assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: key, note: 'caf\u00e9' } })).status, 200);
      assert.deepEqual(await count(key), { cnt: 1 }, key);
    }
  });
});

describe(`HTTP connection cap (${HTTP_ENGINE})`, () => {
  const CAP = 5;
  let srv: TestServer;
  before(async () => { srv = await startServer({ memoryOnly: true, args: ['--http-connections-max', String(CAP)] }); });
  after(async () => { await srv.stop(); srv.cleanup(); });

  test('past --http-connections-max: 503 too_many_connections before the first request, then close; a freed slot is usable again', async () => {
    const held: RawHttp[] = [];
    for (let i = 0; i < CAP; i++) held.push(await RawHttp.connect(srv.httpPort));
    const over = await RawHttp.connect(srv.httpPort);
    const r = await over.next(3000);
    assert.equal(r?.status, 503);
    assert.equal(r.json.error.code, 'too_many_connections');
    assert.equal(r.json.error.limit, CAP);
    await over.closed;
    // The held connections are served.
    for (const h of held) {
      await h.write(rawRequest('/ping', ''));
      assert.equal((await h.next())!.json.pong, true);
    }
    held.pop()!.close();
    await sleep(100);
    const next = await RawHttp.connect(srv.httpPort);
    await next.write(rawRequest('/ping', ''));
    assert.equal((await next.next())!.json.pong, true);
    for (const h of [...held, next]) h.close();
  });
});
