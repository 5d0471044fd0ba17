/**
 * The HTTP route table (spec 4, docs/wire.md) over real sockets: unknown routes
 * (not_found), wrong methods (method_not_allowed with method, path and Allow),
 * /ping, GET /registry, /reset in test mode (clears registry, state and dedupe,
 * bumps registry_version, LSNs keep growing) and outside it
 * (reset_disabled_in_production on both transports).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { get, post, startServer, serverForFile } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_ERROR_RESPONSE, OP_RESET } from '../../src/protocol/frame';
import { PACKAGE_VERSION } from '../harness/package_version';

const NODES = [
  { kind: 'event', name: 'Txn', schema: { fields: { id: 'str', user: 'str', amount: 'f64' }, optional_fields: [] }, dedupe_key: 'id', dedupe_window: '1h' },
  { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' } } },
];

const srv = serverForFile({ memoryOnly: true });

async function request(method: string, path: string, body?: string): Promise<{ status: number; headers: Headers; json: any; text: string }> {
  const res = await fetch(srv.base + path, { method, body, headers: body === undefined ? {} : { 'content-type': 'application/json' } });
  const text = await res.text();
  let json: unknown;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, json, text };
}

test('registry_version starts at 0 on a fresh server: ping and GET /registry', async () => {
  const p = await post(srv.base, '/ping', '');
  assert.equal(p.status, 200);
  assert.deepEqual(p.json, { pong: true, registry_version: 0, server_version: PACKAGE_VERSION });
  const r = await get(srv.base, '/registry');
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.deepEqual(r.json, { registry_version: 0, nodes: [] });
});

test('not_found: 404 for unknown routes, with error.path', async () => {
  for (const [method, path] of [['GET', '/'], ['POST', '/nope'], ['GET', '/nope'], ['POST', '/push/Txn/x'], ['POST', '/push-batch/Txn'], ['GET', '/get/cnt/u'], ['POST', '/PUSH'], ['DELETE', '/x/y'], ['GET', '/metrics']]) {
    const r = await request(method, path, method === 'POST' ? '{}' : undefined);
    assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
    assert.equal(r.json.error.code, 'not_found');
    assert.equal(r.json.error.path, path);
    assert.equal(typeof r.json.error.message, 'string');
  }
});

test('method_not_allowed: 405 echoing method and path, with an Allow header', async () => {
  const cases: Array<[string, string, string]> = [
    ['GET', '/push', 'POST'], ['DELETE', '/register', 'POST'], ['PUT', '/get', 'POST'], ['GET', '/batch_get', 'POST'],
    ['GET', '/ping', 'POST'], ['PATCH', '/ping', 'POST'], ['GET', '/reset', 'POST'], ['POST', '/registry', 'GET, HEAD'], ['DELETE', '/registry', 'GET, HEAD'],
    // Peer routes (docs/compatibility.md): POST /push/{event}; GET /health and /ready on the data plane.
    ['DELETE', '/push/Txn', 'POST'], ['GET', '/push/Txn', 'POST'], ['POST', '/health', 'GET, HEAD'], ['PUT', '/ready', 'GET, HEAD'],
  ];
  for (const [method, path, allow] of cases) {
    const r = await request(method, path, method === 'GET' || method === 'DELETE' ? undefined : '{}');
    assert.equal(r.status, 405, `${method} ${path}: ${r.text}`);
    assert.equal(r.json.error.code, 'method_not_allowed');
    assert.equal(r.json.error.method, method);
    assert.equal(r.json.error.path, path);
    assert.equal(r.headers.get('allow'), allow);
  }
  // A GET /push pushes nothing.
  assert.equal((await post(srv.base, '/ping', '')).json.registry_version, 0);
});

test('ping: POST with any body or none', async () => {
  for (const body of ['', '{}', 'not json at all', '[1,2]']) {
    const r = await post(srv.base, '/ping', body);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.pong, true);
    assert.equal(typeof r.json.registry_version, 'number');
  }
});

test('GET /registry returns the registered nodes as registered, in topological order', async () => {
  const r = await post(srv.base, '/register', { nodes: NODES });
  assert.equal(r.status, 200, r.text);
  const g = await get(srv.base, '/registry');
  assert.equal(g.json.registry_version, r.json.registry_version);
  assert.deepEqual(g.json.nodes, NODES);
  const p = await post(srv.base, '/ping', '');
  assert.equal(p.json.registry_version, r.json.registry_version);
});

test('reset in test mode: clears registry, state and dedupe memory; bumps registry_version; ack_lsn keeps growing', async () => {
  await post(srv.base, '/register', { nodes: NODES });
  const a = await post(srv.base, '/push', { event: 'Txn', data: { id: 'r1', user: 'u', amount: 1 } });
  assert.equal(a.status, 200, a.text);
  const v0 = (await post(srv.base, '/ping', '')).json.registry_version;
  const r = await post(srv.base, '/reset', '');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'ok', reset: true, registry_version: v0 + 1 });
  assert.deepEqual((await get(srv.base, '/registry')).json, { registry_version: v0 + 1, nodes: [] });
  // The registry is empty: the event and table are gone.
  const gone = await post(srv.base, '/push', { event: 'Txn', data: { id: 'r1', user: 'u', amount: 1 } });
  assert.equal(gone.status, 404);
  assert.equal(gone.json.error.code, 'event_not_found');
  assert.equal(gone.json.registry_version, v0 + 1);
  assert.equal((await post(srv.base, '/get', { table: 'UserT', key: 'u' })).json.error.code, 'unknown_table');
  // Registering again starts from empty state, with a new version; the old dedupe value is novel.
  const reg = await post(srv.base, '/register', { nodes: NODES });
  assert.equal(reg.json.registry_version, v0 + 2);
  const b = await post(srv.base, '/push', { event: 'Txn', data: { id: 'r1', user: 'u', amount: 1 } });
  assert.equal(b.status, 200, b.text);
  assert.equal(b.json.idempotent_replay, false, 'dedupe memory was cleared');
  assert.ok(b.json.ack_lsn > a.json.ack_lsn, 'ack_lsn never goes backwards across a reset');
  assert.equal(b.json.registry_version, v0 + 2);
  assert.deepEqual((await post(srv.base, '/get', { table: 'UserT', key: 'u' })).json, { cnt: 1 }, 'state was cleared');
  // Reset ignores its body; two resets in a row each bump the version.
  const r2 = await post(srv.base, '/reset', 'garbage');
  const r3 = await post(srv.base, '/reset', '{}');
  assert.equal(r2.json.registry_version, v0 + 3);
  assert.equal(r3.json.registry_version, v0 + 4);
});

test('reset_disabled_in_production: 403 on HTTP and over TCP when test mode is off; nothing is cleared', async () => {
  const prod = await startServer({ memoryOnly: true, testMode: false });
  const tcp = await TcpClient.connect(prod.tcpPort);
  try {
    const reg = await post(prod.base, '/register', { nodes: NODES });
    assert.equal(reg.status, 200, reg.text);
    await post(prod.base, '/push', { event: 'Txn', data: { id: 'p1', user: 'u', amount: 1 } });
    const r = await post(prod.base, '/reset', '');
    assert.equal(r.status, 403, r.text);
    assert.equal(r.json.error.code, 'reset_disabled_in_production');
    assert.equal(typeof r.json.error.reason, 'string');
    assert.match(r.json.error.reason, /--test-mode/);
    assert.match(r.json.error.reason, /SERVICE_TEST_MODE/);
    assert.equal(r.json.registry_version, reg.json.registry_version);
    const t = await tcp.request(OP_RESET, '');
    assert.equal(t.op, OP_ERROR_RESPONSE);
    assert.equal(t.text, r.text);
    assert.equal((await get(prod.base, '/registry')).json.nodes.length, 2);
    assert.deepEqual((await post(prod.base, '/get', { table: 'UserT', key: 'u' })).json, { cnt: 1 });
  } finally {
    tcp.close();
    await prod.stop();
    prod.cleanup();
  }
});

test('SERVICE_TEST_MODE=1 enables reset without the flag', async () => {
  const s = await startServer({ memoryOnly: true, testMode: false, env: { SERVICE_TEST_MODE: '1' } });
  try {
    const r = await post(s.base, '/reset', '');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { status: 'ok', reset: true, registry_version: 1 });
  } finally {
    await s.stop();
    s.cleanup();
  }
});
