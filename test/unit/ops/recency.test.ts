/** Property tests of the recency and streak ops against naive recomputation. */
import { test } from 'node:test';
import type { JsonValue } from '../../../src/types';
import { expectEq, runOpCases, type Ev } from './harness';

function cases(op: string, params: Record<string, unknown>, naive: (evs: readonly Ev[], now: number) => JsonValue): void {
  test(`${op} ${JSON.stringify(params)} matches a naive recomputation`, () => {
    for (const matchRate of [1, 0.6]) {
      runOpCases({
        name: `${op}/${matchRate}`,
        spec: { op, params },
        fields: {},
        row: () => ({}),
        matchRate,
        check: (v, evs, now) => expectEq(v, naive(evs, now)),
      });
    }
  });
}

const matches = (evs: readonly Ev[]): number[] => evs.filter((e) => e.match).map((e) => e.t);

cases('first_seen', {}, (evs) => matches(evs)[0] ?? null);
cases('last_seen', {}, (evs) => matches(evs).at(-1) ?? null);
cases('age', {}, (evs, now) => (matches(evs).length === 0 ? null : now - matches(evs)[0]));
cases('has_seen', {}, (evs) => matches(evs).length > 0);
cases('time_since', { window: 'forever' }, (evs, now) => (matches(evs).length === 0 ? null : now - (matches(evs).at(-1) as number)));
for (const n of [1, 4, 50]) {
  cases('time_since_last_n', { n }, (evs, now) => {
    const ts = matches(evs);
    return ts.length < n ? null : now - ts[ts.length - n];
  });
}
for (const w of [1_000, 60_000]) {
  cases('first_seen_in_window', { window: `${w}ms` }, (evs, now) => {
    const ts = matches(evs);
    return ts.length > 0 && now - (ts.at(-1) as number) < w;
  });
}

function runs(evs: readonly Ev[]): { cur: number; best: number; neg: number } {
  let cur = 0;
  let best = 0;
  let neg = 0;
  for (const e of evs) {
    if (e.match) {
      cur++;
      neg = 0;
      best = Math.max(best, cur);
    } else {
      cur = 0;
      neg++;
    }
  }
  return { cur, best, neg };
}
cases('streak', {}, (evs) => runs(evs).cur);
cases('max_streak', {}, (evs) => runs(evs).best);
cases('negative_streak', {}, (evs) => runs(evs).neg);
