/**
 * OpState.emptyAt (shard/state/state.ts drops an idle entity whose every state says it):
 * for every op whose states implement it, a state that says "empty at t" must be
 * indistinguishable from a fresh state from t on: every later read, and every
 * later update followed by reads, gives the same values. Also: a state with an
 * event still inside its window is never empty, and lifetime forms never are.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OP_DEFS } from '../../../src/ops/defs';
import type { OpFactory, OpState } from '../../../src/ops/op';
import type { FieldMap, Row } from '../../../src/types';
import { compile, Rng } from './harness';
import { columnState } from './column_state';

const FIELDS: FieldMap = { x: 'f64', s: 'str', lat: 'f64', lon: 'f64', b: 'bool', ts: 'i64' };
const WINDOW_MS = 10_000;
/** Parameter sets tried in order until one compiles (ops differ in what they need). */
const CANDIDATES: Array<Record<string, unknown>> = [
  { field: 'x' }, { field: 's' }, { field: 'x', n: 3 }, { field: 's', n: 3 }, { field: 'x', k: 3 }, { field: 's', k: 3 },
  { field: 'x', q: 0.5 }, { sub_window: '1s' }, { field: 'x', sigma: 1 }, { lat_field: 'lat', lon_field: 'lon' }, { field: 'x', edges: [10, 50, 90] },
  { field: 's', capacity: 100, fpr: 0.01 }, {}, { field: 'b' }, { field: 'x', half_life: '5s' },
];

function windowed(op: string): OpFactory | null {
  for (const c of CANDIDATES) {
    try {
      return compile({ op, params: { ...c, window: '10s' } }, FIELDS);
    } catch { /* try the next parameter set */ }
  }
  return null;
}

function row(rng: Rng): Row {
  return { x: rng.int(0, 100), s: rng.pick(['a', 'b', 'c', 'd']), lat: rng.int(-80, 80), lon: rng.int(-170, 170), b: rng.chance(0.5), ts: rng.int(0, 1e6) };
}

function drive(f: OpFactory, st: OpState, r: Row, t: number, match: boolean): void {
  if (match) st.update(f.field === null ? undefined : r[f.field], t, r);
  else if (f.wantsMiss) st.miss(t);
}

test('a state empty at t behaves exactly as a fresh one from t on (every windowed op that implements emptyAt)', () => {
  let covered = 0;
  for (const def of OP_DEFS) {
    if (def.window === 'lifetime' || def.window === 'none') continue;
    const f = windowed(def.name);
    if (f === null || columnState(f).emptyAt === undefined) continue;
    covered++;
    for (let seed = 1; seed <= 12; seed++) {
      const rng = new Rng(seed * 7919 + covered);
      const st: OpState = columnState(f);
      let t = 1_000_000;
      // Bursts (more than a ring's worth in one window: buckets) or a few events.
      const n = rng.chance(0.5) ? rng.int(1, 8) : rng.int(70, 400);
      for (let i = 0; i < n; i++) drive(f, st, row(rng), (t += rng.int(0, 60)), rng.chance(0.8));
      // A state that reads differently from a fresh one is not empty.
      if (JSON.stringify(st.read(t)) !== JSON.stringify(columnState(f).read(t))) assert.equal(st.emptyAt!(t), false, `${def.name}: an event at t is still in the window`);
      // Find the first time it reports empty; it must do so within window + one bucket.
      let at = t;
      while (!st.emptyAt!(at)) at += 50;
      assert.ok(at <= t + WINDOW_MS * 1.2, `${def.name} seed ${seed}: empty only at +${at - t} ms`);
      assert.equal(st.emptyAt!(at + 123_456), true, `${def.name}: stays empty`);
      const fresh: OpState = columnState(f);
      const later = [at, at + 1, at + 5_000, at + 60_000];
      for (const q of later) assert.deepEqual(st.read(q), fresh.read(q), `${def.name} seed ${seed}: read at +${q - at}`);
      let u = at + rng.int(0, 3_000);
      for (let i = 0; i < 150; i++) {
        const r = row(rng);
        const m = rng.chance(0.8);
        u += rng.int(0, 200);
        drive(f, st, r, u, m);
        drive(f, fresh, r, u, m);
        const q = u + rng.int(0, 12_000);
        assert.deepEqual(st.read(q), fresh.read(q), `${def.name} seed ${seed}: after ${i + 1} updates, read at +${q - u}`);
      }
    }
  }
  console.log(`emptyAt: ${covered} windowed ops covered`);
  assert.ok(covered >= 15, `emptyAt covers the windowed ops (${covered})`);
});

test('lifetime states never report empty', () => {
  for (const op of ['count', 'sum', 'max', 'n_unique']) {
    const f = compile({ op, params: op === 'count' ? {} : { field: 'x', window: 'forever' } }, FIELDS);
    const st = columnState(f);
    st.update(op === 'count' ? undefined : 5, 1000, { x: 5 });
    assert.ok(st.emptyAt === undefined || !st.emptyAt(1e12), op);
  }
});
