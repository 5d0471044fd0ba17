/**
 * /metrics over real sockets, on a disk-mode server with two shards: the text is
 * valid Prometheus exposition (test/harness/prom.ts, itself checked against bad
 * input below), counters are `_total` counters, every series of docs/metrics.md
 * is there with its type, per-thread and per-shard series name every thread, and
 * counters, histograms (by transport), entities, WAL and snapshot figures move
 * with traffic.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { post, startServer, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_BATCH_GET, OP_GET, OP_GET_RESPONSE, OP_PUSH } from '../../src/protocol/frame';
import { parsePrometheus, sampleValue, scrape, type PromFamily } from '../harness/prom';

let srv: TestServer;
let admin: string;

before(async () => {
  srv = await startServer({ shards: 2, admin: true, args: ['--snapshot-interval', '1s'] });
  admin = srv.adminBase!;
  const reg = await post(srv.base, '/register', {
    nodes: [
      { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] } },
      { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' }, spend: { op: 'sum', params: { field: 'amount', window: '1h' } } } },
    ],
  });
  assert.equal(reg.status, 200, reg.text);
});

after(async () => {
  await srv.stop();
  srv.cleanup();
});

/** Polls `check` (which throws until satisfied) for up to 20 s: shard figures refresh once a second. */
async function eventually(check: (m: Map<string, PromFamily>) => void): Promise<Map<string, PromFamily>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const m = await scrape(admin);
    try { check(m); return m; } catch (err) { if (Date.now() > deadline) throw err; }
    await new Promise((r) => setTimeout(r, 200));
  }
}

const v = (m: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}): number => {
  const x = sampleValue(m, name, labels);
  assert.ok(x !== undefined, `no sample ${name}${JSON.stringify(labels)}`);
  return x;
};

/** Every family of docs/metrics.md with its type (the doc's table is checked against this list too). */
const FAMILIES: Record<string, string> = {
  streamfeat_build_info: 'gauge',
  process_cpu_user_seconds_total: 'counter', process_cpu_system_seconds_total: 'counter', process_cpu_seconds_total: 'counter',
  process_resident_memory_bytes: 'gauge', process_start_time_seconds: 'gauge', process_open_fds: 'gauge', process_max_fds: 'gauge',
  nodejs_heap_size_used_bytes: 'gauge', nodejs_heap_size_total_bytes: 'gauge', nodejs_heap_size_limit_bytes: 'gauge', nodejs_external_memory_bytes: 'gauge',
  nodejs_eventloop_utilization_ratio: 'gauge', nodejs_eventloop_lag_mean_seconds: 'gauge', nodejs_eventloop_lag_p50_seconds: 'gauge',
  nodejs_eventloop_lag_p99_seconds: 'gauge', nodejs_eventloop_lag_max_seconds: 'gauge',
  streamfeat_push_total: 'counter', streamfeat_push_replay_total: 'counter', streamfeat_get_total: 'counter', streamfeat_batch_get_total: 'counter',
  streamfeat_batch_get_entries_total: 'counter', streamfeat_register_total: 'counter', streamfeat_reset_total: 'counter',
  streamfeat_forget_total: 'counter', streamfeat_forget_rows_total: 'counter',
  streamfeat_http_requests_total: 'counter', streamfeat_errors_total: 'counter',
  streamfeat_completion_errors_total: 'counter', streamfeat_dedupe_full_total: 'counter',
  streamfeat_served_log_lines_total: 'counter', streamfeat_served_log_dropped_total: 'counter', streamfeat_served_log_bytes_total: 'counter', streamfeat_served_log_write_errors_total: 'counter',
  streamfeat_push_latency_seconds: 'histogram', streamfeat_get_latency_seconds: 'histogram', streamfeat_batch_get_latency_seconds: 'histogram',
  streamfeat_tcp_connections: 'gauge', streamfeat_uptime_seconds: 'gauge', streamfeat_registry_version: 'gauge', streamfeat_registry_nodes: 'gauge',
  streamfeat_dedupe_entries: 'gauge', streamfeat_shards: 'gauge', streamfeat_clock_jumps_total: 'counter', streamfeat_clock_ahead_seconds: 'gauge',
  streamfeat_shard_batches_total: 'counter', streamfeat_shard_batch_items_total: 'counter', streamfeat_shard_batch_seconds_total: 'counter',
  streamfeat_shard_queue_items: 'gauge', streamfeat_shard_batches_in_flight: 'gauge', streamfeat_shard_applied_lsn: 'gauge',
  streamfeat_shard_recovered_records: 'gauge', streamfeat_shard_recovery_seconds: 'gauge', streamfeat_stats_age_seconds: 'gauge',
  streamfeat_entities: 'gauge', streamfeat_cold_entities: 'gauge', streamfeat_table_state_bytes: 'gauge',
  streamfeat_cold_frozen_total: 'counter', streamfeat_cold_dropped_total: 'counter', streamfeat_cold_evicted_total: 'counter',
  streamfeat_cold_thawed_total: 'counter', streamfeat_cold_store_bytes: 'gauge', streamfeat_cold_store_live_bytes: 'gauge',
  streamfeat_cold_store_segments: 'gauge', streamfeat_cold_store_write_errors_total: 'counter', streamfeat_cold_store_corrupt_total: 'counter',
  streamfeat_cold_store_compactions_total: 'counter', streamfeat_cold_memory_bytes: 'gauge', streamfeat_memory_limit_bytes: 'gauge',
  streamfeat_shard_memory_bytes: 'gauge', streamfeat_memory_refused_total: 'counter',
  streamfeat_wal_appends_total: 'counter', streamfeat_wal_append_bytes_total: 'counter', streamfeat_wal_append_errors_total: 'counter',
  streamfeat_wal_fsyncs_total: 'counter', streamfeat_wal_fsync_errors_total: 'counter', streamfeat_wal_unsynced_bytes: 'gauge',
  streamfeat_wal_segment_bytes: 'gauge', streamfeat_wal_last_lsn: 'gauge',
  streamfeat_wal_append_latency_seconds: 'histogram', streamfeat_wal_fsync_latency_seconds: 'histogram',
  streamfeat_snapshot_last_success_timestamp_seconds: 'gauge', streamfeat_snapshot_age_seconds: 'gauge',
  streamfeat_snapshot_last_duration_seconds: 'gauge', streamfeat_snapshot_last_bytes: 'gauge', streamfeat_snapshots_total: 'counter',
  streamfeat_snapshot_failures_total: 'counter',
};

test('the Prometheus reader rejects what Prometheus would (so the checks below can fail)', () => {
  const ok = '# HELP a_total x\n# TYPE a_total counter\na_total{k="v"} 1\n';
  parsePrometheus(ok);
  assert.throws(() => parsePrometheus('# HELP a x\n# TYPE a counter\na 1\n'), /_total/);
  assert.throws(() => parsePrometheus('# HELP a_total x\n# TYPE a_total gauge\na_total 1\n'), /must not end in _total/);
  assert.throws(() => parsePrometheus('a_total 1\n'), /no # TYPE/);
  assert.throws(() => parsePrometheus('# TYPE a gauge\na{k=v} 1\n'), /bad labels/);
  assert.throws(() => parsePrometheus('# TYPE a gauge\na 1 2 3\n'), /malformed|bad value/);
  assert.throws(() => parsePrometheus('# TYPE a gauge\na 1\na 2\n'), /twice/);
  assert.throws(() => parsePrometheus('# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na{x="1"} 2\n'), /contiguous/);
  assert.throws(() => parsePrometheus('# TYPE h histogram\nh_bucket{le="1"} 5\nh_bucket{le="+Inf"} 4\nh_sum 1\nh_count 4\n'), /cumulative/);
  assert.throws(() => parsePrometheus('# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 4\nh_sum 1\nh_count 5\n'), /\+Inf/);
  assert.throws(() => parsePrometheus(ok.slice(0, -1)), /newline/);
});

test('every documented family is exposed with its type; no gauge-typed counters remain', async () => {
  const m = await eventually((x) => { for (const name of Object.keys(FAMILIES)) assert.ok(x.has(name), `missing family ${name}`); });
  for (const [name, type] of Object.entries(FAMILIES)) assert.equal(m.get(name)!.type, type, name);
  for (const f of m.values()) assert.ok(f.name in FAMILIES, `undocumented family ${f.name}`);
  assert.ok(!m.has('streamfeat_shard_batches') && !m.has('streamfeat_shard_batch_items'), 'the old gauge names are gone');
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string };
  assert.equal(v(m, 'streamfeat_build_info', { version: pkg.version, node: process.version }), 1);
  assert.ok(v(m, 'process_resident_memory_bytes') > 10e6);
  assert.ok(v(m, 'process_cpu_seconds_total') > 0);
  // docs/metrics.md lists exactly these families.
  const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'metrics.md'), 'utf8');
  const documented = new Set([...doc.matchAll(/^\| `([a-z0-9_:]+)` \| (counter|gauge|histogram) \|/gm)].map((x) => `${x[1]}:${x[2]}`));
  assert.deepEqual([...documented].sort(), Object.entries(FAMILIES).map(([n, t]) => `${n}:${t}`).sort());
});

test('per-thread runtime series name the front, the coordinator and each shard', async () => {
  const threads = ['front', 'coordinator', 'shard-0', 'shard-1'];
  const m = await eventually((x) => { for (const thread of threads) v(x, 'nodejs_eventloop_lag_p99_seconds', { thread }); });
  for (const thread of threads) {
    assert.ok(v(m, 'nodejs_heap_size_used_bytes', { thread }) > 1e6, thread);
    assert.ok(v(m, 'nodejs_heap_size_total_bytes', { thread }) >= v(m, 'nodejs_heap_size_used_bytes', { thread }), thread);
    const u = v(m, 'nodejs_eventloop_utilization_ratio', { thread });
    assert.ok(u >= 0 && u <= 1, `${thread} utilization ${u}`);
    assert.ok(v(m, 'nodejs_eventloop_lag_max_seconds', { thread }) >= 0);
  }
});

test('counters, latency histograms by transport, entities, WAL and snapshot series move with traffic', async () => {
  const m0 = await scrape(admin);
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    for (let i = 0; i < 40; i++) {
      const data = { event: 'Txn', data: { user: `u${i % 10}`, amount: i } };
      if (i % 2 === 0) assert.equal((await post(srv.base, '/push', data)).status, 200);
      else assert.equal((await tcp.request(OP_PUSH, data)).op, OP_PUSH);
    }
    for (let i = 0; i < 5; i++) {
      assert.equal((await post(srv.base, '/get', { table: 'UserT', key: `u${i}` })).status, 200);
      assert.equal((await tcp.request(OP_GET, { table: 'UserT', key: `u${i}` })).op, OP_GET_RESPONSE);
    }
    const batch = { requests: [{ table: 'UserT', key: 'u1' }, { table: 'UserT', key: 'u2' }] };
    assert.equal((await post(srv.base, '/batch_get', batch)).status, 200);
    assert.equal((await tcp.request(OP_BATCH_GET, batch)).op, OP_GET_RESPONSE);
  } finally {
    tcp.close();
  }
  const d = (m: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}): number => v(m, name, labels) - (sampleValue(m0, name, labels) ?? 0);
  const m = await eventually((x) => {
    for (const shard of ['0', '1']) assert.ok(v(x, 'streamfeat_entities', { shard, table: 'UserT' }) > 0, `entities of shard ${shard}`);
    assert.equal(v(x, 'streamfeat_entities', { shard: '0', table: 'UserT' }) + v(x, 'streamfeat_entities', { shard: '1', table: 'UserT' }), 10);
    for (const shard of ['0', '1']) assert.ok(v(x, 'streamfeat_snapshots_total', { shard }) >= 1, `snapshot of shard ${shard}`);
    for (const shard of ['0', '1']) assert.ok(v(x, 'streamfeat_wal_fsyncs_total', { shard }) >= 1, `fsync of shard ${shard}`);
  });
  assert.equal(d(m, 'streamfeat_push_total'), 40);
  assert.equal(d(m, 'streamfeat_get_total'), 10);
  assert.equal(d(m, 'streamfeat_batch_get_total'), 2);
  assert.equal(d(m, 'streamfeat_batch_get_entries_total'), 4);
  for (const transport of ['http', 'tcp']) {
    assert.equal(d(m, 'streamfeat_push_latency_seconds_count', { transport }), 20, transport);
    assert.equal(d(m, 'streamfeat_get_latency_seconds_count', { transport }), 5, transport);
    assert.equal(d(m, 'streamfeat_batch_get_latency_seconds_count', { transport }), 1, transport);
    assert.equal(v(m, 'streamfeat_push_latency_seconds_bucket', { transport, le: '+Inf' }), v(m, 'streamfeat_push_latency_seconds_count', { transport }));
  }
  let batches = 0;
  let walBytes = 0;
  for (const shard of ['0', '1']) {
    batches += d(m, 'streamfeat_shard_batches_total', { shard });
    walBytes += d(m, 'streamfeat_wal_append_bytes_total', { shard });
    assert.ok(v(m, 'streamfeat_table_state_bytes', { shard, table: 'UserT' }) > 0);
    assert.ok(v(m, 'streamfeat_wal_append_latency_seconds_count', { shard }) === v(m, 'streamfeat_wal_appends_total', { shard }));
    assert.ok(v(m, 'streamfeat_wal_fsync_latency_seconds_count', { shard }) === v(m, 'streamfeat_wal_fsyncs_total', { shard }));
    assert.ok(v(m, 'streamfeat_snapshot_last_success_timestamp_seconds', { shard }) * 1000 > Date.now() - 60_000);
    const age = v(m, 'streamfeat_snapshot_age_seconds', { shard });
    assert.ok(age >= 0 && age < 60, `snapshot age ${age}`);
    assert.ok(v(m, 'streamfeat_snapshot_last_duration_seconds', { shard }) >= 0);
    assert.ok(v(m, 'streamfeat_shard_applied_lsn', { shard }) > 0);
  }
  assert.ok(batches >= 2, 'shard batches counted');
  assert.ok(walBytes > 40 * 20, `WAL bytes grew by ${walBytes}`);
});
