/**
 * Issue 11, finding 10: optional shared-token authentication (docs/security.md),
 * over real sockets: HTTP Bearer header, the TCP AUTH frame, the client library and
 * the CLI with a token, start-up refusals, and the warning for a public address
 * without a token. Also: every log line carries `msg`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, post, startServer, tempDataDir, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { encodeFrame, OP_AUTH, OP_ERROR_RESPONSE, OP_PING, OP_PUSH } from '../../src/protocol/frame';
import { Client } from '../../src/client';

const TOKEN = 'c0ffee'.repeat(8);
const NODES = [
  { kind: 'event', name: 'Txn', schema: { fields: { user: 'str' }, optional_fields: [] } },
  { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' } } },
];
const bearer = { authorization: `Bearer ${TOKEN}` };

function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('auth on', () => {
  let srv: TestServer;
  let tokenFile: string;
  before(async () => {
    const dir = tempDataDir();
    tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`);
    srv = await startServer({ memoryOnly: true, args: ['--auth-token-file', tokenFile] });
    assert.equal((await post(srv.base, '/register', { nodes: NODES }, bearer)).status, 200);
  });
  after(async () => { await srv.stop(); srv.cleanup(); });

  test('HTTP: every route needs Authorization: Bearer <token>; otherwise 401 unauthorized with the error envelope', async () => {
    const wrong: Array<Record<string, string>> = [{}, { authorization: 'Bearer nope' }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }, { authorization: `Bearer ${TOKEN}x` }];
    for (const headers of wrong) {
      for (const path of ['/ping', '/push', '/get', '/batch_get', '/register', '/reset', '/nowhere']) {
        const r = await post(srv.base, path, { event: 'Txn', data: { user: 'x' } }, headers);
        assert.equal(r.status, 401, `${path} ${JSON.stringify(headers)}: ${r.text}`);
        assert.equal(r.json.error.code, 'unauthorized');
        assert.equal(typeof r.json.error.message, 'string');
        assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer/);
      }
    }
    const reg = await fetch(`${srv.base}/registry`);
    assert.equal(reg.status, 401);
    assert.equal((await fetch(`${srv.base}/registry`, { headers: bearer })).status, 200);
    assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: 'u' } }, { authorization: `bearer  ${TOKEN}` })).status, 200, 'scheme is case-insensitive');
    assert.equal((await post(srv.base, '/nowhere', {}, bearer)).status, 404);
    // Nothing the refused requests carried was stored.
    assert.deepEqual((await post(srv.base, '/get', { table: 'UserT', key: 'x' }, bearer)).json, {});
    assert.deepEqual((await post(srv.base, '/get', { table: 'UserT', key: 'u' }, bearer)).json, { cnt: 1 });
  });

  test('TCP: the first frame must be AUTH with the token; anything else gets unauthorized and the connection closes', async () => {
    for (const first of [encodeFrame(OP_PING, ''), encodeFrame(OP_AUTH, JSON.stringify({ token: 'nope' })), encodeFrame(OP_AUTH, 'not json'),
      encodeFrame(OP_PUSH, JSON.stringify({ event: 'Txn', data: { user: 'x' } }))]) {
      const c = await TcpClient.connect(srv.tcpPort);
      const closed = new Promise<void>((r) => c.socket.once('close', () => r()));
      // A request pipelined behind the refused frame is not served.
      c.writeRaw(Buffer.concat([first, encodeFrame(OP_PUSH, JSON.stringify({ event: 'Txn', data: { user: 'x' } }))]));
      const r = await c.next();
      assert.equal(r.op, OP_ERROR_RESPONSE, r.text);
      assert.equal(r.json.error.code, 'unauthorized');
      await closed;
    }
    const c = await TcpClient.connect(srv.tcpPort);
    c.writeRaw(Buffer.concat([encodeFrame(OP_AUTH, JSON.stringify({ token: TOKEN })), encodeFrame(OP_PUSH, JSON.stringify({ event: 'Txn', data: { user: 't' } }))]));
    const ok = await c.next();
    assert.equal(ok.op, OP_AUTH);
    assert.deepEqual(ok.json, { ok: true });
    const ack = await c.next();
    assert.equal(ack.op, OP_PUSH, ack.text);
    c.close();
    assert.deepEqual((await post(srv.base, '/get', { table: 'UserT', key: 'x' }, bearer)).json, {});
    assert.deepEqual((await post(srv.base, '/get', { table: 'UserT', key: 't' }, bearer)).json, { cnt: 1 });
  });

  test('client library: { token } works over HTTP and TCP; without it the error is unauthorized', async () => {
    for (const url of [srv.base, `tcp://127.0.0.1:${srv.tcpPort}`]) {
      const good = new Client(url, { token: TOKEN, retry: false });
      const bad = new Client(url, { retry: false });
      try {
        assert.equal((await good.ping()).pong, true);
        await good.push('Txn', { user: 'lib' });
        await assert.rejects(bad.ping(), (e: { code?: string }) => e.code === 'unauthorized');
      } finally {
        await good.close();
        await bad.close();
      }
    }
    assert.deepEqual((await post(srv.base, '/get', { table: 'UserT', key: 'lib' }, bearer)).json, { cnt: 2 });
  });

  test('CLI: --token, --token-file and $STREAMFEAT_TOKEN; without one, exit 1 and unauthorized', async () => {
    assert.equal((await runCli(['ping', '--url', srv.base, '--token', TOKEN])).code, 0);
    assert.equal((await runCli(['ping', '--url', `tcp://127.0.0.1:${srv.tcpPort}`, '--token-file', tokenFile])).code, 0);
    assert.equal((await runCli(['ping', '--url', srv.base], { STREAMFEAT_TOKEN: TOKEN })).code, 0);
    const none = await runCli(['ping', '--url', srv.base]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /unauthorized/);
  });
});

describe('auth off and start-up', () => {
  let srv: TestServer;
  before(async () => { srv = await startServer({ memoryOnly: true, args: ['--http-addr', '0.0.0.0:0'] }); });
  after(async () => { await srv.stop(); srv.cleanup(); });

  test('without a token: requests need no header, AUTH is answered ok, and a non-loopback bind logs a warning', async () => {
    assert.equal((await post(srv.base, '/ping', {})).status, 200);
    const c = await TcpClient.connect(srv.tcpPort);
    const r = await c.request(OP_AUTH, { token: 'anything' });
    assert.equal(r.op, OP_AUTH);
    assert.deepEqual(r.json, { ok: true });
    c.close();
    const warn = srv.logs.find((l) => l.kind === 'server.unauthenticated');
    assert.ok(warn !== undefined, 'a warning for HTTP on 0.0.0.0 without a token');
    assert.equal(warn.level, 40);
    assert.match(String(warn.addr), /^0\.0\.0\.0:/);
    assert.equal(srv.logs.filter((l) => l.kind === 'server.unauthenticated').length, 1, 'TCP is on loopback: no warning for it');
  });

  test('every log line carries msg', () => {
    assert.ok(srv.logs.length >= 3);
    for (const l of srv.logs) assert.equal(typeof l.msg, 'string', JSON.stringify(l));
  });

  test('a missing, short or whitespace token file stops the server at start with exit code 2', async () => {
    const dir = tempDataDir();
    writeFileSync(join(dir, 'short'), 'abc\n');
    writeFileSync(join(dir, 'spaced'), 'abcdefgh ijklmnopqrstu\n');
    for (const [file, message] of [[join(dir, 'missing'), /cannot read the auth token file/], [join(dir, 'short'), /shorter than 16 bytes/], [join(dir, 'spaced'), /whitespace/]] as const) {
      const r = await runCli(['serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--memory-only', '--shards', '1', '--auth-token-file', file]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, message);
    }
    const env = await runCli(['serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--memory-only', '--shards', '1'], { SERVICE_AUTH_TOKEN_FILE: join(dir, 'missing') });
    assert.equal(env.code, 2, 'SERVICE_AUTH_TOKEN_FILE is read too');
  });
});
