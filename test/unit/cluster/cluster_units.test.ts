/** Cluster mode's pure parts: ownership map, partition hashing, stream message format, flags. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assignPartitions } from '../../../src/cluster/membership';
import { decodeEvent, encodeEvent } from '../../../src/cluster/event_wire';
import { hashKey, partitionOf, partitionOfHash, shardOf } from '../../../src/registry/key';
import { ConfigError, parseServeArgs } from '../../../src/config';
import { CLUSTER_CHECKPOINT_INTERVAL_MS_DEFAULT, CLUSTER_PARTITIONS_DEFAULT, CLUSTER_PARTITIONS_MAX } from '../../../src/limits';

test('rendezvous ownership: same map from any order, every partition owned by a live node, a leaving node moves only its own partitions', () => {
  const nodes = ['a', 'b', 'c'];
  const map = assignPartitions(nodes, 1024);
  assert.deepEqual(assignPartitions(['c', 'a', 'b'], 1024), map);
  for (const o of map) assert.ok(nodes.includes(o));
  for (const n of nodes) {
    const share = map.filter((o) => o === n).length / 1024;
    assert.ok(share > 0.25 && share < 0.42, `${n} owns ${share}`);
  }
  const without = assignPartitions(['a', 'b'], 1024);
  for (let p = 0; p < 1024; p++) if (map[p] !== 'c') assert.equal(without[p], map[p], `partition ${p} moved although its owner stayed`);
  const joined = assignPartitions(['a', 'b', 'c', 'd'], 1024);
  for (let p = 0; p < 1024; p++) if (joined[p] !== 'd') assert.equal(joined[p], map[p], `partition ${p} moved between staying nodes`);
  assert.deepEqual(assignPartitions([], 4), ['', '', '', '']);
});

test('partitionOf is hashKey mixed: keys of one partition still spread over every shard', () => {
  const shards = new Set<number>();
  let n = 0;
  for (let i = 0; i < 20_000 && n < 200; i++) {
    const key = `user${i}`;
    assert.equal(partitionOf(key, 16), partitionOfHash(hashKey(key), 16));
    if (partitionOf(key, 16) !== 3) continue;
    n++;
    shards.add(shardOf(key, 2));
  }
  assert.equal(n, 200);
  assert.deepEqual([...shards].sort(), [0, 1]);
});

test('stream message: header and envelope round-trip, including newlines and non-ASCII in the envelope', () => {
  const j = '{"event":"Pay","data":{"user":"ü\\n😀","note":"a\nb"}}';
  const m = decodeEvent(encodeEvent(1700000000123, 7, 'Pay', [1, 4294967295], j));
  assert.deepEqual(m, { t: 1700000000123, v: 7, e: 'Pay', hashes: [1, 4294967295], j });
  assert.deepEqual(decodeEvent(encodeEvent(5, 1, 'E', [], '{}'))?.hashes, []);
  assert.equal(decodeEvent(new TextEncoder().encode('garbage')), null);
});

test('cluster flags: off by default; --cluster-url needs --node-id; env vars; partition bounds', () => {
  assert.equal(parseServeArgs([], {}).cluster, null);
  const c = parseServeArgs(['--cluster-url', 'nats://127.0.0.1:4222', '--node-id', 'n1'], {}).cluster!;
  assert.deepEqual(c, { url: 'nats://127.0.0.1:4222', nodeId: 'n1', partitions: CLUSTER_PARTITIONS_DEFAULT, peerHost: '127.0.0.1', peerPort: 0, checkpointIntervalMs: CLUSTER_CHECKPOINT_INTERVAL_MS_DEFAULT });
  const e = parseServeArgs(['--partitions', '8', '--peer-addr', '0.0.0.0:7070', '--checkpoint-interval', '250ms'], { SERVICE_CLUSTER_URL: 'nats://h:1', SERVICE_NODE_ID: 'x' }).cluster!;
  assert.deepEqual(e, { url: 'nats://h:1', nodeId: 'x', partitions: 8, peerHost: '0.0.0.0', peerPort: 7070, checkpointIntervalMs: 250 });
  assert.equal(parseServeArgs([], { SERVICE_CLUSTER_URL: 'nats://h:1', SERVICE_NODE_ID: 'x', SERVICE_CHECKPOINT_INTERVAL: '0' }).cluster!.checkpointIntervalMs, 0);
  assert.throws(() => parseServeArgs(['--checkpoint-interval', '5s'], {}), (err: unknown) => err instanceof ConfigError && /--checkpoint-interval needs --cluster-url/.test(err.message));
  assert.throws(() => parseServeArgs(['--cluster-url', 'nats://h:1'], {}), (err: unknown) => err instanceof ConfigError && /--node-id/.test(err.message));
  assert.throws(() => parseServeArgs(['--node-id', 'n1'], {}), ConfigError);
  assert.throws(() => parseServeArgs(['--cluster-url', 'http://h:1', '--node-id', 'n'], {}), ConfigError);
  assert.throws(() => parseServeArgs(['--cluster-url', 'nats://h:1', '--node-id', 'a b'], {}), ConfigError);
  assert.throws(() => parseServeArgs(['--cluster-url', 'nats://h:1', '--node-id', 'n', '--partitions', String(CLUSTER_PARTITIONS_MAX + 1)], {}), ConfigError);
  assert.throws(() => parseServeArgs(['--cluster-url', 'nats://h:1', '--node-id', 'n', '--partitions', '0'], {}), ConfigError);
});
