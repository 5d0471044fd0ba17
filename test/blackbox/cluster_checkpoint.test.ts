/**
 * Cluster checkpoints (docs/cluster.md "Checkpoints") against a real nats-server
 * and three real nodes (2 shards each) checkpointing every 250 ms: after the
 * checkpoints cover a first load, a tail is pushed and a node is killed -9; each
 * survivor that takes one of its partitions restores the partition's checkpoint
 * and replays exactly the copies after the checkpoint's sequence (asserted from
 * the `cluster.partition_replayed` line against the acked sequences), and every
 * acked push is counted once. The killed node then restarts empty, takes its
 * share back from the checkpoints the survivors wrote, and agrees too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { get, post, startServer, type TestServer } from '../harness/server';
import { useCluster, type TestNats } from '../harness/nats';
import { partitionOf } from '../../src/registry/key';

const PARTITIONS = 8;
const NODES = [
  { kind: 'event', name: 'Pay', schema: { fields: { id: 'str', user: 'str', amount: 'f64' } }, dedupe_key: 'id', dedupe_window: '1h' },
  { kind: 'table', name: 'ByUser', upstreams: ['Pay'], key: ['user'], agg: { n: { op: 'count', params: {} } } },
];
const USERS = Array.from({ length: 40 }, (_, i) => `u${i}`);

let nats: TestNats;
const nodes: Array<TestServer | null> = [null, null, null];
const expected = new Map<string, number>();
/** Stream sequences of the acked pushes, per partition (each push has one copy: its user's partition). */
const seqs: number[][] = Array.from({ length: PARTITIONS }, () => []);
let nextId = 0;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const live = (): TestServer[] => nodes.filter((n): n is TestServer => n !== null);

function startNode(i: number): Promise<TestServer> {
  return startServer({
    memoryOnly: true, shards: 2, extraBound: 1,
    args: ['--cluster-url', nats.url, '--node-id', `node${i}`, '--partitions', String(PARTITIONS), '--checkpoint-interval', '250ms'],
  });
}

async function tryPost(base: string, path: string, body: unknown): Promise<{ status: number; json: any } | null> {
  try { return await post(base, path, body); } catch { return null; }
}

/** One push, retried with the same dedupe id on other nodes until acked. */
async function pushOne(start: number): Promise<void> {
  const id = `p${nextId++}`;
  const user = USERS[(nextId * 7) % USERS.length];
  for (let attempt = 0; attempt < 200; attempt++) {
    const t = live();
    const r = await tryPost(t[(start + attempt) % t.length].base, '/push', { event: 'Pay', data: { id, user, amount: 1 } });
    if (r !== null && r.status === 200) {
      expected.set(user, (expected.get(user) ?? 0) + 1);
      // A retry answered as a replay carries the original sequence: record each sequence once.
      const list = seqs[partitionOf(user, PARTITIONS)];
      if (!list.includes(r.json.ack_lsn)) list.push(r.json.ack_lsn);
      return;
    }
    await sleep(50);
  }
  throw new Error(`push ${id} was never acked`);
}

async function load(count: number, workers: number): Promise<void> {
  await Promise.all(Array.from({ length: workers }, async (_, w) => {
    for (let k = 0; k < count / workers; k++) await pushOne(w + k);
  }));
}

async function converge(servers: TestServer[], timeoutMs: number): Promise<void> {
  const requests = USERS.map((u) => ({ table: 'ByUser', key: u }));
  const t0 = Date.now();
  let why = 'never checked';
  while (Date.now() - t0 < timeoutMs) {
    why = '';
    for (const s of servers) {
      const r = await tryPost(s.base, '/batch_get', { requests });
      if (r === null || r.status !== 200) { why = `${s.base}: status ${r?.status}`; break; }
      const bad = USERS.findIndex((u, i) => r.json.results[i]?.error !== undefined || (r.json.results[i]?.n ?? 0) !== (expected.get(u) ?? 0));
      if (bad >= 0) { why = `${s.base} ${USERS[bad]}: ${JSON.stringify(r.json.results[bad])} want n=${expected.get(USERS[bad]) ?? 0}`; break; }
    }
    if (why === '') return;
    await sleep(100);
  }
  assert.fail(`nodes did not agree with the acked pushes within ${timeoutMs} ms: ${why}`);
}

type Line = Record<string, any>;
const linesOf = (servers: TestServer[], kind: string, since = 0): Line[] =>
  servers.flatMap((s) => s.logs.filter((l) => l.kind === kind && (l.time as number) >= since));

/** Highest checkpoint sequence written for partition p by any of `servers`. */
const checkpointed = (servers: TestServer[], p: number): number =>
  Math.max(0, ...linesOf(servers, 'cluster.checkpoint_written').filter((l) => l.partition === p).map((l) => l.seq as number));

/** Waits for one partition_replayed line per partition `owned` asks for, on `servers`, since `t`. */
async function takeovers(servers: TestServer[], since: number, count: number): Promise<Line[]> {
  const t0 = Date.now();
  for (;;) {
    const byPartition = new Map<number, Line>();
    for (const l of linesOf(servers, 'cluster.partition_replayed', since)) byPartition.set(l.partition, l);
    if (byPartition.size >= count) return [...byPartition.values()];
    assert.ok(Date.now() - t0 < 20_000, `only ${byPartition.size} of ${count} partitions taken over: ${JSON.stringify([...byPartition.values()])}`);
    await sleep(100);
  }
}

/** The takeover report must say: restored at the checkpoint, replayed exactly the copies after it. */
function assertTail(l: Line, minRestored: number): void {
  const p = l.partition as number;
  const all = seqs[p];
  const tail = all.filter((s) => s > l.restored_seq && s <= l.target).length;
  assert.ok(l.restored_seq >= minRestored, `partition ${p}: restored checkpoint seq ${l.restored_seq}, want >= ${minRestored}`);
  assert.equal(l.replayed, tail, `partition ${p}: replayed ${l.replayed} copies, the tail after seq ${l.restored_seq} has ${tail} (whole partition: ${all.length})`);
  if (minRestored > 0) assert.ok(l.replayed < all.length, `partition ${p}: replayed the whole stream`);
}

useCluster(nodes, startNode, (n) => { nats = n; });

test('kill -9 after checkpoints: new owners restore the checkpoint and replay only the tail, exactly once; the restarted node restores too', { timeout: 60_000 }, async () => {
  const reg = await post(nodes[0]!.base, '/register', { nodes: NODES });
  assert.equal(reg.status, 200, JSON.stringify(reg.json));
  for (const n of live()) {
    const t0 = Date.now();
    while ((await get(n.base, '/registry')).json.registry_version !== reg.json.registry_version) {
      assert.ok(Date.now() - t0 < 10_000, 'registry did not reach every node');
      await sleep(50);
    }
  }
  await load(400, 4);
  await converge(live(), 15_000);

  // Checkpoints cover the whole first load (every partition's last acked sequence).
  const covered = seqs.map((list) => Math.max(0, ...list));
  const t0 = Date.now();
  while (!covered.every((seq, p) => checkpointed(live(), p) >= seq)) {
    assert.ok(Date.now() - t0 < 15_000, `checkpoints do not cover the load: ${covered.map((s, p) => `${p}:${checkpointed(live(), p)}/${s}`).join(' ')}`);
    await sleep(100);
  }

  // The tail, then the crash.
  await load(40, 2);
  const victim = nodes[1]!;
  const owned = [...victim.logs].reverse().find((l) => l.kind === 'cluster.partitions_assigned')!.owned as number;
  assert.ok(owned > 0, 'the victim owns partitions');
  const killedAt = Date.now();
  await victim.kill9();
  nodes[1] = null;
  const reports = await takeovers(live(), killedAt, owned);
  for (const l of reports) assertTail(l, covered[l.partition]);
  const replayed = reports.reduce((n, l) => n + (l.replayed as number), 0);
  console.log(`# takeover of ${owned} partitions from checkpoints: replayed ${replayed} copies; ${reports.map((l) => `p${l.partition} seq ${l.restored_seq} +${l.replayed} in ${l.ms} ms`).join(', ')}`);
  await converge(live(), 15_000);

  // Restart empty: it takes its share back from the survivors' (or its own) checkpoints.
  const restartedAt = Date.now();
  nodes[1] = await startNode(1);
  const back = await takeovers([nodes[1]!], restartedAt, owned);
  for (const l of back) assertTail(l, covered[l.partition]);
  await converge(live(), 15_000);
});
