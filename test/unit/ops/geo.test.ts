/** Property tests of geo_velocity, geo_distance, geo_spread, distance_from_home. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonValue, Row } from '../../../src/types';
import { BASE_T, close, compile, expectClose, runOpCases, windowCheck, type Ev, type Rng, type WindowSpec } from './harness';
import { columnState } from './column_state';

const R = 6371;
const rad = Math.PI / 180;
function hav(a: [number, number], b: [number, number]): number {
  const dLat = (b[0] - a[0]) * rad;
  const dLon = (b[1] - a[1]) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a[0] * rad) * Math.cos(b[0] * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * R * Math.asin(Math.min(1, Math.sqrt(h)));
}

const row = (rng: Rng): Row => {
  if (rng.chance(0.05)) return { la: null, lo: 10 };
  if (rng.chance(0.03)) return { la: 95, lo: 10 }; // invalid latitude: skipped
  if (rng.chance(0.03)) return { la: 48, lo: 181 }; // invalid longitude: skipped
  return { la: 48 + rng.next() * 2 - 1, lo: 2 + rng.next() * 2 - 1 };
};
const FIELDS = { la: 'f64', lo: 'f64' } as const;
const pts = (evs: readonly Ev[]): Array<{ p: [number, number]; t: number }> =>
  evs
    .filter((e) => e.match && typeof e.row.la === 'number' && Math.abs(e.row.la) <= 90 && typeof e.row.lo === 'number' && Math.abs(e.row.lo) <= 180)
    .map((e) => ({ p: [e.row.la as number, e.row.lo as number], t: e.t }));

function cases(op: string, extra: Record<string, unknown>, naive: (evs: readonly Ev[]) => JsonValue): void {
  test(`${op} matches a naive recomputation`, () => {
    runOpCases({
      name: op,
      spec: { op, params: { lat_field: 'la', lon_field: 'lo', ...extra } },
      fields: FIELDS,
      row,
      matchRate: 0.9,
      check: (v, evs) => expectClose(v, naive(evs), 1e-9),
    });
  });
}

function distance(evs: readonly Ev[]): JsonValue {
  const p = pts(evs);
  let d = 0;
  for (let i = 1; i < p.length; i++) d += hav(p[i - 1].p, p[i].p);
  return d;
}
function velocity(evs: readonly Ev[]): JsonValue {
  const p = pts(evs);
  if (p.length === 0) return null;
  let v = 0;
  for (let i = 1; i < p.length; i++) if (p[i].t > p[i - 1].t) v = Math.max(v, hav(p[i - 1].p, p[i].p) / ((p[i].t - p[i - 1].t) / 3_600_000));
  return v;
}
function spread(evs: readonly Ev[]): JsonValue {
  const p = pts(evs);
  if (p.length < 2) return null;
  const n = p.length;
  const mLat = p.reduce((a, q) => a + q.p[0], 0) / n;
  const mLon = p.reduce((a, q) => a + q.p[1], 0) / n;
  const vLat = p.reduce((a, q) => a + (q.p[0] - mLat) ** 2, 0) / n;
  const vLon = p.reduce((a, q) => a + (q.p[1] - mLon) ** 2, 0) / n;
  const kx = 111.32 * Math.cos(mLat * rad);
  return Math.sqrt(vLat * 111.32 ** 2 + vLon * kx * kx);
}
const PATH_OPS: Array<[string, (evs: readonly Ev[]) => JsonValue]> = [['geo_distance', distance], ['geo_velocity', velocity], ['geo_spread', spread]];
for (const [op, naive] of PATH_OPS) cases(op, {}, naive);

// Windowed: the lifetime answer over the points of the window (exact while <= 64 points
// fell in W + bucketMs, else a suffix reaching at most ceil(W/128) before the window).
for (const [op, naive] of PATH_OPS) {
  for (const windowMs of [10_000, 1_000, 3_600_000]) {
    test(`${op} window=${windowMs}ms matches a naive recomputation of the window`, () => {
      const spec: WindowSpec = {
        windowMs,
        buckets: 128,
        ringMax: 64,
        relevant: (e) => pts([e]).length === 1,
        agg: naive,
        eqExact: (x, y) => close(x, y, 1e-9),
        eqBucketed: (x, y) => close(x, y, 1e-9),
      };
      runOpCases({
        name: `${op}/${windowMs}`,
        spec: { op, params: { lat_field: 'la', lon_field: 'lo', window: `${windowMs}ms` } },
        fields: FIELDS,
        row,
        windowMs,
        matchRate: 0.9,
        check: (v, evs, now) => windowCheck(spec, v, evs, now),
      });
    });
  }
}
for (const samples of [1, 5, 100]) {
  cases('distance_from_home', { samples }, (evs) => {
    const p = pts(evs).slice(-samples);
    if (p.length === 0) return null;
    const home: [number, number] = [p.reduce((a, q) => a + q.p[0], 0) / p.length, p.reduce((a, q) => a + q.p[1], 0) / p.length];
    return hav(p[p.length - 1].p, home);
  });
}

test('geo ops default to columns lat / lon and accept the lat / lon aliases', () => {
  const a = columnState(compile({ op: 'geo_distance' }, { lat: 'f64', lon: 'f64' }));
  const b = columnState(compile({ op: 'geo_distance', params: { lat: 'y', lon: 'x' } }, { y: 'f64', x: 'f64' }));
  a.update(0, BASE_T, { lat: 0, lon: 0 });
  a.update(0, BASE_T + 1, { lat: 0, lon: 1 });
  b.update(0, BASE_T, { y: 0, x: 0 });
  b.update(0, BASE_T + 1, { y: 0, x: 1 });
  assert.ok(Math.abs((a.read(BASE_T) as number) - 111.19) < 0.01);
  assert.equal(a.read(BASE_T), b.read(BASE_T));
});
