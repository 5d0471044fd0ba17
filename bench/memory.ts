/**
 * Memory per entity of the aggregation state, measured through the real shard
 * state (src/shard/state/state.ts ShardState): a registry with one event and one table
 * keyed by user, pushes applied with ShardState.apply exactly as a shard applies
 * them (WAL and transport aside).
 *
 * Table (10 features): count, sum, mean, min, max, std, n_unique, quantile,
 * top_k over a 5-minute window, and last_n (n = 5; lifetime by nature, bounded
 * by n). Each entity receives a few events (EVENTS_PER_ENTITY) spread over a
 * minute.
 *
 * Reported per entity, growth from before loading to after (both after a forced GC):
 *   rss   process resident set size (what the machine pays)
 *   heap  heapUsed + arrayBuffers + growable buffers (what V8 and typed arrays
 *         hold; Node's arrayBuffers leaves growable ones out, util/unaccounted.ts)
 * A second pass loads each feature alone into a table on PER_FEATURE_ENTITIES
 * entities (heap only; RSS is too coarse at that size) and subtracts a table
 * whose one feature is a lifetime count (the entity index and key).
 *
 * Run:  node --expose-gc dist/bench/memory.js [entities] [events] [--lifetime]
 * Defaults: 200,000 entities, 3 events each. --lifetime: the same ten ops without
 * a window ("forever"): lifetime slab rows, kept values, and the sketches as
 * exact values (shard/columns/exact_column.ts) where the windowed table has rings.
 */
import { pushRow, readText } from '../test/harness/shard_feed';
import { ShardState } from '../src/shard/state/state';
import type { RegistryState } from '../src/registry/model';
import type { Row } from '../src/types';
import { growableBytes } from '../src/util/unaccounted';

const ENTITIES_DEFAULT = 200_000;
const EVENTS_PER_ENTITY_DEFAULT = 3;
const PER_FEATURE_ENTITIES = 50_000;
const BASE_T = 1_700_000_000_000;
const WINDOW = '5m';

const EVENT = {
  kind: 'event', name: 'Tx',
  schema: { fields: { user: 'str', amount: 'f64', merchant: 'str', country: 'str' }, optional_fields: [] },
};

export const FEATURES: Array<[string, unknown]> = [
  ['count', { op: 'count', params: { window: WINDOW } }],
  ['sum', { op: 'sum', params: { field: 'amount', window: WINDOW } }],
  ['mean', { op: 'mean', params: { field: 'amount', window: WINDOW } }],
  ['min', { op: 'min', params: { field: 'amount', window: WINDOW } }],
  ['max', { op: 'max', params: { field: 'amount', window: WINDOW } }],
  ['std', { op: 'std', params: { field: 'amount', window: WINDOW } }],
  ['n_unique', { op: 'n_unique', params: { field: 'merchant', window: WINDOW } }],
  ['quantile', { op: 'quantile', params: { field: 'amount', q: 0.9, window: WINDOW } }],
  ['top_k', { op: 'top_k', params: { field: 'country', k: 3, window: WINDOW } }],
  ['last_n', { op: 'last_n', params: { field: 'merchant', n: 5 } }],
];
/** `features` with every window made "forever" (the lifetime forms of the same ops). */
export function lifetimeOf(features: Array<[string, unknown]>): Array<[string, unknown]> {
  return features.map(([name, spec]) => {
    const { op, params } = spec as { op: string; params: Record<string, unknown> };
    return [name, { op, params: 'window' in params ? { ...params, window: 'forever' } : params }];
  });
}

/** The per-feature baseline table: the entity index and key with one small lifetime feature. */
const BARE: Array<[string, unknown]> = [['n', { op: 'count', params: {} }]];

export function registry(features: Array<[string, unknown]>): RegistryState {
  const table = { kind: 'table', name: 'Users', upstreams: ['Tx'], key: ['user'], agg: Object.fromEntries(features) };
  return { version: 1, nodes: [EVENT, table] };
}

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g === undefined) throw new Error('run with node --expose-gc');
  g();
  g();
}

function usage(): { rss: number; heap: number } {
  gc();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed + m.arrayBuffers + growableBytes() };
}

/** A deterministic row for entity e, event j (amounts vary, merchants repeat sometimes). */
export function rowFor(e: number, j: number): Row {
  return {
    user: `u${e}`,
    amount: ((e * 7919 + j * 104729) % 100_000) / 100,
    merchant: `m${(e * 31 + j * 17) % 5000}`,
    country: j % 2 === 0 ? 'US' : `C${e % 50}`,
  };
}

interface Loaded { rss: number; heap: number; checksum: number; ms: number }

/** Loads `entities` entities into a fresh shard state; returns the bytes they retain (and a checksum of reads). */
function load(features: Array<[string, unknown]>, entities: number, events: number): Loaded {
  const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  state.install(registry(features));
  const before = usage();
  const started = process.hrtime.bigint();
  let lsn = 0;
  // Events interleave across entities as a live stream does (time moves forward for all).
  for (let j = 0; j < events; j++) {
    for (let e = 0; e < entities; e++) pushRow(state, 'Tx', rowFor(e, j), BASE_T + j * 20_000 + Math.floor(e / 1000), ++lsn);
  }
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  const after = usage();
  // Read a sample so the work cannot be optimized away, and keep `state` alive until here.
  let checksum = 0;
  const now = BASE_T + events * 20_000 + entities;
  for (let e = 0; e < entities; e += Math.max(1, Math.floor(entities / 1000))) checksum += readText(state, 'Users', `u${e}`, null, now).length;
  return { rss: after.rss - before.rss, heap: after.heap - before.heap, checksum, ms };
}

function main(): void {
  const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const lifetime = process.argv.includes('--lifetime');
  const entities = Number(args[0] ?? ENTITIES_DEFAULT);
  const events = Number(args[1] ?? EVENTS_PER_ENTITY_DEFAULT);
  const features = lifetime ? lifetimeOf(FEATURES) : FEATURES;
  console.log(`node ${process.version}, ${entities} entities x ${features.length} features, ${events} events per entity, ${lifetime ? 'lifetime (no window)' : `window ${WINDOW}`}, through ShardState.apply`);
  const all = load(features, entities, events);
  console.log(`table: rss +${(all.rss / 2 ** 20).toFixed(1)} MiB = ${(all.rss / entities).toFixed(0)} B per entity; heap +${(all.heap / 2 ** 20).toFixed(1)} MiB = ${(all.heap / entities).toFixed(0)} B per entity; load ${(all.ms / 1000).toFixed(1)} s; checksum ${all.checksum}`);
  gc();
  const bare = load(BARE, PER_FEATURE_ENTITIES, events).heap / PER_FEATURE_ENTITIES;
  console.log(`per feature (heap, ${PER_FEATURE_ENTITIES} entities each, minus a one-feature table [lifetime count: index + key] = ${bare.toFixed(0)} B/entity):`);
  for (const feature of features) {
    const one = load([feature], PER_FEATURE_ENTITIES, events);
    console.log(`  ${feature[0].padEnd(10)} ${(one.heap / PER_FEATURE_ENTITIES - bare).toFixed(0).padStart(5)} B per entity`);
  }
}

// Run, not imported (bench/growth.ts takes the table from here).
if (require.main === module) main();
