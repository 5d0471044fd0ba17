/**
 * Cluster checkpoints without NATS: a partition exported from shards of one node
 * (shard/persist/partition_io.ts) and imported into a node with another shard count holds
 * exactly the partition's entities as of the export, nothing of the pushes after
 * it, drops the importer's stale entities of that partition, leaves the other
 * partitions alone, and a replay of the tail on top gives the live values; the
 * object framing (cluster/checkpoint.ts) round-trips and rejects damage.
 */
import { pushRow, readText } from '../../harness/shard_feed';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardState } from '../../../src/shard/state/state';
import { exportPartition, importPartition } from '../../../src/shard/persist/partition_io';
import { frameParts, unframeParts } from '../../../src/cluster/checkpoint';
import { partitionOf, shardOf } from '../../../src/registry/key';
import type { RegistryState } from '../../../src/registry/model';

const P = 4;
const REG: RegistryState = {
  version: 1,
  nodes: [
    { kind: 'event', name: 'E', schema: { fields: { k: 'str', x: 'f64' } }, cold_after: '1m' },
    { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: { n: { op: 'count', params: {} }, s: { op: 'sum', params: { field: 'x', window: 'forever' } } } },
  ],
};
const KEYS = Array.from({ length: 200 }, (_, i) => `k${i}`);

function shards(count: number): ShardState[] {
  return Array.from({ length: count }, (_, id) => {
    const s = new ShardState({ shardId: id, shardCount: count, memoryGovEnforce: true, partitions: P });
    s.install(REG);
    return s;
  });
}

/** Applies event `lsn` (key KEYS[lsn % n]) as a partition feed would: to its shard, with its partition. */
function push(node: ShardState[], lsn: number): void {
  const k = KEYS[(lsn * 7) % KEYS.length];
  const s = node[shardOf(k, node.length)];
  pushRow(s, 'E', { k, x: lsn }, 1_000 + lsn, lsn, null, partitionOf(k, P));
}

const read = (node: ShardState[], k: string): string => readText(node[shardOf(k, node.length)], 'T', k, null, 10_000_000);

test('a partition exported from 2 shards and imported into 3 holds exactly its state at the export; the tail replays on top', () => {
  const p = partitionOf(KEYS[3], P);
  const live = shards(2);
  for (let lsn = 1; lsn <= 1_000; lsn++) push(live, lsn);
  const atCut = shards(1);
  for (let lsn = 1; lsn <= 1_000; lsn++) push(atCut, lsn);
  // A cold entity travels as its frozen buffer.
  const frozen = live.reduce((n, s) => n + s.sweepCold(10_000_000), 0);
  assert.ok(frozen > 0);
  const parts = live.map((s) => exportPartition(s, p));
  const exported = parts.reduce((n, x) => n + x.entities, 0);
  assert.equal(exported, KEYS.filter((k) => partitionOf(k, P) === p).length);
  for (let lsn = 1_001; lsn <= 1_500; lsn++) push(live, lsn); // after the export: not in it

  const next = shards(3);
  for (let lsn = 1; lsn <= 300; lsn++) push(next, lsn); // stale state of every partition
  const other = KEYS.filter((k) => partitionOf(k, P) !== p);
  const before = other.map((k) => read(next, k));
  const bodies = parts.map((x) => x.body);
  const restored = next.reduce((n, s) => n + importPartition(s, p, bodies), 0);
  assert.equal(restored, exported);
  for (const k of KEYS.filter((key) => partitionOf(key, P) === p)) assert.equal(read(next, k), read(atCut, k), `key ${k} at the cut`);
  assert.deepEqual(other.map((k) => read(next, k)), before, 'other partitions untouched');

  // Replaying the partition's tail (and, harmlessly, some of what the checkpoint already has) gives the live values.
  for (let lsn = 900; lsn <= 1_500; lsn++) {
    const k = KEYS[(lsn * 7) % KEYS.length];
    if (partitionOf(k, P) === p) push(next, lsn);
  }
  for (const k of KEYS.filter((key) => partitionOf(key, P) === p)) assert.equal(read(next, k), read(live, k), `key ${k} after the tail`);
});

test('an import into a registry whose feature changed keeps the unchanged features and starts the changed one empty', () => {
  const p = partitionOf(KEYS[0], P);
  const live = shards(1);
  for (let lsn = 1; lsn <= 400; lsn++) push(live, lsn);
  const body = exportPartition(live[0], p).body;
  const v2: RegistryState = { version: 2, nodes: [REG.nodes[0], { ...(REG.nodes[1] as object), agg: { n: { op: 'count', params: {} }, s: { op: 'sum', params: { field: 'x', window: '1h' } } } }] };
  const next = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true, partitions: P });
  next.install(v2);
  importPartition(next, p, [body]);
  const k = KEYS.find((key) => partitionOf(key, P) === p && readText(live[0], 'T', key, null, 1e7) !== '{}')!;
  const got = JSON.parse(readText(next, 'T', k, null, 1e7)) as { n: number; s: number | null };
  const want = JSON.parse(readText(live[0], 'T', k, null, 1e7)) as { n: number };
  assert.equal(got.n, want.n);
  assert.ok(got.s === null || got.s === 0, `changed feature starts empty: ${JSON.stringify(got)}`);
});

test('checkpoint object framing round-trips and rejects truncation and trailing bytes', () => {
  const parts = [new Uint8Array([1, 2, 3]), new Uint8Array(0), new Uint8Array(70_000).fill(9)];
  const body = frameParts(parts);
  assert.deepEqual(unframeParts(body).map((x) => Buffer.from(x)), parts.map((x) => Buffer.from(x)));
  assert.throws(() => unframeParts(body.subarray(0, body.length - 1)), /truncated/);
  assert.throws(() => unframeParts(Buffer.concat([body, Buffer.from([0])])), /trailing/);
  assert.throws(() => unframeParts(new Uint8Array(2)), /too short/);
});
