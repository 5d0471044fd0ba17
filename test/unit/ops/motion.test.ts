/** Property tests of the change-over-time ops against naive recomputation. */
import { test } from 'node:test';
import type { JsonValue } from '../../../src/types';
import { F64, I64, STR, expectClose, expectEq, isNum, rowOf, runOpCases, type Ev } from './harness';

const vals = (evs: readonly Ev[]): Ev[] => evs.filter((e) => e.match && isNum(e.row.x));
const x = (e: Ev): number => e.row.x as number;

function cases(op: string, params: Record<string, unknown>, naive: (evs: readonly Ev[], now: number) => JsonValue, tol = 1e-9): void {
  test(`${op} ${JSON.stringify(params)} matches a naive recomputation`, () => {
    runOpCases({
      name: `${op}${JSON.stringify(params)}`,
      spec: { op, params },
      fields: { x: 'f64' },
      row: rowOf(F64),
      matchRate: 0.85,
      check: (v, evs, now) => expectClose(v, naive(evs, now), tol),
    });
  });
}

cases('rate_of_change', { field: 'x' }, (all) => {
  const evs = vals(all);
  let r: number | null = null;
  for (let i = 1; i < evs.length; i++) if (evs[i].t > evs[i - 1].t) r = (x(evs[i]) - x(evs[i - 1])) / (evs[i].t - evs[i - 1].t);
  return r;
});
cases('delta_from_prev', { field: 'x' }, (all) => {
  const evs = vals(all);
  return evs.length < 2 ? null : x(evs[evs.length - 1]) - x(evs[evs.length - 2]);
});
cases('inter_arrival_stats', {}, (all) => {
  const ts = all.filter((e) => e.match).map((e) => e.t);
  if (ts.length < 2) return null;
  let s = 0;
  for (let i = 1; i < ts.length; i++) s += ts[i] - ts[i - 1];
  return s / (ts.length - 1);
});

/** Two-pass OLS of x on t (t shifted to the first time). */
function ols(evs: Ev[]): { slope: number; mt: number; mx: number; t0: number } | null {
  if (evs.length < 2) return null;
  const t0 = evs[0].t;
  const n = evs.length;
  const mt = evs.reduce((a, e) => a + (e.t - t0), 0) / n;
  const mx = evs.reduce((a, e) => a + x(e), 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const e of evs) {
    sxy += (e.t - t0 - mt) * (x(e) - mx);
    sxx += (e.t - t0 - mt) ** 2;
  }
  return sxx > 0 ? { slope: sxy / sxx, mt, mx, t0 } : null;
}
cases('trend', { field: 'x' }, (all) => ols(vals(all))?.slope ?? null, 1e-6);
cases('trend_residual', { field: 'x' }, (all) => {
  const evs = vals(all);
  const r = ols(evs);
  if (r === null) return null;
  const last = evs[evs.length - 1];
  return x(last) - r.mx - r.slope * (last.t - r.t0 - r.mt);
}, 1e-6);

for (const sigma of [1, 2.5]) {
  cases('outlier_count', { field: 'x', sigma }, (all) => {
    const evs = vals(all);
    let count = 0;
    for (let i = 5; i < evs.length; i++) {
      const prior = evs.slice(0, i).map(x);
      const m = prior.reduce((a, b) => a + b, 0) / prior.length;
      const sd = Math.sqrt(prior.reduce((a, b) => a + (b - m) ** 2, 0) / (prior.length - 1));
      if (sd > 0 && Math.abs(x(evs[i]) - m) > sigma * sd) count++;
    }
    return count;
  });
}

test('value_change_count counts changes between consecutive present values', () => {
  for (const [type, gen] of [['str', STR], ['i64', (r: import('./harness').Rng) => I64(r) % 3]] as const) {
    runOpCases({
      name: `value_change_count/${type}`,
      spec: { op: 'value_change_count', params: { field: 'x' } },
      fields: { x: type },
      row: rowOf(gen, 0.2),
      check: (v, all) => {
        const xs = all.filter((e) => e.match && e.row.x !== null).map((e) => e.row.x);
        let c = 0;
        for (let i = 1; i < xs.length; i++) if (xs[i] !== xs[i - 1]) c++;
        return expectEq(v, c);
      },
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
