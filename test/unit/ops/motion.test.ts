/** Property tests of the change-over-time ops against naive recomputation. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonValue } from '../../../src/types';
import { F64, I64, STR, expectClose, expectEq, isNum, rowOf, runOpCases, type Ev } from './harness';
import * as naive from './motion_naive';

const vals = (evs: readonly Ev[]): Ev[] => evs.filter((e) => e.match && isNum(e.row.x));

function cases(op: string, params: Record<string, unknown>, expected: (evs: readonly Ev[], now: number) => JsonValue, tol = 1e-9): void {
  test(`${op} ${JSON.stringify(params)} matches a naive recomputation`, () => {
    runOpCases({
      name: `${op}${JSON.stringify(params)}`,
      spec: { op, params },
      fields: { x: 'f64' },
      row: rowOf(F64),
      matchRate: 0.85,
      check: (v, evs, now) => expectClose(v, expected(evs, now), tol),
    });
  });
}

cases('rate_of_change', { field: 'x' }, (all) => naive.rateOfChange(vals(all)));
cases('delta_from_prev', { field: 'x' }, (all) => naive.deltaFromPrev(vals(all)));
cases('inter_arrival_stats', {}, (all) => naive.interArrival(all.filter((e) => e.match)));
cases('trend', { field: 'x' }, (all) => naive.trend(vals(all)), 1e-6);
cases('trend_residual', { field: 'x' }, (all) => naive.trendResidual(vals(all)), 1e-6);

for (const sigma of [1, 2.5]) cases('outlier_count', { field: 'x', sigma }, (all) => naive.outliers(vals(all), sigma).length);

test('value_change_count counts changes between consecutive present values', () => {
  for (const [type, gen] of [['str', STR], ['i64', (r: import('./harness').Rng) => I64(r) % 3]] as const) {
    runOpCases({
      name: `value_change_count/${type}`,
      spec: { op: 'value_change_count', params: { field: 'x' } },
      fields: { x: type },
      row: rowOf(gen, 0.2),
      check: (v, all) => expectEq(v, naive.valueChanges(all.filter((e) => e.match && e.row.x !== null))),
    });
  }
});

test('burst_count: most matches in one sub_window slot, lifetime and within the window', () => {
  for (const [sub, win] of [[100, 0], [250, 10_000], [1_000, 60_000], [10, 10_000]]) {
    runOpCases({
      name: `burst_count/${sub}/${win}`,
      spec: { op: 'burst_count', params: win === 0 ? { sub_window: `${sub}ms` } : { sub_window: `${sub}ms`, window: `${win}ms` } },
      fields: {},
      row: () => ({}),
      windowMs: win === 0 ? 10_000 : win,
      check: (v, all, now) => {
        const counts = new Map<number, number>();
        for (const e of all) {
          if (!e.match) continue;
          const s = Math.floor(e.t / sub);
          if (win !== 0 && (s + 1) * sub <= now - win) continue;
          counts.set(s, (counts.get(s) ?? 0) + 1);
        }
        return expectEq(v, Math.max(0, ...counts.values()));
      },
    });
  }
});

test('lifetime inter_arrival_stats (a slab row) answers and saves as its agg over the same events (InterArrivalAgg, which its window uses)', async () => {
  const { ValLifeState } = await import('../../../src/ops/val_window');
  const { InterArrivalAgg } = await import('../../../src/ops/motion');
  const { compile } = await import('./harness');
  const { columnState, loadColumnState } = await import('./column_state');
  const f = compile({ op: 'inter_arrival_stats', params: {} }, {});
  assert.ok(f.fixed !== null && f.fixed !== undefined, 'a slab row in the shard');
  const obj = new ValLifeState(new InterArrivalAgg());
  const row = columnState(f);
  assert.equal(expectEq(row.save() as JsonValue, obj.save() as JsonValue), null);
  for (const t of [1000, 1000, 1250, 4000, 4001]) {
    obj.update(undefined, t, {});
    row.update(undefined, t, {});
    assert.equal(expectEq(row.save() as JsonValue, obj.save() as JsonValue), null);
    assert.equal(expectEq(row.read(5000), obj.read(5000)), null);
    assert.equal(expectEq(loadColumnState(f, obj.save()).read(5000), obj.read(5000)), null);
  }
  assert.equal(expectEq(loadColumnState(f, null).read(1), null), null);
});
