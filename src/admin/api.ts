/**
 * JSON views for the dashboard and `streamfeat info|inspect` (docs/operations
 * dashboard section): /api/stats, /api/registry (the lineage graph) and
 * /api/inspect (one entity's row with each feature's op and window).
 */
import { ERRORS, SfError, asSfError, errorJson, sfErrorJson } from '../errors';
import { ADMIN_INSPECT_TIMEOUT_MS } from '../limits';
import { ITEM_INSPECT, type ErrorPayload, type InspectResult } from '../protocol/messages';
import { parseWireKey, shardOf } from '../registry/key';
import type { NodeDef } from '../registry/model';
import { VERSION } from '../version';
import { unknownNameHint } from '../util/near_name';
import type { AdminContext } from './context';
import { diffHistograms, histogramQuantile, mergeHistograms, type HistogramData } from './histogram';
import { processStats } from './process_stats';

function percentiles(h: HistogramData): { count: number; p50: number | null; p90: number | null; p99: number | null } {
  return { count: h.count, p50: histogramQuantile(h, 0.5), p90: histogramQuantile(h, 0.9), p99: histogramQuantile(h, 0.99) };
}

export function statsView(ctx: AdminContext): Record<string, unknown> {
  const { front, stats } = ctx;
  const m = front.metrics;
  // Ages of stamped times (snapshots) and now_ms are server time; uptime and stats ages are durations.
  const now = front.clock.nowMs();
  const mono = performance.now();
  const uptimeMs = mono - m.startedMono;
  const ticks = stats.ticks;
  const last = ticks[ticks.length - 1];
  const first = ticks[0];
  const span = last !== undefined && first !== undefined ? (last.atMs - first.atMs) / 1000 : 0;
  const rate = (pick: (t: typeof last) => number): number => (span > 0 ? (pick(last) - pick(first)) / span : 0);
  const windowed = (pick: (t: typeof last) => HistogramData): ReturnType<typeof percentiles> =>
    percentiles(last === undefined ? { counts: [], sum: 0, count: 0 } : diffHistograms(pick(last), first === last ? undefined : pick(first)));
  const all = (hs: ReadonlyArray<{ data(): HistogramData }>): ReturnType<typeof percentiles> => percentiles(mergeHistograms(hs.map((h) => h.data())));

  const shards = front.channels.map((ch, i) => {
    const s = stats.shards[i];
    const entities = s === null ? 0 : s.tables.reduce((a, t) => a + t.hot + t.cold, 0);
    return {
      shard: i,
      queued: ch.queued,
      in_flight: ch.inFlight,
      batches_total: ch.batchesSent,
      items_total: ch.itemsSent,
      stats_age_s: s === null ? null : (mono - stats.shardAtMs[i]) / 1000,
      entities,
      cold: s === null ? 0 : s.tables.reduce((a, t) => a + t.cold, 0),
      state_bytes: s === null ? 0 : s.tables.reduce((a, t) => a + t.bytes, 0),
      heap_used_bytes: s?.runtime.heapUsedBytes ?? null,
      utilization: s?.runtime.utilization ?? null,
      lag_p99_s: s?.runtime.lag.p99 ?? null,
      applied_lsn: s?.appliedLsn ?? null,
      recovered_records: s?.recoveredRecords ?? null,
      tables: s?.tables ?? [],
      wal: s?.wal === null || s === null ? null : {
        appends_total: s.wal.appends, bytes_total: s.wal.appendBytes, append_errors_total: s.wal.appendErrors,
        fsyncs_total: s.wal.syncs, fsync_errors_total: s.wal.syncErrors, unsynced_bytes: s.wal.bytesSinceSync,
        segment: s.wal.segment, segment_bytes: s.wal.segmentBytes, last_lsn: s.wal.lastLsn,
        append_p99_s: histogramQuantile(s.wal.appendLatency, 0.99), fsync_p99_s: histogramQuantile(s.wal.syncLatency, 0.99),
      },
      snapshot: s?.snapshot === null || s === null ? null : {
        last_success_ms: s.snapshot.lastSuccessMs || null,
        age_s: s.snapshot.lastSuccessMs > 0 ? (now - s.snapshot.lastSuccessMs) / 1000 : null,
        last_duration_s: s.snapshot.lastDurationS, last_bytes: s.snapshot.lastBytes, written_total: s.snapshot.written,
        failures_total: s.snapshot.failures, running: s.snapshot.running,
      },
    };
  });
  const tables = new Map<string, { table: string; entities: number; cold: number; state_bytes: number }>();
  for (const name of front.registry.tables.keys()) tables.set(name, { table: name, entities: 0, cold: 0, state_bytes: 0 });
  for (const s of stats.shards) {
    for (const t of s?.tables ?? []) {
      const agg = tables.get(t.table);
      if (agg === undefined) continue;
      agg.entities += t.hot + t.cold;
      agg.cold += t.cold;
      agg.state_bytes += t.bytes;
    }
  }
  const proc = processStats();
  const wals = shards.flatMap((s) => (s.wal === null ? [] : [s.wal]));
  const snaps = shards.flatMap((s) => (s.snapshot === null ? [] : [s.snapshot]));
  const oldest = snaps.length === 0 || snaps.some((x) => x.last_success_ms === null) ? null : Math.min(...snaps.map((x) => x.last_success_ms!));
  return {
    version: VERSION,
    node: process.version,
    now_ms: now,
    started_ms: Math.round(now - uptimeMs),
    uptime_s: uptimeMs / 1000,
    registry_version: front.version,
    registry_nodes: front.registry.state.nodes.length,
    mode: ctx.memoryOnly ? 'memory' : 'disk',
    wal_sync: ctx.memoryOnly ? null : ctx.walSync,
    data_dir: ctx.memoryOnly ? null : ctx.dataDir,
    shard_count: front.channels.length,
    dedupe_entries: front.dedupe.store.size,
    tcp_connections: m.tcpConnections,
    counters: {
      push_total: m.pushTotal, push_replay_total: m.pushReplayTotal, get_total: m.getTotal, batch_get_total: m.batchGetTotal,
      batch_get_entries_total: m.batchGetEntriesTotal, register_total: m.registerTotal, reset_total: m.resetTotal, errors_total: m.errorsTotal(),
    },
    rates: { window_s: span, push_per_s: rate((t) => t.push), get_per_s: rate((t) => t.get), batch_get_per_s: rate((t) => t.batchGet), errors_per_s: rate((t) => t.errors) },
    /** Per-second rates, oldest first (gets include batch gets). */
    history: stats.history.map((h) => [h.atMs, h.push, h.get, h.errors]),
    latency_recent: { window_s: span, push: windowed((t) => t.pushLatency), get: windowed((t) => t.getLatency), batch_get: windowed((t) => t.batchGetLatency) },
    latency_all: { push: all(m.pushLatency), get: all(m.getLatency), batch_get: all(m.batchGetLatency) },
    errors: Object.fromEntries([...m.errors].sort()),
    process: { rss_bytes: proc.residentBytes, cpu_seconds: proc.cpuUserSeconds + proc.cpuSystemSeconds, open_fds: proc.openFds },
    threads: stats.threads().map((t) => ({
      thread: t.thread, heap_used_bytes: t.heapUsedBytes, heap_total_bytes: t.heapTotalBytes, external_bytes: t.externalBytes,
      utilization: t.utilization, lag_p50_s: t.lag.p50, lag_p99_s: t.lag.p99, lag_max_s: t.lag.max,
    })),
    entities: shards.reduce((a, s) => a + s.entities, 0),
    state_bytes: shards.reduce((a, s) => a + s.state_bytes, 0),
    tables: [...tables.values()],
    wal: ctx.memoryOnly ? null : {
      appends_total: wals.reduce((a, w) => a + w.appends_total, 0),
      bytes_total: wals.reduce((a, w) => a + w.bytes_total, 0),
      fsyncs_total: wals.reduce((a, w) => a + w.fsyncs_total, 0),
      errors_total: wals.reduce((a, w) => a + w.append_errors_total + w.fsync_errors_total, 0),
      unsynced_bytes: wals.reduce((a, w) => a + w.unsynced_bytes, 0),
    },
    snapshot: ctx.memoryOnly ? null : {
      oldest_last_success_ms: oldest,
      age_s: oldest === null ? null : (now - oldest) / 1000,
      last_duration_s: snaps.length === 0 ? null : Math.max(...snaps.map((x) => x.last_duration_s)),
      written_total: snaps.reduce((a, x) => a + x.written_total, 0),
      failures_total: snaps.reduce((a, x) => a + x.failures_total, 0),
      running: snaps.some((x) => x.running),
    },
    shards,
  };
}

interface FeatureView { name: string; op: string; window: string | null; params: Record<string, unknown> }

function featuresOf(def: NodeDef): FeatureView[] {
  if (def.kind !== 'table') return [];
  return def.agg.map(([name, spec]) => ({
    name,
    op: spec.op,
    window: typeof spec.params.window === 'string' || typeof spec.params.window === 'number' ? String(spec.params.window) : null,
    params: spec.params,
  }));
}

/** The registry as a lineage graph: events -> derived events -> tables, each table with its features. */
export function registryView(ctx: AdminContext): Record<string, unknown> {
  const reg = ctx.front.registry;
  const nodes = [...reg.defs.values()].map((def) => {
    const base = { name: def.name, kind: def.kind };
    if (def.kind === 'event') return { ...base, upstream: null, fields: def.fields, optional: def.optional, dedupe_key: def.dedupeKey, cold_after_ms: def.coldAfterMs };
    if (def.kind === 'derived') return { ...base, upstream: def.upstream, ops: def.ops.map((o) => o.op) };
    return { ...base, upstream: def.upstream, ops: def.ops.map((o) => o.op), key: def.key, features: featuresOf(def) };
  });
  const edges = nodes.filter((n) => n.upstream !== null).map((n) => ({ from: n.upstream, to: n.name }));
  return { registry_version: reg.version, nodes, edges };
}

/** Answer of /api/inspect: HTTP status and JSON body. */
export function inspectEntity(ctx: AdminContext, table: string, rawKey: string): Promise<{ status: number; body: string }> {
  const front = ctx.front;
  let key: string;
  let def: NodeDef | undefined;
  try {
    const plan = front.registry.tables.get(table);
    def = front.registry.defs.get(table);
    if (plan === undefined || def === undefined) throw new SfError('unknown_table', `table ${JSON.stringify(table)} is not registered${unknownNameHint(table, front.registry.tables.keys(), 'registered tables', 'no tables are registered')}`, { path: 'table' });
    // A composite key may be given as a JSON array; anything else is the key text itself.
    let wire: unknown = rawKey;
    if (rawKey.startsWith('[')) { try { wire = JSON.parse(rawKey); } catch { wire = rawKey; } }
    key = parseWireKey(wire, plan.keyFields, plan.keyTypes, 'key');
  } catch (err) {
    const e = asSfError(err);
    return Promise.resolve({ status: ERRORS[e.code].status, body: sfErrorJson(e) });
  }
  const shard = shardOf(key, front.channels.length);
  const features = featuresOf(def);
  return new Promise((resolve) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      resolve({ status: 500, body: errorJson('internal_error', { message: `shard ${shard} did not answer within ${ADMIN_INSPECT_TIMEOUT_MS} ms`, reason: 'shard_timeout' }) });
    }, ADMIN_INSPECT_TIMEOUT_MS);
    front.send(shard, { k: ITEM_INSPECT, table, key }, {
      done: (out: string | ErrorPayload | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (typeof out !== 'string') {
          const e = out ?? { code: 'internal_error' as const, detail: { message: 'no answer from shard' } };
          resolve({ status: ERRORS[e.code].status, body: errorJson(e.code, e.detail) });
          return;
        }
        const r = JSON.parse(out) as InspectResult;
        resolve({
          status: 200,
          body: JSON.stringify({
            table, key, shard, found: r.row !== null, cold: r.cold,
            last_push_ms: r.lastPushMs, last_lsn: r.lastLsn, registry_version: front.version,
            features: features.map((f) => ({ ...f, value: r.row === null ? null : r.row[f.name] ?? null })),
          }),
        });
      },
    });
  });
}
