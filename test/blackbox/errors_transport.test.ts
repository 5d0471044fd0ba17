/**
 * Transport errors of spec 4.8 / 7.2 "Transport, server and admin" over real
 * sockets: TCP opcodes (unknown_op, op_not_implemented), frame errors
 * (frame_too_large, frame_error, unsupported_content_type) with which of them
 * close the connection (docs/wire.md), and HTTP bodies over the 4 MiB cap
 * (http_protocol_error). Each bad connection must leave every other one working.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { post, startServer, type TestServer } from '../harness/server';
import { TcpClient, type TcpReply } from '../harness/tcp';
import { encodeFrame, OP_ERROR_RESPONSE, OP_GET, OP_GET_RESPONSE, OP_PING, OP_PUSH } from '../../src/protocol/frame';

const FRAME_MAX = 1024;

let srv: TestServer;

before(async () => {
  srv = await startServer({ memoryOnly: true, env: { SERVICE_TCP_MAX_FRAME_BYTES: String(FRAME_MAX) } });
  const r = await post(srv.base, '/register', {
    nodes: [
      { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', pad: 'str' }, optional_fields: ['pad'] } },
      { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' } } },
    ],
  });
  assert.equal(r.status, 200, r.text);
});

after(async () => {
  await srv.stop();
  srv.cleanup();
});

/** A connected client plus a promise that resolves when the server ends (FIN) or closes the connection. */
async function connect(): Promise<{ c: TcpClient; ended: Promise<void> }> {
  const c = await TcpClient.connect(srv.tcpPort);
  const ended = new Promise<void>((resolve) => {
    c.socket.once('end', () => resolve());
    c.socket.once('close', () => resolve());
  });
  return { c, ended };
}

/** Raw frame bytes with any length/op/content type. */
function rawFrame(length: number, op: number, ct: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(7);
  h.writeUInt32BE(length, 0);
  h.writeUInt16BE(op, 4);
  h.writeUInt8(ct, 6);
  return Buffer.concat([h, payload]);
}

function assertErrFrame(r: TcpReply, code: string): void {
  assert.equal(r.op, OP_ERROR_RESPONSE, r.text);
  assert.equal(r.contentType, 0x01, 'error frames are JSON');
  assert.equal(r.json?.error?.code, code, r.text);
  assert.equal(typeof r.json.error.message, 'string');
}

async function assertStillServes(c: TcpClient): Promise<void> {
  const p = await c.request(OP_PING, '');
  assert.equal(p.op, OP_PING, p.text);
  assert.equal(p.json.pong, true);
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, rej) => { t = setTimeout(() => rej(new Error(`timeout: ${what}`)), ms); })]).finally(() => clearTimeout(t));
}

test('unknown_op: opcodes outside the dispatch table, with error.op; the connection stays open', async () => {
  const { c } = await connect();
  try {
    // 0x0002 is OP_AUTH (docs/security.md) and 0x0041 OP_FORGET (docs/wire.md), so they are not in this list.
    for (const op of [0x0099, 0x0003, 0x0013, 0x0021, 0x0023, 0x0025, 0x0042, 0x1000, 0xfffe, OP_ERROR_RESPONSE]) {
      const r = await c.request(op, { table: 'UserT', key: 'x' });
      assertErrFrame(r, 'unknown_op');
      assert.equal(r.json.error.op, op);
    }
    await assertStillServes(c);
  } finally {
    c.close();
  }
});

test('op_not_implemented: OP_PUSH_SYNC, OP_PUSH_MANY and the OP_SET range 0x0030-0x003F', async () => {
  const { c } = await connect();
  try {
    for (const op of [0x0011, 0x0012, 0x0030, 0x0031, 0x0038, 0x003f]) {
      const r = await c.request(op, { event: 'Txn', data: { user: 'u' } });
      assertErrFrame(r, 'op_not_implemented');
      assert.equal(r.json.error.op, op);
    }
    await assertStillServes(c);
    // Nothing was pushed by the reserved opcodes.
    const g = await c.request(OP_GET, { table: 'UserT', key: 'u' });
    assert.deepEqual(g.json, {});
  } finally {
    c.close();
  }
});

test('invalid_json_body over TCP for ops with a JSON body; ping ignores its payload', async () => {
  const { c } = await connect();
  try {
    for (const op of [OP_PUSH, OP_GET, 0x0024, 0x0001]) {
      const r = await c.request(op, Buffer.from([0xff, 0xfe, 0x00]));
      assertErrFrame(r, 'invalid_json_body');
    }
    const p = await c.request(OP_PING, Buffer.from([0xff, 0x00, 0x01]));
    assert.equal(p.op, OP_PING);
  } finally {
    c.close();
  }
});

test('unsupported_content_type: content type 0x02 (MessagePack); the connection stays open', async () => {
  const { c } = await connect();
  try {
    const r = await c.request(OP_PUSH, Buffer.from([0x82, 0xa5]), 0x02);
    assertErrFrame(r, 'unsupported_content_type');
    const p = await c.request(OP_PING, '', 0x02);
    assertErrFrame(p, 'unsupported_content_type');
    await assertStillServes(c);
  } finally {
    c.close();
  }
});

test('frame_error: a content type byte other than 0x01/0x02 keeps the connection open', async () => {
  const { c } = await connect();
  try {
    for (const ct of [0x00, 0x03, 0x07, 0xff]) {
      const r = await c.request(OP_PUSH, { event: 'Txn', data: { user: 'ct' } }, ct);
      assertErrFrame(r, 'frame_error');
      assert.match(r.json.error.message, /content.type/i);
    }
    await assertStillServes(c);
    const g = await c.request(OP_GET, { table: 'UserT', key: 'ct' });
    assert.deepEqual(g.json, {}, 'a rejected frame pushed nothing');
  } finally {
    c.close();
  }
});

test('pipelined error frames keep their place in the FIFO', async () => {
  const { c } = await connect();
  try {
    c.writeRaw(Buffer.concat([
      encodeFrame(OP_PING, ''),
      encodeFrame(OP_PUSH, '{}', 0x07),
      encodeFrame(0x0099, ''),
      encodeFrame(OP_PUSH, JSON.stringify({ event: 'Txn', data: { user: 'fifo' } })),
      encodeFrame(0x0011, ''),
      encodeFrame(OP_PUSH, '{}', 0x02),
      encodeFrame(OP_GET, JSON.stringify({ table: 'UserT', key: 'fifo' })),
      encodeFrame(OP_PUSH, 'nope'),
      encodeFrame(OP_PING, ''),
    ]));
    const got: TcpReply[] = [];
    for (let i = 0; i < 9; i++) got.push(await c.next());
    assert.deepEqual(got.map((r) => r.op), [OP_PING, OP_ERROR_RESPONSE, OP_ERROR_RESPONSE, OP_PUSH, OP_ERROR_RESPONSE, OP_ERROR_RESPONSE, OP_GET_RESPONSE, OP_ERROR_RESPONSE, OP_PING]);
    assert.deepEqual(got.filter((r) => r.op === OP_ERROR_RESPONSE).map((r) => r.json.error.code),
      ['frame_error', 'unknown_op', 'op_not_implemented', 'unsupported_content_type', 'invalid_json_body']);
    assert.deepEqual(got[6].json, { cnt: 1 });
  } finally {
    c.close();
  }
});

test('frame_too_large: error frame with limit and declared, then the server closes; other connections keep working', async () => {
  const other = await connect();
  const { c, ended } = await connect();
  try {
    const payload = Buffer.alloc(2000, 0x20);
    c.writeRaw(rawFrame(3 + payload.length, OP_PUSH, 0x01, payload));
    const r = await withTimeout(c.next(), 5000, 'frame_too_large reply');
    assertErrFrame(r, 'frame_too_large');
    assert.equal(r.json.error.limit, FRAME_MAX + 3);
    assert.equal(r.json.error.declared, 2003);
    await withTimeout(ended, 5000, 'server closes after frame_too_large');
    await assertStillServes(other.c);
    const fresh = await connect();
    await assertStillServes(fresh.c);
    fresh.c.close();
  } finally {
    c.close();
    other.c.close();
  }
});

test('frame_too_large after pipelined requests: their replies come first, then the error, then the close', async () => {
  const { c, ended } = await connect();
  try {
    const push = encodeFrame(OP_PUSH, JSON.stringify({ event: 'Txn', data: { user: 'before-big' } }));
    const get = encodeFrame(OP_GET, JSON.stringify({ table: 'UserT', key: 'before-big' }));
    c.writeRaw(Buffer.concat([push, push, get, rawFrame(5000, OP_PUSH, 0x01), encodeFrame(OP_PING, '')]));
    const replies: TcpReply[] = [];
    for (let i = 0; i < 4; i++) replies.push(await withTimeout(c.next(), 5000, `reply ${i}`));
    assert.deepEqual(replies.map((r) => r.op), [OP_PUSH, OP_PUSH, OP_GET_RESPONSE, OP_ERROR_RESPONSE]);
    assert.deepEqual(replies[2].json, { cnt: 2 });
    assertErrFrame(replies[3], 'frame_too_large');
    await withTimeout(ended, 5000, 'close');
  } finally {
    c.close();
  }
});

test('frame_too_large is decided from the length field alone (header only, no payload sent)', async () => {
  const { c, ended } = await connect();
  try {
    c.writeRaw(rawFrame(0xffffffff, OP_PUSH, 0x01));
    const r = await withTimeout(c.next(), 5000, 'frame_too_large reply');
    assertErrFrame(r, 'frame_too_large');
    assert.equal(r.json.error.declared, 0xffffffff);
    await withTimeout(ended, 5000, 'close');
  } finally {
    c.close();
  }
});

test('a frame of exactly the maximum payload is accepted; one byte more is frame_too_large', async () => {
  const { c } = await connect();
  try {
    const base = JSON.stringify({ event: 'Txn', data: { user: 'max', pad: '' } });
    const body = base.replace('"pad":""', `"pad":"${'x'.repeat(FRAME_MAX - base.length)}"`);
    assert.equal(Buffer.byteLength(body), FRAME_MAX);
    const r = await c.request(OP_PUSH, body);
    assert.equal(r.op, OP_PUSH, r.text);
    const big = body.replace('"pad":"', '"pad":"y');
    const e = await c.request(OP_PUSH, big);
    assertErrFrame(e, 'frame_too_large');
  } finally {
    c.close();
  }
});

test('frame_error: a length below 3 is answered, then the server closes; replies queued before it come first', async () => {
  const { c, ended } = await connect();
  try {
    const bad = Buffer.alloc(4);
    bad.writeUInt32BE(2, 0);
    c.writeRaw(Buffer.concat([encodeFrame(OP_PING, ''), bad, encodeFrame(OP_PING, '')]));
    const first = await c.next();
    assert.equal(first.op, OP_PING);
    const r = await withTimeout(c.next(), 5000, 'frame_error reply');
    assertErrFrame(r, 'frame_error');
    await withTimeout(ended, 5000, 'close after bad length');
  } finally {
    c.close();
  }
  for (const len of [0, 1]) {
    const x = await connect();
    const b = Buffer.alloc(8);
    b.writeUInt32BE(len, 0);
    x.c.writeRaw(b);
    assertErrFrame(await withTimeout(x.c.next(), 5000, 'reply'), 'frame_error');
    await withTimeout(x.ended, 5000, 'close');
    x.c.close();
  }
});

test('frame_error: half-close inside a frame (truncated payload), then close; a half-close between frames is clean', async () => {
  const { c, ended } = await connect();
  try {
    const payload = Buffer.from(JSON.stringify({ event: 'Txn', data: { user: 'trunc' } }));
    c.writeRaw(Buffer.concat([encodeFrame(OP_PING, ''), rawFrame(3 + payload.length, OP_PUSH, 0x01, payload.subarray(0, 10))]));
    c.socket.end();
    const first = await withTimeout(c.next(), 5000, 'ping reply');
    assert.equal(first.op, OP_PING);
    const r = await withTimeout(c.next(), 5000, 'frame_error reply');
    assertErrFrame(r, 'frame_error');
    assert.match(r.json.error.message, /half-closed|truncated/);
    await withTimeout(ended, 5000, 'close');
  } finally {
    c.close();
  }
  // Half-close inside the 4-byte length prefix is a truncated frame too.
  const p = await connect();
  p.c.writeRaw(Buffer.from([0, 0]));
  p.c.socket.end();
  assertErrFrame(await withTimeout(p.c.next(), 5000, 'reply'), 'frame_error');
  await withTimeout(p.ended, 5000, 'close');
  p.c.close();
  // A clean half-close: every request is still answered, then the server closes.
  const q = await connect();
  q.c.writeRaw(Buffer.concat([encodeFrame(OP_PUSH, JSON.stringify({ event: 'Txn', data: { user: 'hc' } })), encodeFrame(OP_GET, JSON.stringify({ table: 'UserT', key: 'hc' }))]));
  q.c.socket.end();
  const a = await withTimeout(q.c.next(), 5000, 'push reply');
  assert.equal(a.op, OP_PUSH, a.text);
  const g = await withTimeout(q.c.next(), 5000, 'get reply');
  assert.deepEqual(g.json, { cnt: 1 });
  await withTimeout(q.ended, 5000, 'close after clean half-close');
  q.c.close();
});

/**
 * Sends raw HTTP bytes and returns what the server sends until it closes (or `ms`).
 * The body goes out in 64 KiB pieces and stops once the server answers, as an HTTP
 * client that watches for an early response does (writing on after the server has
 * closed would make the kernel drop the unread response on the RST).
 */
function rawHttp(port: number, head: string, body: Buffer | null, ms = 5000): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    let out = '';
    const done = (): void => { clearTimeout(t); s.destroy(); resolve(out); };
    const t = setTimeout(done, ms);
    s.on('data', (d) => { out += d.toString('latin1'); });
    s.on('error', done);
    s.on('close', done);
    s.write(head);
    let off = 0;
    const pump = (): void => {
      if (body === null || off >= body.length || out.length > 0 || s.destroyed) return;
      const piece = body.subarray(off, off + 64 * 1024);
      off += piece.length;
      s.write(piece, () => setTimeout(pump, 1));
    };
    // Give the server the chance to answer on the headers alone (a Content-Length over the cap).
    setTimeout(pump, 150);
  });
}

test('http_protocol_error: a 5 MiB body (declared by Content-Length) gets 400 and the server keeps serving', async () => {
  const body = Buffer.alloc(5 * 1024 * 1024, 0x20);
  const text = await rawHttp(srv.httpPort, `POST /push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body);
  assert.match(text, /^HTTP\/1\.1 400/);
  const json = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n/, '').split('\r\n')[0]);
  assert.equal(json.error.code, 'http_protocol_error');
  const p = await post(srv.base, '/ping', '');
  assert.equal(p.status, 200);
  const ok = await post(srv.base, '/push', { event: 'Txn', data: { user: 'after' } });
  assert.equal(ok.status, 200, ok.text);
});

test('http_protocol_error: a chunked body that grows past 4 MiB, and via fetch', async () => {
  // 65 chunks of 64 KiB: just over 4 MiB, so little is still in flight when the server answers.
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const head = 'POST /get HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
  const parts: Buffer[] = [];
  for (let i = 0; i < 65; i++) parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'));
  parts.push(Buffer.from('0\r\n\r\n'));
  const text = await rawHttp(srv.httpPort, head, Buffer.concat(parts));
  assert.match(text, /^HTTP\/1\.1 400/);
  assert.match(text, /http_protocol_error/);
  // The ordinary client path: fetch either reads the 400 or sees the connection closed under it.
  try {
    const res = await fetch(`${srv.base}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: new Uint8Array(5 * 1024 * 1024).fill(0x20) });
    assert.equal(res.status, 400);
    const j = (await res.json()) as { error: { code: string } };
    assert.equal(j.error.code, 'http_protocol_error');
  } catch (err) {
    assert.ok(err instanceof TypeError, String(err));
  }
  assert.equal((await post(srv.base, '/ping', '')).status, 200);
});

test('a body just under the 4 MiB cap is read and parsed (invalid_json_body, not http_protocol_error)', async () => {
  const r = await post(srv.base, '/push', Buffer.alloc(4 * 1024 * 1024 - 16, 0x41));
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, 'invalid_json_body');
});
