/**
 * The longest pushes while one table grows to N entities, in process: every push
 * makes a new entity, so the table's arrays double (columns, ring pools, the key
 * arena) and its key and intern tables resize on the way (bench/DECISIONS.md
 * "GC, memory and growth"). Pushes go through ShardState.apply as a shard applies them
 * (WAL and transport aside), one at a time, each timed.
 *
 * Table (12 features over one event): bench/memory.ts's ten (count, sum, mean,
 * min, max, std, n_unique, quantile, top_k over 5 minutes, last_n 5), a 1-hour
 * count and a lifetime sum; merchant takes 5,000 values, country 50.
 *
 * Prints the push time percentiles after a warm-up (the median is the baseline a
 * growth step stands out from), the slowest pushes with the entity count each happened at
 * (a doubling happens at a power of two), and, when the debug timeline is on
 * (STREAMFEAT_DEBUG_TIMELINE=<dir>), the longest growth steps it recorded. Then the
 * same for the cold store's index (key_index.ts): N keys inserted one by one, as a
 * cold sweep freezing that many entities inserts them.
 *
 *   node dist/bench/growth.js [entities]    (default 2,100,000: past the doubling at 2^21)
 */
import { pushRow } from '../test/harness/shard_feed';
import { readFileSync } from 'node:fs';
import { ShardState } from '../src/shard/state/state';
import { hashKey, KeyIndex } from '../src/shard/cold/key_index';
import { FEATURES, registry } from './memory';
import { flushTimeline, startTimeline, TIMELINE_ON, timelineFile } from '../src/timeline';

const ENTITIES_DEFAULT = 2_100_000;
const SLOWEST = 12;
/** Pushes left out of the ranking and percentiles: the first ones run while V8 still compiles the path. */
const WARMUP = 16_384;
const BASE_T = 1_700_000_000_000;

/** bench/memory.ts's table (the same event and 10 windowed features) plus an hour's count and a lifetime sum. */
const REGISTRY = registry([
  ...FEATURES,
  ['c1h', { op: 'count', params: { window: '1h' } }],
  ['total', { op: 'sum', params: { field: 'amount', window: 'forever' } }],
]);

function main(): void {
  const n = Math.max(2 * WARMUP, Number(process.argv[2] ?? ENTITIES_DEFAULT));
  startTimeline('growth');
  const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  state.install(REGISTRY);
  const us = new Float64Array(n);
  const started = performance.now();
  for (let e = 0; e < n; e++) {
    const row = { user: `u${e}`, amount: (e % 1000) / 10, merchant: `m${e % 5000}`, country: `C${e % 50}` };
    const t0 = performance.now();
    pushRow(state, 'Tx', row, BASE_T + Math.floor(e / 100), e + 1);
    us[e] = (performance.now() - t0) * 1000;
  }
  const totalS = (performance.now() - started) / 1000;
  const order = Array.from({ length: n - WARMUP }, (_, i) => i + WARMUP).sort((a, b) => us[b] - us[a]);
  const sorted = us.slice(WARMUP).sort();
  const m = sorted.length;
  const at = (q: number): string => sorted[Math.min(m - 1, Math.floor(q * m))].toFixed(1);
  console.log(`node ${process.version}, ${n.toLocaleString('en-US')} pushes, each a new entity of one 12-feature table, through ShardState.apply (${totalS.toFixed(1)} s)`);
  console.log(`push µs after the first ${WARMUP.toLocaleString('en-US')}: p50 ${at(0.5)}  p99 ${at(0.99)}  p99.99 ${at(0.9999)}  max ${sorted[m - 1].toFixed(0)}`);
  console.log(`slowest ${SLOWEST} (ms @ entities before the push): ${order.slice(0, SLOWEST).map((i) => `${(us[i] / 1000).toFixed(1)} @ ${i}`).join(', ')}`);
  coldIndex(n);
  if (!TIMELINE_ON) {
    console.log('(growth steps: run with STREAMFEAT_DEBUG_TIMELINE=<dir> to list them)');
    return;
  }
  flushTimeline();
  const steps = new Map<string, { count: number; maxMs: number; at: number }>();
  for (const line of readFileSync(timelineFile(), 'utf8').split('\n')) {
    const [, dur, kind, a] = line.split(' ');
    if (kind === undefined || !/grow|resize|rehash/.test(kind)) continue;
    const s = steps.get(kind) ?? { count: 0, maxMs: 0, at: 0 };
    s.count++;
    if (Number(dur) > s.maxMs) { s.maxMs = Number(dur); s.at = Number(a); }
    steps.set(kind, s);
  }
  console.log('growth steps (timeline): ' + [...steps].map(([k, s]) => `${k} ${s.count}x, longest ${s.maxMs.toFixed(2)} ms (to ${s.at})`).join('; '));
}

/** The slowest of `n` inserts into a cold store's index (the disk locations are made up: nothing is read). */
function coldIndex(n: number): void {
  const idx = new KeyIndex();
  const us = new Float64Array(n);
  for (let e = 0; e < n; e++) {
    hashKey(`u${e}`);
    const t0 = performance.now();
    idx.insert(1 + (e >>> 16), e & 0xffff, 100);
    us[e] = (performance.now() - t0) * 1000;
  }
  const order = Array.from({ length: n - WARMUP }, (_, i) => i + WARMUP).sort((a, b) => us[b] - us[a]);
  console.log(`cold index, ${n.toLocaleString('en-US')} inserts: slowest ${SLOWEST} (ms @ keys before the insert): ${order.slice(0, SLOWEST).map((i) => `${(us[i] / 1000).toFixed(1)} @ ${i}`).join(', ')}`);
}

main();
