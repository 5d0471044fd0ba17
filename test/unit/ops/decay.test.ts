/**
 * Property tests of the decay ops. decayed_sum / decayed_count are checked against
 * their closed forms sum(x_i 2^(-(now - t_i)/h)); ewma / ewvar / ew_zscore against a
 * straightforward replay of the documented recurrences; twa against its closed form.
 */
import { test } from 'node:test';
import type { JsonValue } from '../../../src/types';
import { F64, expectClose, isNum, rowOf, runOpCases, type Ev } from './harness';
import * as naive from './motion_naive';

const H = 5_000;
const vals = (evs: readonly Ev[]): Ev[] => evs.filter((e) => e.match && isNum(e.row.x));

function cases(op: string, expected: (evs: Ev[], now: number) => JsonValue, tol = 1e-9): void {
  test(`${op} matches its formula`, () => {
    runOpCases({
      name: op,
      spec: { op, params: { field: 'x', half_life: `${H}ms` } },
      fields: { x: 'f64' },
      row: rowOf(F64),
      matchRate: 0.9,
      check: (v, evs, now) => expectClose(v, expected(vals(evs), now), tol),
    });
  });
}

cases('decayed_sum', (evs, now) =>
  evs.length === 0 ? null : evs.reduce((a, e) => a + (e.row.x as number) * Math.pow(2, -(now - e.t) / H), 0),
  1e-7,
);

test('decayed_count matches sum 2^(-(now - t_i)/h) and fades while idle', () => {
  runOpCases({
    name: 'decayed_count',
    spec: { op: 'decayed_count', params: { half_life: '5s' } },
    fields: {},
    row: () => ({}),
    matchRate: 0.7,
    check: (v, evs, now) =>
      expectClose(v, evs.filter((e) => e.match).reduce((a, e) => a + Math.pow(2, -(now - e.t) / H), 0), 1e-9),
  });
});

function ew(evs: Ev[]): { mean: number; s: number; last: number } | null {
  if (evs.length === 0) return null;
  let mean = evs[0].row.x as number;
  let s = 0;
  let tLast = evs[0].t;
  for (const e of evs.slice(1)) {
    const x = e.row.x as number;
    const dt = e.t - tLast;
    const a = dt > 0 ? 1 - Math.exp((-Math.LN2 / H) * dt) : 0.5;
    const d = x - mean;
    mean = mean + a * d;
    s = (1 - a) * (s + a * d * d);
    if (dt > 0) tLast = e.t;
  }
  return { mean, s, last: evs[evs.length - 1].row.x as number };
}

cases('ewma', (evs) => ew(evs)?.mean ?? null, 1e-7);
cases('ema', (evs) => ew(evs)?.mean ?? null, 1e-7);
cases('ewvar', (evs) => ew(evs)?.s ?? null, 1e-6);
cases('ew_zscore', (evs) => {
  const r = ew(evs);
  return r === null || !(r.s > 0) ? null : (r.last - r.mean) / Math.sqrt(r.s);
}, 1e-6);

test('twa matches the closed form of the step function', () => {
  runOpCases({
    name: 'twa',
    spec: { op: 'twa', params: { field: 'x' } },
    fields: { x: 'f64' },
    row: rowOf(F64),
    check: (v, all) => expectClose(v, naive.twa(vals(all)), 1e-7),
  });
});
