/**
 * Cost of the windowed forms of the change-over-time and list ops next to their
 * lifetime forms, in the shard's columns (no server): ns per update and per read
 * of a busy entity (events every 5 ms over a 5-minute window: 60,000 events in
 * the window, so the bucketed regime) in the column the shard keeps the op in
 * (test/unit/ops/column_state.ts), and retained bytes per entity of a shard's
 * table holding the op (pushed as the server does: test/harness/shard_feed.ts)
 * for quiet entities (3 events) and for busy ones.
 *
 * Run:  node --expose-gc dist/bench/window_ops.js [events]
 * Default 200,000 events per op (the window slides over 1000 s of them).
 */
import { compileAgg } from '../src/ops/catalogue';
import type { OpFactory } from '../src/ops/op';
import type { RegistryState } from '../src/registry/model';
import { ShardState } from '../src/shard/state/state';
import type { FieldMap, Row } from '../src/types';
import { growableBytes } from '../src/util/unaccounted';
import { pushRow } from '../test/harness/shard_feed';
import { columnState } from '../test/unit/ops/column_state';

const BASE_T = 1_700_000_000_000;
const STEP_MS = 5;
const QUIET_ENTITIES = 20_000;
const BUSY_ENTITIES = 20;
const FIELDS: FieldMap = { x: 'f64', s: 'str', lat: 'f64', lon: 'f64' };

const OPS: Array<[string, Record<string, unknown>]> = [
  ['trend', { field: 'x' }],
  ['twa', { field: 'x' }],
  ['inter_arrival_stats', {}],
  ['value_change_count', { field: 's' }],
  ['rate_of_change', { field: 'x' }],
  ['outlier_count', { field: 'x' }],
  ['last_n', { field: 's', n: 5 }],
  ['event_type_mix', { field: 's' }],
  ['hour_of_day_histogram', {}],
  ['geo_distance', {}],
];

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** Heap, array buffers and growable buffers in use, after a GC and a turn (growable buffers are counted off by finalizers, which run between turns). */
async function heap(): Promise<number> {
  gc();
  await new Promise((resolve) => setTimeout(resolve, 0));
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers + growableBytes();
}

function rowAt(i: number): Row {
  return { x: Math.sin(i / 50) * 100 + (i % 97 === 0 ? 900 : 0), s: `c${i % 7}`, lat: 48 + (i % 100) / 1000, lon: 2 + (i % 50) / 1000 };
}

function compile(op: string, params: Record<string, unknown>): OpFactory {
  return compileAgg({ op, params }, { fields: FIELDS, path: 'bench', memoryGovEnforce: true });
}

/** ns per update and per read over `events` events (a read every 100 events). */
function speed(f: OpFactory, events: number): { upd: number; read: number } {
  const rows = Array.from({ length: 1000 }, (_, i) => rowAt(i));
  const st = columnState(f);
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < events; i++) {
    const row = rows[i % 1000];
    st.update(f.field === null ? undefined : row[f.field], BASE_T + i * STEP_MS, row);
  }
  const upd = Number(process.hrtime.bigint() - t0) / events;
  const reads = Math.floor(events / 100);
  let sink = 0;
  t0 = process.hrtime.bigint();
  for (let r = 0; r < reads; r++) if (st.read(BASE_T + events * STEP_MS + r) !== undefined) sink++;
  const read = Number(process.hrtime.bigint() - t0) / reads;
  if (sink < 0) console.log(sink);
  return { upd, read };
}

/** Retained bytes per entity of a table holding only the op `op` with `params`, after `events` events each. */
async function bytesPer(op: string, params: Record<string, unknown>, entities: number, events: number): Promise<number> {
  const reg: RegistryState = {
    version: 1,
    nodes: [
      { kind: 'event', name: 'E', schema: { fields: { k: 'str', ...FIELDS }, optional_fields: [] } },
      { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: { f: { op, params } } },
    ] as RegistryState['nodes'],
  };
  const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  state.install(reg);
  pushRow(state, 'E', { k: 'warm', ...rowAt(0) }, BASE_T, 1);
  const before = await heap();
  let lsn = 1;
  for (let e = 0; e < entities; e++) {
    for (let i = 0; i < events; i++) pushRow(state, 'E', { k: `e${e}`, ...rowAt(e * 7 + i) }, BASE_T + i * STEP_MS, ++lsn);
  }
  const after = await heap();
  if (state.tableByName('T')!.size !== entities + 1) throw new Error('unreachable');
  return (after - before) / entities;
}

async function main(): Promise<void> {
  const events = Number(process.argv[2] ?? 200_000);
  const busyEvents = (5 * 60_000) / STEP_MS + 1000;
  console.log(`events per op: ${events}; busy entity: an event every ${STEP_MS} ms, window 5m (${(5 * 60_000) / STEP_MS} events in it)`);
  console.log('| op | form | update ns | read ns (busy) | B/entity, 3 events | B/entity, busy |');
  console.log('|---|---|---|---|---|---|');
  for (const [op, params] of OPS) {
    for (const [form, p] of [['lifetime', params], ['window 5m', { ...params, window: '5m' }]] as const) {
      const f = compile(op, p);
      speed(f, Math.min(events, 20_000)); // warm-up
      const s = speed(f, events);
      const quiet = await bytesPer(op, p, QUIET_ENTITIES, 3);
      const busy = await bytesPer(op, p, BUSY_ENTITIES, busyEvents);
      console.log(`| ${op} | ${form} | ${s.upd.toFixed(0)} | ${s.read.toFixed(0)} | ${quiet.toFixed(0)} | ${busy.toFixed(0)} |`);
    }
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
