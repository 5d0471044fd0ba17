/**
 * The admin sidecar (spec 4.7) over real sockets: /health, /ready, /registry and
 * /metrics (Prometheus text 0.0.4) on their own address; the counters and the
 * push latency histogram move with the traffic on the data plane.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, post, startServer, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_GET, OP_PUSH } from '../../src/protocol/frame';

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

interface Sample { name: string; labels: string; value: number }

/** Parses Prometheus text exposition; checks every sample line is well formed and has a TYPE. */
function parseMetrics(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      types.set(name, type);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (-?[0-9.e+-]+|\+Inf|NaN)$/.exec(line);
    assert.ok(m !== null, `malformed metrics line: ${JSON.stringify(line)}`);
    samples.push({ name: m[1], labels: m[2] ?? '', value: Number(m[3]) });
  }
  for (const s of samples) {
    const base = s.name.replace(/_(bucket|sum|count)$/, '');
    assert.ok(types.has(s.name) || types.has(base), `no # TYPE for ${s.name}`);
  }
  return { samples, types };
}

async function metrics(): Promise<{ value: (name: string, labels?: string) => number; samples: Sample[]; types: Map<string, string> }> {
  const res = await fetch(`${admin}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  const parsed = parseMetrics(await res.text());
  return {
    ...parsed,
    value: (name, labels = '') => {
      const s = parsed.samples.find((x) => x.name === name && x.labels === labels);
      return s === undefined ? 0 : s.value;
    },
  };
}

test('/health and /ready answer 200 on the admin address', async () => {
  const h = await get(admin, '/health');
  assert.equal(h.status, 200, h.text);
  assert.deepEqual(h.json, { status: 'ok' });
  const r = await get(admin, '/ready');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'ready' });
});

test('admin routes are not on the data plane, and data routes are not on the admin address', async () => {
  for (const path of ['/health', '/ready', '/metrics']) {
    const r = await get(srv.base, path);
    assert.equal(r.status, 404, path);
    assert.equal(r.json.error.code, 'not_found');
  }
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
  assert.equal(m0.types.get('streamfeat_push_total'), 'counter');
  assert.equal(m0.types.get('streamfeat_push_latency_seconds'), 'histogram');
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    for (let i = 0; i < 20; i++) {
      if (i % 2 === 0) assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: 'm', amount: i } })).status, 200);
      else assert.equal((await tcp.request(OP_PUSH, { event: 'Txn', data: { user: 'm', amount: i } })).op, OP_PUSH);
    }
    for (let i = 0; i < 7; i++) assert.equal((await tcp.request(OP_GET, { table: 'UserT', key: 'm' })).op, OP_GET);
    assert.equal((await post(srv.base, '/push', { event: 'Nope', data: {} })).status, 404);
    assert.equal((await post(srv.base, '/register', { nodes: [] })).status, 200);
    const m1 = await metrics();
    assert.equal(m1.value('streamfeat_push_total') - m0.value('streamfeat_push_total'), 20);
    assert.equal(m1.value('streamfeat_get_total') - m0.value('streamfeat_get_total'), 7);
    assert.equal(m1.value('streamfeat_register_total') - m0.value('streamfeat_register_total'), 1);
    assert.equal(m1.value('streamfeat_errors_total', '{code="event_not_found"}') - m0.value('streamfeat_errors_total', '{code="event_not_found"}'), 1);
    const count = (m: typeof m1): number => m.value('streamfeat_push_latency_seconds_count');
    assert.equal(count(m1) - count(m0), 20, 'the histogram observed every push');
    assert.ok(m1.value('streamfeat_push_latency_seconds_sum') > m0.value('streamfeat_push_latency_seconds_sum'));
    const buckets = m1.samples.filter((s) => s.name === 'streamfeat_push_latency_seconds_bucket');
    assert.ok(buckets.length >= 2);
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i].value >= buckets[i - 1].value, 'buckets are cumulative');
    assert.equal(buckets[buckets.length - 1].labels, '{le="+Inf"}');
    assert.equal(buckets[buckets.length - 1].value, count(m1));
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
