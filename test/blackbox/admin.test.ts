/**
 * The admin sidecar (spec 4.7) over real sockets: /health, /ready, /registry and
 * /metrics (Prometheus text 0.0.4) on their own address; the counters and the
 * push latency histogram move with the traffic on the data plane.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, post, startServer, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_GET, OP_GET_RESPONSE, OP_PUSH } from '../../src/protocol/frame';
import { sampleValue, scrape, type PromFamily } from '../harness/prom';

let srv: TestServer;
let admin: string;

before(async () => {
  srv = await startServer({ memoryOnly: true, admin: true });
  assert.ok(srv.adminBase !== null);
  admin = srv.adminBase;
});

after(async () => {
  await srv.stop();
  srv.cleanup();
});

async function metrics(): Promise<{ value: (name: string, labels?: Record<string, string>) => number; families: Map<string, PromFamily> }> {
  const families = await scrape(admin);
  return { families, value: (name, labels = {}) => sampleValue(families, name, labels) ?? 0 };
}

test('/health and /ready answer 200 on the admin address', async () => {
  const h = await get(admin, '/health');
  assert.equal(h.status, 200, h.text);
  assert.deepEqual(h.json, { status: 'ok' });
  const r = await get(admin, '/ready');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'ready' });
});

test('/metrics is not on the data plane (/health and /ready are, as on the peer), and data routes are not on the admin address', async () => {
  const m = await get(srv.base, '/metrics');
  assert.equal(m.status, 404);
  assert.equal(m.json.error.code, 'not_found');
  assert.deepEqual((await get(srv.base, '/health')).json, { status: 'ok' });
  assert.deepEqual((await get(srv.base, '/ready')).json, { status: 'ready' });
  const x = await post(admin, '/push', { event: 'Txn', data: {} });
  assert.equal(x.status, 404);
  assert.equal(x.json.error.code, 'not_found');
  assert.equal((await get(admin, '/nope')).json.error.path, '/nope');
});

test('/registry on the admin address matches the data plane GET /registry', async () => {
  const reg = await post(srv.base, '/register', {
    nodes: [
      { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] } },
      { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' } } },
    ],
  });
  assert.equal(reg.status, 200, reg.text);
  const a = await get(admin, '/registry');
  assert.equal(a.status, 200);
  assert.equal(a.text, (await get(srv.base, '/registry')).text);
  assert.equal(a.json.registry_version, reg.json.registry_version);
});

test('/metrics: push, get, register and error counters and the push latency histogram move with traffic', async () => {
  const m0 = await metrics();
  assert.equal(m0.families.get('streamfeat_push_total')?.type, 'counter');
  assert.equal(m0.families.get('streamfeat_push_latency_seconds')?.type, 'histogram');
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    for (let i = 0; i < 20; i++) {
      if (i % 2 === 0) assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: 'm', amount: i } })).status, 200);
      else assert.equal((await tcp.request(OP_PUSH, { event: 'Txn', data: { user: 'm', amount: i } })).op, OP_PUSH);
    }
    for (let i = 0; i < 7; i++) assert.equal((await tcp.request(OP_GET, { table: 'UserT', key: 'm' })).op, OP_GET_RESPONSE);
    assert.equal((await post(srv.base, '/push', { event: 'Nope', data: {} })).status, 404);
    assert.equal((await post(srv.base, '/register', { nodes: [] })).status, 200);
    const m1 = await metrics();
    assert.equal(m1.value('streamfeat_push_total') - m0.value('streamfeat_push_total'), 20);
    assert.equal(m1.value('streamfeat_get_total') - m0.value('streamfeat_get_total'), 7);
    assert.equal(m1.value('streamfeat_register_total') - m0.value('streamfeat_register_total'), 1);
    assert.equal(m1.value('streamfeat_errors_total', { code: 'event_not_found' }) - m0.value('streamfeat_errors_total', { code: 'event_not_found' }), 1);
    // Ten pushes over each transport; the histograms are per transport (the parser checks buckets).
    for (const transport of ['http', 'tcp']) {
      const count = (m: typeof m1): number => m.value('streamfeat_push_latency_seconds_count', { transport });
      assert.equal(count(m1) - count(m0), 10, `the ${transport} histogram observed its pushes`);
      assert.ok(m1.value('streamfeat_push_latency_seconds_sum', { transport }) > m0.value('streamfeat_push_latency_seconds_sum', { transport }));
    }
    const getCount = (m: typeof m1): number => m.value('streamfeat_get_latency_seconds_count', { transport: 'tcp' });
    assert.equal(getCount(m1) - getCount(m0), 7);
    assert.ok(m1.value('streamfeat_tcp_connections') >= 1);
  } finally {
    tcp.close();
  }
});

test('/health answers under data-plane load and /ready stays 200 once bound', async () => {
  const pushes = Array.from({ length: 200 }, (_, i) => post(srv.base, '/push', { event: 'Txn', data: { user: `l${i % 5}`, amount: 1 } }));
  const checks = Array.from({ length: 20 }, () => get(admin, '/health'));
  for (const r of await Promise.all(checks)) assert.equal(r.status, 200);
  for (const r of await Promise.all(pushes)) assert.equal(r.status, 200);
  assert.equal((await get(admin, '/ready')).status, 200);
});
