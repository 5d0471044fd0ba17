/**
 * Issue 14 items 4 and 8 on both HTTP engines: every known route answers a wrong
 * method with 405 method_not_allowed and an Allow header, unknown paths 404; the
 * peer's routes that the interface spec leaves room for (POST /push/{event}, GET /health and
 * /ready on the data plane, a trailing slash) work; and what a client sees for a
 * malformed request line (docs/compatibility.md: uWS answers its own 505, the
 * node:net engine the spec's 400 http_protocol_error).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { post, startServer, type TestServer } from '../harness/server';

const ENGINES = ['uws', 'net'] as const;
const servers = new Map<string, TestServer>();

const TXN = { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] } };
const USER_T = { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' }, total: { op: 'sum', params: { field: 'amount', window: '1h' } } } };

before(async () => {
  for (const engine of ENGINES) {
    const srv = await startServer({ memoryOnly: true, args: ['--http-engine', engine] });
    servers.set(engine, srv);
    const r = await post(srv.base, '/register', { nodes: [TXN, USER_T] });
    assert.equal(r.status, 200, r.text);
  }
});

after(async () => {
  for (const srv of servers.values()) {
    await srv.stop();
    srv.cleanup();
  }
});

async function call(base: string, method: string, path: string, body?: string): Promise<{ status: number; allow: string | null; json: any; text: string }> {
  const res = await fetch(base + path, { method, body, headers: body === undefined ? {} : { 'content-type': 'application/json' } });
  const text = await res.text();
  let json: any;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, allow: res.headers.get('allow'), json, text };
}

/** Writes raw bytes on a fresh connection; resolves with everything received until the server closes (or 3 s). */
function raw(port: number, data: string): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(data));
    let text = '';
    s.on('data', (d) => { text += d; });
    s.on('error', () => {});
    const timer = setTimeout(() => { s.destroy(); resolve({ text, closed: false }); }, 3000);
    s.on('close', () => { clearTimeout(timer); resolve({ text, closed: true }); });
  });
}

for (const engine of ENGINES) {
  test(`${engine}: item 8: a wrong method on every known route is 405 with Allow; unknown paths are 404`, async () => {
    const base = servers.get(engine)!.base;
    const known: Array<[string, string]> = [
      ['/push', 'POST'], ['/push/Txn', 'POST'], ['/register', 'POST'], ['/get', 'POST'], ['/batch_get', 'POST'],
      ['/ping', 'POST'], ['/reset', 'POST'], ['/registry', 'GET'], ['/health', 'GET'], ['/ready', 'GET'],
    ];
    for (const [path, allowed] of known) {
      for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH']) {
        if (method === allowed) continue;
        const r = await call(base, method, path, method === 'GET' ? undefined : '{}');
        assert.equal(r.status, 405, `${method} ${path}: ${r.text}`);
        assert.equal(r.json.error.code, 'method_not_allowed');
        assert.equal(r.json.error.method, method);
        assert.equal(r.json.error.path, path);
        assert.equal(r.allow, allowed === 'GET' ? 'GET, HEAD' : allowed, `${method} ${path}`);
      }
    }
    for (const path of ['/nope', '/push-batch/Txn', '/get/cnt/u', '/push/Txn/extra', '/metrics', '/']) {
      for (const method of ['GET', 'POST', 'DELETE']) {
        const r = await call(base, method, path, method === 'GET' ? undefined : '{}');
        assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
        assert.equal(r.json.error.code, 'not_found');
      }
    }
  });

  test(`${engine}: item 10: POST /push/{event} (the peer's form), GET /health and /ready, trailing slashes`, async () => {
    const base = servers.get(engine)!.base;
    const p = await call(base, 'POST', '/push/Txn', JSON.stringify({ user: `${engine}-legacy`, amount: 2.5 }));
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(Object.keys(p.json), ['ack_lsn', 'registry_version', 'idempotent_replay']);
    const p2 = await call(base, 'POST', '/push/', JSON.stringify({ event: 'Txn', data: { user: `${engine}-legacy`, amount: 1 } }));
    assert.equal(p2.status, 200, `trailing slash on /push: ${p2.text}`);
    const g = await call(base, 'POST', '/get/', JSON.stringify({ table: 'UserT', key: `${engine}-legacy` }));
    assert.deepEqual(g.json, { cnt: 2, total: 3.5 });
    // Same validation as POST /push.
    const nf = await call(base, 'POST', '/push/Nope', '{}');
    assert.equal(nf.status, 404);
    assert.equal(nf.json.error.code, 'event_not_found');
    const bad = await call(base, 'POST', '/push/Txn', JSON.stringify({ user: 'x', amount: 'lots' }));
    assert.equal(bad.json.error.code, 'invalid_event', bad.text);
    const nj = await call(base, 'POST', '/push/Txn', '{not json');
    assert.equal(nj.json.error.code, 'invalid_json_body');
    const arr = await call(base, 'POST', '/push/Txn', '[1]');
    assert.equal(arr.status, 400);
    assert.equal(arr.json.error.code, 'invalid_event', arr.text);
    assert.deepEqual((await call(base, 'GET', '/health')).json, { status: 'ok' });
    assert.deepEqual((await call(base, 'GET', '/ready')).json, { status: 'ready' });
  });
}

test('item 4: a malformed request line: uWS answers its own 505 and closes; the net engine answers 400 http_protocol_error', async () => {
  for (const line of ['GARBAGE\r\n\r\n', 'POST  /ping HTTP/1.1\r\nHost: x\r\n\r\n', 'POST /ping\r\nHost: x\r\n\r\n']) {
    const u = await raw(servers.get('uws')!.httpPort, line);
    assert.ok(u.closed, 'uWS closes the connection');
    assert.match(u.text, /^HTTP\/1\.1 505 HTTP Version Not Supported\r\n/, `uws ${JSON.stringify(line)}: ${u.text}`);
    const n = await raw(servers.get('net')!.httpPort, line);
    assert.ok(n.closed, 'the net engine closes the connection');
    assert.match(n.text, /^HTTP\/1\.1 400 /, `net ${JSON.stringify(line)}: ${n.text}`);
    const body = JSON.parse(n.text.slice(n.text.indexOf('\r\n\r\n') + 4));
    assert.equal(body.error.code, 'http_protocol_error');
  }
  // Everyone else is still served on both engines.
  for (const srv of servers.values()) assert.equal((await post(srv.base, '/ping', '')).status, 200);
});
