/**
 * Naive recomputations of the change-over-time ops from a list of the events
 * that reached the op (oldest first, already filtered to the relevant ones):
 * the lifetime tests apply them to every event, the window tests to the events
 * of the window (or of a suffix, for the bucketed regime).
 */
import type { JsonValue, Value } from '../../../src/types';
import type { Ev } from './harness';

const x = (e: Ev): number => e.row.x as number;

/** (x - x_prev) / (t - t_prev) of the latest consecutive pair with t > t_prev. */
export function rateOfChange(evs: readonly Ev[]): JsonValue {
  let r: number | null = null;
  for (let i = 1; i < evs.length; i++) if (evs[i].t > evs[i - 1].t) r = (x(evs[i]) - x(evs[i - 1])) / (evs[i].t - evs[i - 1].t);
  return r;
}

export function deltaFromPrev(evs: readonly Ev[]): JsonValue {
  return evs.length < 2 ? null : x(evs[evs.length - 1]) - x(evs[evs.length - 2]);
}

/** Mean of the gaps between consecutive events. */
export function interArrival(evs: readonly Ev[]): JsonValue {
  if (evs.length < 2) return null;
  let s = 0;
  for (let i = 1; i < evs.length; i++) s += evs[i].t - evs[i - 1].t;
  return s / (evs.length - 1);
}

/** Two-pass OLS of x on t (t shifted to the first time). */
export function ols(evs: readonly Ev[]): { slope: number; mt: number; mx: number; t0: number } | null {
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

export function trend(evs: readonly Ev[]): JsonValue {
  return ols(evs)?.slope ?? null;
}

export function trendResidual(evs: readonly Ev[]): JsonValue {
  const r = ols(evs);
  if (r === null) return null;
  const last = evs[evs.length - 1];
  return x(last) - r.mx - r.slope * (last.t - r.t0 - r.mt);
}

/** The events judged outliers against the mean and sample std of all values before them (>= 5, std > 0). */
export function outliers(evs: readonly Ev[], sigma: number): Ev[] {
  const out: Ev[] = [];
  for (let i = 5; i < evs.length; i++) {
    const prior = evs.slice(0, i).map(x);
    const m = prior.reduce((a, b) => a + b, 0) / prior.length;
    const sd = Math.sqrt(prior.reduce((a, b) => a + (b - m) ** 2, 0) / (prior.length - 1));
    if (sd > 0 && Math.abs(x(evs[i]) - m) > sigma * sd) out.push(evs[i]);
  }
  return out;
}

/** Present values that differ from the previous present value. */
export function valueChanges(evs: readonly Ev[]): JsonValue {
  const xs: Value[] = evs.map((e) => e.row.x as Value);
  let c = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i] !== xs[i - 1]) c++;
  return c;
}

/** Closed form of the time-weighted average of the step function. */
export function twa(evs: readonly Ev[]): JsonValue {
  if (evs.length === 0) return null;
  const span = evs[evs.length - 1].t - evs[0].t;
  if (span === 0) return x(evs[evs.length - 1]);
  let area = 0;
  for (let i = 0; i + 1 < evs.length; i++) area += x(evs[i]) * (evs[i + 1].t - evs[i].t);
  return area / span;
}
