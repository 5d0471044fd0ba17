/**
 * Property tests of the core ops (count, sum, mean, min, max, var, std,
 * z_score, ratio, rate, velocity), windowed and lifetime, against naive
 * recomputation from the raw events.
 */
import { test } from 'node:test';
import type { JsonValue, Value } from '../../../src/types';
import {
  F64,
  I64,
  STR,
  close,
  expectClose,
  expectEq,
  isNum,
  moments,
  rowOf,
  runOpCases,
  windowCheck,
  type Ev,
  type WindowSpec,
} from './harness';

const W = 10_000;
const NUM_BUCKETS = 128;
const RING = 64;

type Agg = (xs: number[], evs: readonly Ev[]) => JsonValue;

const xsOf = (evs: readonly Ev[]): number[] => evs.map((e) => e.row.x as number);

const sum: Agg = (xs) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0));
const mean: Agg = (xs) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
const min: Agg = (xs) => (xs.length === 0 ? null : xs.reduce((a, b) => (b < a ? b : a)));
const max: Agg = (xs) => (xs.length === 0 ? null : xs.reduce((a, b) => (b > a ? b : a)));
const variance: Agg = (xs) => (xs.length < 2 ? null : moments(xs).m2 / (xs.length - 1));
const std: Agg = (xs) => (xs.length < 2 ? null : Math.sqrt(moments(xs).m2 / (xs.length - 1)));
const z: Agg = (xs) => {
  if (xs.length < 2) return null;
  const m = moments(xs);
  const v = m.m2 / (m.n - 1);
  return v > 0 ? (xs[xs.length - 1] - m.mean) / Math.sqrt(v) : null;
};

const valueEv = (e: Ev): boolean => e.match && isNum(e.row.x);

function numWindow(windowMs: number, agg: Agg, relevant: (e: Ev) => boolean = valueEv, tol = 1e-9): WindowSpec {
  return {
    windowMs,
    buckets: NUM_BUCKETS,
    ringMax: RING,
    relevant,
    agg: (evs) => agg(xsOf(evs), evs),
    eqExact: (a, b) => close(a, b, 0),
    eqBucketed: (a, b) => close(a, b, tol, 1e6),
  };
}

function windowed(op: string, agg: Agg, gen: (rng: import('./harness').Rng) => Value = F64, extra: Record<string, unknown> = {}, tol = 1e-9): void {
  for (const windowMs of [W, 1_000, 3_600_000]) {
    const spec = numWindow(windowMs, agg, valueEv, tol);
    test(`${op} window=${windowMs}ms matches a naive recomputation (exact / within one bucket)`, () => {
      runOpCases({
        name: `${op}/${windowMs}`,
        spec: { op, params: { field: 'x', window: `${windowMs}ms`, ...extra } },
        fields: { x: gen === I64 ? 'i64' : 'f64' },
        row: rowOf(gen),
        windowMs,
        matchRate: 0.9,
        check: (v, evs, now) => windowCheck(spec, v, evs, now),
      });
    });
  }
  test(`${op} window=forever matches a naive recomputation`, () => {
    runOpCases({
      name: `${op}/forever`,
      spec: { op, params: { field: 'x', window: 'forever', ...extra } },
      fields: { x: 'f64' },
      row: rowOf(gen),
      matchRate: 0.9,
      check: (v, evs) => {
        const rel = evs.filter(valueEv);
        return expectClose(v, agg(xsOf(rel), rel), 1e-9);
      },
    });
  });
}

windowed('sum', sum);
windowed('sum', sum, I64);
windowed('mean', mean);
windowed('avg', mean, I64);
windowed('min', min);
windowed('max', max);
windowed('max', max, I64);
windowed('var', variance);
windowed('variance', variance, I64);
windowed('std', std);
windowed('stddev', std);
windowed('z_score', z, F64, {}, 1e-7);

test('count without field counts every matching event; with field only present values', () => {
  for (const withField of [false, true]) {
    for (const windowMs of [W, 500]) {
      const relevant = (e: Ev): boolean => e.match && (!withField || (e.row.x !== null && e.row.x !== undefined));
      const spec: WindowSpec = { ...numWindow(windowMs, () => null, relevant), agg: (evs) => evs.length };
      runOpCases({
        name: `count/${withField}/${windowMs}`,
        spec: { op: 'count', params: withField ? { field: 'x', window: `${windowMs}ms` } : { window: `${windowMs}ms` } },
        fields: { x: 'str' },
        row: rowOf(STR, 0.3),
        windowMs,
        matchRate: 0.8,
        check: (v, evs, now) => windowCheck(spec, v, evs, now),
      });
    }
    runOpCases({
      name: `count/${withField}/lifetime`,
      spec: { op: 'count', params: withField ? { field: 'x' } : {} },
      fields: { x: 'str' },
      row: rowOf(STR, 0.3),
      matchRate: 0.8,
      check: (v, evs) => expectEq(v, evs.filter((e) => e.match && (!withField || e.row.x !== null)).length),
    });
  }
});

test('ratio = matching / all events reaching the feature, windowed and lifetime', () => {
  const relevant = (_e: Ev): boolean => true;
  const agg = (evs: readonly Ev[]): JsonValue => (evs.length === 0 ? null : evs.filter((e) => e.match).length / evs.length);
  for (const windowMs of [W, 800]) {
    const spec: WindowSpec = { ...numWindow(windowMs, () => null, relevant), agg };
    runOpCases({
      name: `ratio/${windowMs}`,
      spec: { op: 'ratio', params: { window: `${windowMs}ms` } },
      fields: {},
      row: () => ({}),
      windowMs,
      matchRate: 0.4,
      check: (v, evs, now) => windowCheck(spec, v, evs, now),
    });
  }
  runOpCases({
    name: 'ratio/lifetime',
    spec: { op: 'ratio' },
    fields: {},
    row: () => ({}),
    matchRate: 0.4,
    check: (v, evs) => expectClose(v, agg(evs)),
  });
});

test('rate = events per second and velocity = field sum per second over the window', () => {
  for (const windowMs of [W, 60_000]) {
    const rate: WindowSpec = { ...numWindow(windowMs, () => null, (e) => e.match), agg: (evs) => evs.length / (windowMs / 1000) };
    runOpCases({
      name: `rate/${windowMs}`,
      spec: { op: 'rate', params: { window: `${windowMs}ms` } },
      fields: {},
      row: () => ({}),
      windowMs,
      matchRate: 0.7,
      check: (v, evs, now) => windowCheck(rate, v, evs, now),
    });
    const vel = numWindow(windowMs, (xs) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / (windowMs / 1000)));
    runOpCases({
      name: `velocity/${windowMs}`,
      spec: { op: 'velocity', params: { field: 'x', window: `${windowMs}ms` } },
      fields: { x: 'f64' },
      row: rowOf(F64),
      windowMs,
      check: (v, evs, now) => windowCheck(vel, v, evs, now),
    });
  }
});

test('min/max over strings (lexicographic) and datetimes, windowed and lifetime', () => {
  for (const op of ['min', 'max'] as const) {
    const pick = (evs: readonly Ev[]): JsonValue => {
      const xs = evs.map((e) => e.row.x as string);
      if (xs.length === 0) return null;
      return xs.reduce((a, b) => (op === 'max' ? (b > a ? b : a) : b < a ? b : a));
    };
    const strRel = (e: Ev): boolean => e.match && typeof e.row.x === 'string';
    const spec: WindowSpec = {
      windowMs: W,
      buckets: 128,
      ringMax: RING,
      relevant: strRel,
      agg: pick,
      eqExact: (a, b) => a === b,
      eqBucketed: (a, b) => a === b,
    };
    runOpCases({
      name: `${op}/str`,
      spec: { op, params: { field: 'x', window: '10s' } },
      fields: { x: 'str' },
      row: rowOf(STR),
      windowMs: W,
      check: (v, evs, now) => windowCheck(spec, v, evs, now),
    });
    runOpCases({
      name: `${op}/str/forever`,
      spec: { op, params: { field: 'x', window: 'forever' } },
      fields: { x: 'str' },
      row: rowOf(STR),
      check: (v, evs) => expectEq(v, pick(evs.filter(strRel))),
    });
    const dt = numWindow(W, op === 'min' ? min : max);
    runOpCases({
      name: `${op}/datetime`,
      spec: { op, params: { field: 'x', window: '10s' } },
      fields: { x: 'datetime' },
      row: rowOf((rng) => 1_600_000_000_000 + rng.int(0, 1e9)),
      windowMs: W,
      check: (v, evs, now) => windowCheck(dt, v, evs, now),
    });
  }
});
