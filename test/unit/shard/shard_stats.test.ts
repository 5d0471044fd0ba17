/**
 * A table's state-bytes estimate (shard_stats.ts estimateTableBytes, in every
 * once-a-second STATS item): each call serializes at most
 * TABLE_MEMORY_SAMPLES_PER_CALL entities (TABLE_MEMORY_SAMPLE_ENTITIES on the
 * table's first call), walking round the slots, so it keeps the shard busy for a
 * bounded time and, call after call, reaches entities past the first slots.
 */
import { pushRow } from '../../harness/shard_feed';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serialize } from 'node:v8';
import { ShardState } from '../../../src/shard/state/state';
import { estimateTableBytes, tableStats } from '../../../src/shard/shard_stats';
import type { RegistryState } from '../../../src/registry/model';
import { TABLE_MEMORY_SAMPLE_ENTITIES, TABLE_MEMORY_SAMPLES_PER_CALL } from '../../../src/limits';

const REG: RegistryState = {
  version: 1,
  nodes: [
    { kind: 'event', name: 'E', schema: { fields: { k: 'str', v: 'f64' }, optional_fields: [] } },
    { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: { vals: { op: 'last_n', params: { field: 'v', n: 50 } } } },
  ] as RegistryState['nodes'],
};

test('each call samples a bounded number of entities, round the slots, and the estimate follows what it sampled', () => {
  const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  state.install(REG);
  const t0 = 1_700_000_000_000;
  let lsn = 0;
  // 40 small entities first (one value each), then 40 large ones (50 values each).
  for (let e = 0; e < 40; e++) pushRow(state, 'E', { k: `small${e}`, v: e }, t0, ++lsn);
  for (let e = 0; e < 40; e++) for (let i = 0; i < 50; i++) pushRow(state, 'E', { k: `large${e}`, v: i + 0.5 }, t0 + i, ++lsn);
  const ts = state.tableByName('T')!;
  const cols = ts.cols;
  const sampled: number[] = [];
  const save = cols.save.bind(cols);
  cols.save = (slot: number) => { sampled.push(slot); return save(slot); };
  const size = (slot: number): number => serialize(save(slot)).length + cols.index.keyBytes(slot) + 16;

  const first = estimateTableBytes(ts);
  assert.equal(sampled.length, TABLE_MEMORY_SAMPLE_ENTITIES, 'a first call fills the samples');
  const mean = (slots: number[]): number => slots.reduce((s, slot) => s + size(slot), 0) / slots.length;
  assert.equal(first, Math.round(mean(sampled) * 80));
  const small = Math.max(...sampled.map(size));

  let calls = 0;
  let last = first;
  while (sampled.length < 80 + TABLE_MEMORY_SAMPLE_ENTITIES) {
    const before = sampled.length;
    last = tableStats(state)[0].bytes;
    calls++;
    assert.ok(sampled.length - before <= TABLE_MEMORY_SAMPLES_PER_CALL, 'bounded work per call');
  }
  assert.equal(new Set(sampled).size, 80, 'every live entity sampled once the cursor went round');
  assert.ok(calls >= (80 - TABLE_MEMORY_SAMPLE_ENTITIES) / TABLE_MEMORY_SAMPLES_PER_CALL);
  // The ring now holds the last 16 sampled: the walk wrapped round past the 40 large ones into the small ones again.
  const ring = sampled.slice(-TABLE_MEMORY_SAMPLE_ENTITIES);
  assert.equal(last, Math.round(mean(ring) * 80));
  assert.ok(Math.max(...sampled.slice(TABLE_MEMORY_SAMPLE_ENTITIES, 80).map(size)) > small * 5, 'large entities were reached');
});

test('a table with fewer live entities than a call wants samples each once per call', () => {
  const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  state.install(REG);
  pushRow(state, 'E', { k: 'only', v: 1 }, 1_700_000_000_000, 1);
  const ts = state.tableByName('T')!;
  let saves = 0;
  const save = ts.cols.save.bind(ts.cols);
  ts.cols.save = (slot: number) => { saves++; return save(slot); };
  const a = estimateTableBytes(ts);
  assert.equal(saves, 1);
  assert.equal(estimateTableBytes(ts), a);
  assert.equal(saves, 2);
});
