/**
 * The windowed forms of the change-over-time ops, the point ops, the count
 * tables and geo_distance over real sockets, once over HTTP and once over framed TCP: register each op lifetime,
 * with a long window ("1h": equals the lifetime value while every event is
 * inside it) and with a short one ("3s"), push a first batch, wait past the short
 * window, push a second batch, get: the short-window features see only the second
 * batch; after another wait they read empty while the lifetime ones keep their
 * value. The values survive a kill -9 and WAL replay. Timing is never asserted
 * tighter than "a wait longer than the window has passed": server times are
 * bounded by the client's own clock readings around each request.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { post, startServer, tempDataDir, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_GET, OP_PUSH, OP_REGISTER } from '../../src/protocol/frame';
import { rmSync } from 'node:fs';
import * as naive from '../unit/ops/motion_naive';
import type { Ev } from '../unit/ops/harness';

const SHORT_MS = 3_000;
const WAIT_MS = SHORT_MS + 300;
const OPS = ['trend', 'trend_residual', 'twa', 'rate_of_change', 'delta_from_prev', 'value_change_count', 'outlier_count'];
const SIGMA = 2;
/** Point and count-table ops (feature name -> params besides field and window). */
const LIST_OPS: Record<string, Record<string, unknown>> = {
  first: {},
  last: {},
  first_3: { n: 3 },
  last_3: { n: 3 },
  lag: { n: 1 },
  histogram: { buckets: [0, 20, 100] },
  event_type_mix: {},
};
const ALL = [...OPS, 'inter_arrival_stats', 'burst_count', ...Object.keys(LIST_OPS), 'hour_of_day_histogram', 'geo_distance'];

/** Each value is also pushed as a point (lat, lon) = (48 + v/1000, 2 + v/1000). */
const point = (v: number): [number, number] => [48 + v / 1000, 2 + v / 1000];
/** Σ haversine km (R = 6371) between consecutive points of the values. */
function pathKm(vs: number[]): number {
  const r = Math.PI / 180;
  let d = 0;
  for (let i = 1; i < vs.length; i++) {
    const [a, b] = [point(vs[i - 1]), point(vs[i])];
    const h = Math.sin(((b[0] - a[0]) * r) / 2) ** 2 + Math.cos(a[0] * r) * Math.cos(b[0] * r) * Math.sin(((b[1] - a[1]) * r) / 2) ** 2;
    d += 2 * 6371 * Math.asin(Math.min(1, Math.sqrt(h)));
  }
  return d;
}

function features(): Record<string, unknown> {
  const agg: Record<string, unknown> = {};
  for (const [suffix, window] of [['', undefined], ['_1h', '1h'], ['_3s', `${SHORT_MS}ms`]] as const) {
    const w = window === undefined ? {} : { window };
    for (const op of OPS) agg[op + suffix] = { op, params: { field: 'v', ...w, ...(op === 'outlier_count' ? { sigma: SIGMA } : {}) } };
    agg['inter_arrival_stats' + suffix] = { op: 'inter_arrival_stats', params: w };
    for (const [name, params] of Object.entries(LIST_OPS)) agg[name + suffix] = { op: name.replace(/^first_3$/, 'first_n').replace(/^last_3$/, 'last_n'), params: { field: 'v', ...params, ...w } };
    agg['hour_of_day_histogram' + suffix] = { op: 'hour_of_day_histogram', params: w };
    agg['geo_distance' + suffix] = { op: 'geo_distance', params: w };
    // sub_window must lie inside the window and be at least window / 1024. A slot counts
    // while it overlaps the window, so the short one uses slots well under WAIT_MS - SHORT_MS.
    agg['burst_count' + suffix] = { op: 'burst_count', params: { sub_window: suffix === '_3s' ? '200ms' : '10s', ...w } };
  }
  return agg;
}

const NODES = [
  { kind: 'event', name: 'M', schema: { fields: { k: 'str', v: 'f64', lat: 'f64', lon: 'f64' }, optional_fields: [] } },
  { kind: 'table', name: 'MT', upstreams: ['M'], key: ['k'], agg: features() },
];

const A = [10, 11, 9, 10, 11, 10, 40];
const B = [10, 11, 10, 200, 12];

interface Transport {
  push(k: string, v: number): Promise<void>;
  get(k: string): Promise<Record<string, any>>;
}

function httpTransport(srv: TestServer): Transport {
  return {
    async push(k, v) {
      const [lat, lon] = point(v);
      const r = await post(srv.base, '/push', { event: 'M', data: { k, v, lat, lon } });
      assert.equal(r.status, 200, r.text);
    },
    async get(k) {
      const r = await post(srv.base, '/get', { table: 'MT', key: k });
      assert.equal(r.status, 200, r.text);
      return r.json;
    },
  };
}

function tcpTransport(tcp: TcpClient): Transport {
  return {
    async push(k, v) {
      const [lat, lon] = point(v);
      const r = await tcp.request(OP_PUSH, { event: 'M', data: { k, v, lat, lon } });
      assert.equal(typeof r.json.ack_lsn, 'number', r.text);
    },
    async get(k) {
      const r = await tcp.request(OP_GET, { table: 'MT', key: k });
      assert.equal(r.json.error, undefined, r.text);
      return r.json;
    },
  };
}

/** Pushes the values in order; returns the client clock just before the first and after the last ack. */
async function pushAll(tr: Transport, k: string, vs: number[]): Promise<{ from: number; to: number }> {
  const from = Date.now();
  for (const v of vs) await tr.push(k, v);
  return { from, to: Date.now() };
}

const asEvs = (vs: number[]): Ev[] => vs.map((v, i) => ({ t: i, row: { v, x: v }, match: true }));
const close = (a: unknown, b: unknown): boolean =>
  typeof a === 'number' && typeof b === 'number' ? Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)) : a === b;

/** Lifetime and "1h" forms agree (every event is inside the hour). */
function assertLongEqualsLifetime(row: Record<string, any>, label: string): void {
  for (const op of ALL) {
    const [a, b] = [row[op + '_1h'], row[op]];
    assert.ok(typeof b === 'object' ? JSON.stringify(a) === JSON.stringify(b) : close(a, b), `${label}: ${op}_1h = ${JSON.stringify(a)}, lifetime ${JSON.stringify(b)}`);
  }
}

/** What the point and count-table ops answer over the values `vs`. */
function listValues(vs: number[]): Record<string, unknown> {
  const cells = { '<0': 0, '0-20': 0, '20-100': 0, '>=100': 0 };
  for (const v of vs) cells[v < 0 ? '<0' : v < 20 ? '0-20' : v < 100 ? '20-100' : '>=100']++;
  const mix: Record<string, number> = {};
  for (const v of vs) mix[String(v)] = (mix[String(v)] ?? 0) + 1;
  for (const k of Object.keys(mix)) mix[k] /= vs.length;
  return {
    first: vs[0] ?? null,
    last: vs[vs.length - 1] ?? null,
    first_3: vs.slice(0, 3),
    last_3: vs.slice(-3),
    lag: vs.length < 2 ? null : vs[vs.length - 2],
    histogram: cells,
    event_type_mix: Object.fromEntries(Object.keys(mix).sort().map((k) => [k, mix[k]])),
  };
}

const pick = (row: Record<string, any>, suffix: string): Record<string, unknown> =>
  Object.fromEntries(Object.keys(LIST_OPS).map((op) => [op, row[op + suffix]]));
const hourTotal = (h: number[]): number => h.reduce((x, y) => x + y, 0);

async function scenario(tr: Transport, k: string): Promise<Record<string, any>> {
  await pushAll(tr, k, A);
  const rowA = await tr.get(k);
  assertLongEqualsLifetime(rowA, `${k} after A`);
  await new Promise((r) => setTimeout(r, WAIT_MS));
  const b = await pushAll(tr, k, B);
  const row = await tr.get(k);
  const afterB = Date.now();
  assertLongEqualsLifetime(row, `${k} after B`);
  const all = [...A, ...B];
  assert.deepEqual(pick(row, ''), listValues(all));
  assert.equal(hourTotal(row.hour_of_day_histogram), all.length);
  assert.ok(close(row.geo_distance, pathKm(all)), `geo_distance ${row.geo_distance}`);
  // Value-only answers are known exactly.
  assert.equal(row.value_change_count, naive.valueChanges(asEvs(all)));
  assert.equal(row.delta_from_prev, B[B.length - 1] - B[B.length - 2]);
  const flagged = naive.outliers(asEvs(all), SIGMA).map((e) => e.t);
  assert.equal(row.outlier_count, flagged.length);
  assert.ok(flagged.some((i) => i < A.length) && flagged.some((i) => i >= A.length), 'both batches hold an outlier');
  // The short window holds exactly batch B (A is older than WAIT_MS > 3 s; B is younger
  // than 3 s unless the machine stalled for seconds, checked with the client clock).
  if (afterB - b.from < SHORT_MS) {
    assert.equal(row.value_change_count_3s, naive.valueChanges(asEvs(B)));
    assert.equal(row.delta_from_prev_3s, row.delta_from_prev);
    assert.equal(row.rate_of_change_3s, row.rate_of_change, 'the latest pair lies in B');
    assert.equal(row.outlier_count_3s, flagged.filter((i) => i >= A.length).length, 'outliers judged against all prior values, counted in the window');
    assert.ok(row.twa_3s >= Math.min(...B) && row.twa_3s <= Math.max(...B), `twa over B within B's range: ${row.twa_3s}`);
    assert.ok(row.inter_arrival_stats_3s >= 0 && row.inter_arrival_stats_3s <= (b.to - b.from) / (B.length - 1), 'gaps of B only');
    assert.ok(row.inter_arrival_stats >= WAIT_MS / (all.length - 1), 'lifetime gaps include the wait');
    assert.equal(typeof row.trend_3s, 'number');
    assert.ok(row.burst_count_3s >= 1 && row.burst_count_3s <= B.length);
    assert.deepEqual(pick(row, '_3s'), listValues(B));
    assert.equal(hourTotal(row.hour_of_day_histogram_3s), B.length);
    assert.ok(close(row.geo_distance_3s, pathKm(B)), `geo_distance_3s ${row.geo_distance_3s}`);
  }
  // Past the short window nothing is left in it; the lifetime and 1h forms are unchanged.
  await new Promise((r) => setTimeout(r, WAIT_MS));
  const idle = await tr.get(k);
  assert.deepEqual(
    Object.fromEntries([...OPS, 'inter_arrival_stats', 'burst_count'].map((op) => [op, idle[op + '_3s']])),
    { trend: null, trend_residual: null, twa: null, rate_of_change: null, delta_from_prev: null, value_change_count: 0, outlier_count: 0, inter_arrival_stats: null, burst_count: 0 },
  );
  assert.deepEqual(pick(idle, '_3s'), { ...listValues([]), event_type_mix: {} });
  assert.equal(hourTotal(idle.hour_of_day_histogram_3s), 0);
  assert.equal(idle.geo_distance_3s, 0);
  for (const op of ALL) {
    assert.deepEqual([idle[op], idle[op + '_1h']], [row[op], row[op + '_1h']], `${op} lifetime / 1h unchanged while idle`);
  }
  return idle;
}

let srv: TestServer;
let tcp: TcpClient;
const dataDir = tempDataDir();

before(async () => {
  srv = await startServer({ dataDir, shards: 2 });
  tcp = await TcpClient.connect(srv.tcpPort);
});

after(async () => {
  tcp.close();
  await srv.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

test('register: the change-over-time, point and count-table ops take a window; a sub_window not inside the window is refused', async () => {
  const r = await post(srv.base, '/register', { nodes: NODES });
  assert.equal(r.status, 200, r.text);
  const tr = await tcp.request(OP_REGISTER, { nodes: NODES });
  assert.equal(tr.json.status, 'ok', tr.text);
  for (const sub of ['1h', '2h']) {
    const bad = await post(srv.base, '/register', {
      nodes: [NODES[0], { ...NODES[1], name: 'Bad', agg: { b: { op: 'burst_count', params: { sub_window: sub, window: '1h' } } } }],
    });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.json.error.code, 'aggregation_invalid_sub_window');
    assert.equal(bad.json.error.path, 'nodes[1].agg.b.params.sub_window');
  }
});

test('windowed values over HTTP and TCP, sliding out as time passes, and after kill -9', async () => {
  const [http, viaTcp] = await Promise.all([scenario(httpTransport(srv), 'h'), scenario(tcpTransport(tcp), 't')]);
  tcp.close();
  await srv.kill9();
  srv = await startServer({ dataDir, shards: 2 });
  tcp = await TcpClient.connect(srv.tcpPort);
  // Replayed from the WAL: lifetime and 1h values as before; the 3s ones still empty.
  assert.deepEqual(await httpTransport(srv).get('h'), http);
  assert.deepEqual(await tcpTransport(tcp).get('t'), viaTcp);
});
