/**
 * Windows over a shared ring (ring_group.ts) as the ring defines them: counts,
 * sums and distinct counts over three windows equal a naive recomputation after
 * every push, with events out of order, another key's full ring evicting beside
 * it, and a restore from a snapshot in the middle.
 */
import { pushRow, readText } from '../../../harness/shard_feed';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardState } from '../../../../src/shard/state/state';
import { restoreSnapshot, SnapshotJob } from '../../../../src/shard/persist/snapshot_job';
import { DedupeLog } from '../../../../src/shard/state/dedupe_log';
import type { RegistryState } from '../../../../src/registry/model';
import { prng } from '../../../harness/prng';

const WINDOWS = { s1: 1_000, s5: 5_000, s20: 20_000 } as const;

const REG: RegistryState = {
  version: 1,
  nodes: [
    { kind: 'event', name: 'E', schema: { fields: { k: 'str', x: 'f64', c: 'str' }, optional_fields: [] } },
    { kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: Object.fromEntries(Object.entries(WINDOWS).flatMap(([n, ms]) => [
      [`n_${n}`, { op: 'count', params: { window: `${ms / 1000}s` } }],
      [`sum_${n}`, { op: 'sum', params: { field: 'x', window: `${ms / 1000}s` } }],
      [`u_${n}`, { op: 'n_unique', params: { field: 'c', window: `${ms / 1000}s` } }],
    ])) },
  ] as RegistryState['nodes'],
};

interface Ev { k: string; t: number; x: number; c: string }

/**
 * What a window holds of key k at `now`, as a ring defines it: the key's events in
 * arrival order without the leading ones at or before now - window (a late event
 * behind a newer one stays until the entries before it leave; docs/ops.md).
 */
function naive(evs: readonly Ev[], k: string, now: number): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  const mine = evs.filter((e) => e.k === k);
  for (const [n, ms] of Object.entries(WINDOWS)) {
    let from = 0;
    while (from < mine.length && mine[from].t <= now - ms) from++;
    const live = mine.slice(from);
    out[`n_${n}`] = live.length;
    // A sum over an empty window is null.
    out[`sum_${n}`] = live.length === 0 ? null : live.reduce((a, e) => a + e.x, 0);
    out[`u_${n}`] = new Set(live.map((e) => e.c)).size;
  }
  return out;
}

test('three windows over one ring read as the ring defines them after every push: late events, a full ring beside, a restore midway', () => {
  const r = prng(77);
  let s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  s.install(REG);
  const evs: Ev[] = [];
  let clock = 1_000_000;
  // Key q is slow (few events a window); key h is fast enough to fill its 64-entry ring.
  for (let i = 0; i < 1500; i++) {
    const k = r() < 0.3 ? 'q' : 'h';
    clock += k === 'q' ? Math.floor(r() * 900) : Math.floor(r() * 60);
    // One event in five is late, by up to 3 s.
    const t = r() < 0.2 ? clock - Math.floor(r() * 3_000) : clock;
    const e: Ev = { k, t, x: Math.floor(r() * 100), c: `c${Math.floor(r() * 12)}` };
    evs.push(e);
    pushRow(s, 'E', { k: e.k, x: e.x, c: e.c }, e.t, i + 1);
    if (i === 700) {
      const job = new SnapshotJob(s);
      job.step(Number.POSITIVE_INFINITY);
      const body = job.finish(new DedupeLog()).body;
      s = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
      restoreSnapshot(s, body, () => REG);
    }
    // Key q stays in the exact regime (under 64 events in 20 s): every window, after every push
    // (of either key: h's pushes move the clock past q's entries without touching q's ring).
    if (evs.some((x) => x.k === 'q')) assert.deepEqual(JSON.parse(readText(s, 'T', 'q', null, clock)), naive(evs, 'q', clock), `q after push ${i}`);
  }
});
