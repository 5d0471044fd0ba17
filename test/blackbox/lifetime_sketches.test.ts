/**
 * Lifetime sketches (n_unique, quantile, top_k, entropy without a window) through
 * the real server: entities below, at and past the 8 values kept as slab cells
 * (src/shard/columns/exact_column.ts) read the same after a WAL replay (kill -9), after a
 * clean shutdown's snapshot, and after a cold freeze and thaw, over 2 shards.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { post, startServer, tempDataDir, type TestServer } from '../harness/server';
import { scrape } from '../harness/prom';
import { LIFE_EXACT_VALUES_MAX } from '../../src/limits';

const NODES = [
  { kind: 'event', name: 'Tx', schema: { fields: { user: 'str', amount: 'f64', merchant: 'str' }, optional_fields: ['merchant'] }, cold_after: '1s' },
  {
    kind: 'table', name: 'Users', upstreams: ['Tx'], key: ['user'],
    agg: {
      merchants: { op: 'n_unique', params: { field: 'merchant' } },
      amounts: { op: 'n_unique', params: { field: 'amount', window: 'forever' } },
      p90: { op: 'quantile', params: { field: 'amount', q: 0.9 } },
      top: { op: 'top_k', params: { field: 'merchant', k: 3 } },
      mix: { op: 'entropy', params: { field: 'merchant' } },
      n: { op: 'count', params: {} },
    },
  },
];

// User i gets i events: 0 .. 2 x the values kept exactly, so every kind of slot is there.
const USERS = Array.from({ length: 2 * LIFE_EXACT_VALUES_MAX + 3 }, (_, i) => `u${i}`);

async function pushAll(srv: TestServer, round: number): Promise<void> {
  for (let i = 0; i < USERS.length; i++) {
    for (let j = 0; j < i; j++) {
      const data: Record<string, unknown> = { user: USERS[i], amount: ((i * 31 + j * 17 + round) % 23) * 1.25 };
      if ((i + j) % 5 !== 0) data.merchant = `m${(i * j + round) % 6}`;
      const r = await post(srv.base, '/push', { event: 'Tx', data });
      assert.equal(r.status, 200, r.text);
    }
  }
}

async function rows(srv: TestServer): Promise<unknown[]> {
  const r = await post(srv.base, '/batch_get', { requests: USERS.map((key) => ({ table: 'Users', key })) });
  assert.equal(r.status, 200, r.text);
  return r.json.results as unknown[];
}

test('lifetime sketches kept as values read the same after a WAL replay, a snapshot and a cold thaw', async () => {
  const dataDir = tempDataDir();
  const args = ['--snapshot-interval', '0'];
  let srv = await startServer({ dataDir, shards: 2, admin: true, args });
  try {
    assert.equal((await post(srv.base, '/register', { nodes: NODES })).status, 200);
    await pushAll(srv, 0);
    const want = await rows(srv);
    const u10 = want[10] as { n: number; merchants: number; top: unknown[] };
    assert.equal(u10.n, 10);
    assert.ok(u10.merchants > 0 && u10.top.length > 0, JSON.stringify(u10));

    await srv.kill9();
    srv = await startServer({ dataDir, shards: 2, admin: true, args });
    assert.deepEqual(await rows(srv), want, 'replayed from the WAL');

    await pushAll(srv, 1);
    const want2 = await rows(srv);
    assert.equal(await srv.stop(), 0, 'a clean shutdown writes a snapshot');
    srv = await startServer({ dataDir, shards: 2, admin: true, args });
    assert.deepEqual(await rows(srv), want2, 'restored from the snapshot');

    // Idle past cold_after: the sweep freezes every entity; the reads thaw them.
    const deadline = Date.now() + 15_000;
    let cold = 0;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      const fam = (await scrape(srv.adminBase!)).get('streamfeat_cold_entities');
      cold = fam === undefined ? 0 : fam.samples.filter((x) => x.labels.table === 'Users').reduce((a, x) => a + x.value, 0);
      if (cold >= USERS.length - 1) break;
    }
    assert.ok(cold >= USERS.length - 1, `entities went cold (${cold})`);
    assert.deepEqual(await rows(srv), want2, 'thawed from the cold store');
  } finally {
    await srv.kill9();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
