/**
 * Memory per entity of the aggregation states, the way a shard holds them:
 * Map<entity key, OpState[]> with one state per feature of the table.
 *
 * Table (10 features): count, sum, mean, min, max, std, n_unique, quantile,
 * top_k over a 5-minute window, and last_n (n = 5; lifetime by nature, bounded
 * by n). Each entity receives a few events (EVENTS_PER_ENTITY) spread over a
 * minute. Heap is measured as heapUsed + arrayBuffers after a forced GC, before
 * and after loading.
 *
 * Run:  node --expose-gc --max-old-space-size=8192 dist/bench/memory.js [entities] [events]
 * Defaults: 1,000,000 entities, 3 events each. A second pass measures each
 * feature alone on 100,000 entities to split the total per feature.
 */
import { compileAgg } from '../src/ops/catalogue';
import type { OpFactory, OpState } from '../src/ops/op';
import type { FieldMap, Row } from '../src/types';

const ENTITIES_DEFAULT = 1_000_000;
const EVENTS_PER_ENTITY_DEFAULT = 3;
const PER_FEATURE_ENTITIES = 100_000;
const BASE_T = 1_700_000_000_000;
const WINDOW = '5m';

const FIELDS: FieldMap = { user: 'str', amount: 'f64', merchant: 'str', country: 'str' };

const FEATURES: Array<[string, unknown]> = [
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

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g === undefined) throw new Error('run with node --expose-gc');
  g();
  g();
}

function heapBytes(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

function compileAll(features: Array<[string, unknown]>): OpFactory[] {
  return features.map(([name, spec]) => compileAgg(spec, { fields: FIELDS, path: `agg.${name}`, memoryGovEnforce: true }));
}

/** A deterministic row for entity e, event j (amounts vary, merchants repeat sometimes). */
function rowFor(e: number, j: number): Row {
  return {
    user: `u${e}`,
    amount: ((e * 7919 + j * 104729) % 100_000) / 100,
    merchant: `m${(e * 31 + j * 17) % 5000}`,
    country: j % 2 === 0 ? 'US' : `C${e % 50}`,
  };
}

/** Loads `entities` entities and returns the bytes they retain (and a checksum of reads). */
function load(factories: OpFactory[], entities: number, events: number): { bytes: number; checksum: number; ms: number } {
  const before = heapBytes();
  const started = process.hrtime.bigint();
  const table = new Map<string, OpState[]>();
  for (let e = 0; e < entities; e++) {
    const states: OpState[] = new Array(factories.length);
    for (let i = 0; i < factories.length; i++) states[i] = factories[i].create();
    table.set(`u${e}`, states);
    for (let j = 0; j < events; j++) {
      const row = rowFor(e, j);
      const t = BASE_T + e + j * 20_000;
      for (let i = 0; i < factories.length; i++) {
        const f = factories[i];
        states[i].update(f.field === null ? undefined : row[f.field], t, row);
      }
    }
  }
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  const bytes = heapBytes() - before;
  // Read a sample so the work cannot be optimized away, and keep `table` alive until here.
  let checksum = 0;
  for (let e = 0; e < entities; e += Math.max(1, Math.floor(entities / 1000))) {
    const states = table.get(`u${e}`) as OpState[];
    checksum += JSON.stringify(states.map((s) => s.read(BASE_T + entities + events * 20_000))).length;
  }
  return { bytes, checksum, ms };
}

function main(): void {
  const entities = Number(process.argv[2] ?? ENTITIES_DEFAULT);
  const events = Number(process.argv[3] ?? EVENTS_PER_ENTITY_DEFAULT);
  console.log(`node ${process.version}, ${entities} entities x ${FEATURES.length} features, ${events} events per entity, window ${WINDOW}`);

  const all = load(compileAll(FEATURES), entities, events);
  const perEntity = all.bytes / entities;
  console.log(`table: ${(all.bytes / 2 ** 20).toFixed(1)} MiB retained, ${perEntity.toFixed(0)} B per entity, ${(perEntity / FEATURES.length).toFixed(0)} B per feature (avg), load ${(all.ms / 1000).toFixed(1)} s, checksum ${all.checksum}`);

  // Per feature: the same load with one feature; subtract the bare Map + key + array cost.
  const bare = load([], PER_FEATURE_ENTITIES, 0).bytes / PER_FEATURE_ENTITIES;
  console.log(`per feature (${PER_FEATURE_ENTITIES} entities each; Map entry + key + states array alone = ${bare.toFixed(0)} B/entity):`);
  for (const feature of FEATURES) {
    const one = load(compileAll([feature]), PER_FEATURE_ENTITIES, events);
    const b = one.bytes / PER_FEATURE_ENTITIES - bare;
    console.log(`  ${feature[0].padEnd(10)} ${b.toFixed(0).padStart(5)} B per entity`);
  }
}

main();
