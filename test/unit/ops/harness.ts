/**
 * Shared machinery of the op tests: a seeded PRNG, random event streams with
 * sorted (non-decreasing, often equal) server times, and runOpCases, which
 * drives a compiled op like the shard does (in the shard's column for it,
 * column_state.ts) and checks every read against a naive recomputation from the
 * raw events. Along the way it checks that read() is pure, that the value is
 * JSON-clean, and that a state saved and reloaded (through structuredClone, as a
 * snapshot would) answers and continues identically.
 */
import assert from 'node:assert/strict';
import { canonicalOp, compileAgg } from '../../../src/ops/catalogue';
import type { OpFactory, OpState } from '../../../src/ops/op';
import type { FieldMap, JsonValue, Row, Value } from '../../../src/types';
import { prng } from '../../harness/prng';
import { columnState, loadColumnState } from './column_state';

export const BASE_T = 1_700_000_000_000;

/** mulberry32: small, fast, deterministic. */
export class Rng {
  private readonly s: () => number;
  constructor(seed: number) {
    this.s = prng(seed);
  }
  next(): number {
    return this.s();
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(a: readonly T[]): T {
    return a[Math.floor(this.next() * a.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

export interface Ev {
  t: number;
  row: Row;
  /** Passed the (simulated) where predicate: update(); else miss(). */
  match: boolean;
}

/** How times advance: a mixture of same-ms repeats, bursts, normal gaps and long idles. */
export interface TimeProfile {
  sameMs: number;
  burstMs: number;
  gapMs: number;
  idleMs: number;
  /** Probabilities of burst / gap / idle steps (rest of the mass: same ms). */
  pBurst: number;
  pGap: number;
  pIdle: number;
}

/** A dense profile (~80 events per window, so the bucketed mode is exercised) or a sparse one. */
export function profileFor(windowMs: number, dense = false): TimeProfile {
  if (dense) {
    return {
      sameMs: 0,
      burstMs: Math.max(1, Math.floor(windowMs / 400)),
      gapMs: Math.max(1, Math.floor(windowMs / 8)),
      idleMs: windowMs * 2,
      pBurst: 0.97,
      pGap: 0.02,
      pIdle: 0.01,
    };
  }
  return {
    sameMs: 0,
    burstMs: Math.max(1, Math.floor(windowMs / 200)),
    gapMs: Math.max(1, Math.floor(windowMs / 8)),
    idleMs: windowMs * 2,
    pBurst: 0.6,
    pGap: 0.25,
    pIdle: 0.05,
  };
}

export function nextTime(rng: Rng, t: number, p: TimeProfile): number {
  const u = rng.next();
  if (u < p.pBurst) return t + rng.int(0, p.burstMs);
  if (u < p.pBurst + p.pGap) return t + rng.int(1, p.gapMs);
  if (u < p.pBurst + p.pGap + p.pIdle) return t + rng.int(1, p.idleMs);
  return t;
}

export type RowGen = (rng: Rng) => Row;

export interface OpCase {
  /** Test label. */
  name: string;
  spec: { op: string; params?: Record<string, unknown> };
  fields: FieldMap;
  row: RowGen;
  /** Returns null when `actual` is right for the events so far at query time `now`. */
  check(actual: JsonValue, evs: readonly Ev[], now: number): string | null;
  /** Probability that an event passes `where` (default 1). */
  matchRate?: number;
  seeds?: number;
  events?: number;
  /** Scale for the time profile (default 10 s). */
  windowMs?: number;
  profile?: TimeProfile;
  memoryGovEnforce?: boolean;
}

export function compile(spec: unknown, fields: FieldMap, enforce = true): OpFactory {
  return compileAgg(spec, { fields, path: 'nodes[0].agg.f', memoryGovEnforce: enforce });
}

function drive(factory: OpFactory, st: OpState, ev: Ev): void {
  if (ev.match) st.update(factory.field === null ? undefined : ev.row[factory.field], ev.t, ev.row);
  else if (factory.wantsMiss) st.miss(ev.t);
}

function assertJsonClean(v: JsonValue, where: string): void {
  if (typeof v === 'number') assert.ok(Number.isFinite(v), `${where}: non-finite number ${v}`);
  else if (Array.isArray(v)) v.forEach((x) => assertJsonClean(x, where));
  else if (v !== null && typeof v === 'object') Object.values(v).forEach((x) => assertJsonClean(x, where));
  assert.deepEqual(JSON.parse(JSON.stringify(v)), v, `${where}: value does not survive JSON`);
}

/**
 * Runs the case for `seeds` seeds. Per event: feed it; sometimes read at the event
 * time and at a later idle time; sometimes save + structuredClone + load the
 * state and then keep driving the original and the copy side by side.
 */
export function runOpCases(c: OpCase): void {
  const seeds = c.seeds ?? 12;
  const n = c.events ?? 300;
  const factory = compile(c.spec, c.fields, c.memoryGovEnforce ?? true);
  for (let seed = 1; seed <= seeds; seed++) {
    const rng = new Rng(seed * 7919 + c.name.length);
    // Odd seeds: dense streams (bucketed windows); even seeds: sparse ones (exact windows).
    const profile = c.profile ?? profileFor(c.windowMs ?? 10_000, seed % 2 === 1);
    const st = columnState(factory);
    let copy: OpState | null = null;
    const evs: Ev[] = [];
    let t = BASE_T + rng.int(0, 86_400_000);
    const count = rng.int(1, n);
    for (let i = 0; i < count; i++) {
      t = nextTime(rng, t, profile);
      const ev: Ev = { t, row: c.row(rng), match: rng.chance(c.matchRate ?? 1) };
      evs.push(ev);
      drive(factory, st, ev);
      if (copy !== null) drive(factory, copy, ev);
      const checkNow = i === count - 1 || rng.chance(0.25);
      if (!checkNow) continue;
      const nows = [t, t + rng.int(0, profile.idleMs), t + rng.int(0, profile.gapMs)];
      for (const now of nows) {
        const where = `${c.name} seed=${seed} event=${i} now=t+${now - t}`;
        const v = st.read(now);
        assertJsonClean(v, where);
        assert.deepEqual(st.read(now), v, `${where}: read is not pure`);
        const err = c.check(v, evs, now);
        if (err !== null) assert.fail(`${where}: ${err}\n  got ${JSON.stringify(v)}`);
        if (copy !== null) assert.deepEqual(copy.read(now), v, `${where}: reloaded state answers differently`);
      }
      if (rng.chance(0.2)) {
        const saved = structuredClone(st.save());
        copy = loadColumnState(factory, saved);
        assert.deepEqual(copy.read(t), st.read(t), `${c.name} seed=${seed}: reloaded state differs right after load`);
      }
    }
  }
}

// ------------------------------------------------------------------ naive helpers

export const isNum = (x: Value | undefined): x is number => typeof x === 'number' && Number.isFinite(x);

/** Numbers close enough: |a - b| <= tol * max(1, |b|, scale). */
export function close(a: JsonValue, b: JsonValue, tol = 1e-9, scale = 0): boolean {
  if (a === null || b === null) return a === b;
  if (typeof a !== 'number' || typeof b !== 'number') return JSON.stringify(a) === JSON.stringify(b);
  return Math.abs(a - b) <= tol * Math.max(1, Math.abs(b), scale);
}

export function deepClose(a: JsonValue, b: JsonValue, tol = 1e-9): boolean {
  if (typeof a === 'number' || typeof b === 'number') return close(a, b, tol);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepClose(x, b[i], tol));
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return JSON.stringify(ka) === JSON.stringify(kb) && ka.every((k) => deepClose(a[k], b[k], tol));
  }
  return a === b;
}

/** Welford over a list: n, mean, m2. */
export function moments(xs: readonly number[]): { n: number; mean: number; m2: number } {
  let n = 0;
  let mean = 0;
  let m2 = 0;
  for (const x of xs) {
    n++;
    const d = x - mean;
    mean += d / n;
    m2 += d * (x - mean);
  }
  return { n, mean, m2 };
}

/**
 * top_k recomputed from the values (exact): count descending, then strings < numbers <
 * booleans, each ascending (strings by UTF-16 code units; docs/ops.md).
 */
export function naiveTopK(xs: readonly Value[], k: number): Array<{ value: Value; count: number }> {
  const counts = new Map<string, { value: Value; count: number }>();
  for (const x of xs) {
    const key = `${typeof x}:${String(x)}`;
    const c = counts.get(key);
    if (c === undefined) counts.set(key, { value: x, count: 1 });
    else c.count++;
  }
  const rank = (v: Value): number => (typeof v === 'string' ? 0 : typeof v === 'number' ? 1 : 2);
  const all = [...counts.values()].sort((a, b) => {
    if (a.count !== b.count) return b.count - a.count;
    const ra = rank(a.value);
    const rb = rank(b.value);
    if (ra !== rb) return ra - rb;
    return (a.value as string) < (b.value as string) ? -1 : (a.value as string) > (b.value as string) ? 1 : 0;
  });
  return all.slice(0, k).map((c) => ({ value: c.value, count: c.count }));
}

export function expectEq(actual: JsonValue, expected: JsonValue): string | null {
  return deepClose(actual, expected, 0) ? null : `expected ${JSON.stringify(expected)}`;
}

export function expectClose(actual: JsonValue, expected: JsonValue, tol = 1e-9): string | null {
  return deepClose(actual, expected, tol) ? null : `expected ${JSON.stringify(expected)} (tol ${tol})`;
}

export interface WindowSpec {
  windowMs: number;
  /** Buckets per window of the op family (num: 128, sketch: 64, string min/max: 128). */
  buckets: number;
  /** Raw ring size (64). */
  ringMax: number;
  /** Events that enter the window structure (matching, with an accepted value). */
  relevant(ev: Ev): boolean;
  /**
   * Events that take a place in the op's raw ring (default: every matching or
   * relevant event: a windowed op keeps the events that reached it, also those it
   * does not accept, in the ring it shares; docs/ops.md "Windows").
   */
  reached?(ev: Ev): boolean;
  /** The naive aggregate of a list of relevant events (oldest first). */
  agg(evs: readonly Ev[]): JsonValue;
  /** Equality for the exact case and for the bucketed case. */
  eqExact(a: JsonValue, b: JsonValue): boolean;
  eqBucketed(a: JsonValue, b: JsonValue): boolean;
}

/**
 * The window contract: if at most ringMax events that reached the op's ring fell in
 * (now - W - bucketMs, now], the answer is the aggregate of exactly the relevant
 * events in (now - W, now]. Otherwise it is the aggregate of a suffix (in arrival
 * order) of the relevant events that holds every one of (now - W, now] and
 * possibly the latest ones of (now - W - bucketMs, now - W].
 */
export function windowCheck(w: WindowSpec, actual: JsonValue, evs: readonly Ev[], now: number): string | null {
  const bucketMs = Math.max(1, Math.ceil(w.windowMs / w.buckets));
  const rel = evs.filter((e) => w.relevant(e));
  const live = rel.filter((e) => now - e.t < w.windowMs);
  const near = rel.filter((e) => now - e.t < w.windowMs + bucketMs);
  const reached = w.reached ?? ((e: Ev): boolean => e.match || w.relevant(e));
  const ringed = evs.filter((e) => reached(e) && now - e.t < w.windowMs + bucketMs);
  const exact = w.agg(live);
  if (ringed.length <= w.ringMax) {
    return w.eqExact(actual, exact) ? null : `exact window: expected ${JSON.stringify(exact)} (${live.length} live events)`;
  }
  const older = near.filter((e) => now - e.t >= w.windowMs);
  for (let i = older.length; i >= 0; i--) {
    if (w.eqBucketed(actual, w.agg([...older.slice(i), ...live]))) return null;
  }
  return `bucketed window: no suffix within ${bucketMs} ms before the window matches; exact window gives ${JSON.stringify(exact)}`;
}

// ------------------------------------------------------------------ row generators

export const F64 = (rng: Rng): number => Math.round((rng.next() * 2000 - 1000) * 1000) / 1000;
export const I64 = (rng: Rng): number => rng.int(-50, 50);
export const STR = (rng: Rng): string => rng.pick(['a', 'b', 'c', 'ab', 'ba', 'abc', 'zz', 'Z', '', 'é']);
export const BOOL = (rng: Rng): boolean => rng.chance(0.5);

/** A row generator for one field `x` (and optionally nulls). */
export function rowOf(gen: (rng: Rng) => Value, pNull = 0.1): RowGen {
  return (rng) => ({ x: rng.chance(pNull) ? null : gen(rng) });
}

/** A valid spec for any op-string over the fields amount:f64 n:i64 s:str lat/lon:f64. */
export function minimalSpec(op: string): { op: string; params: Record<string, unknown> } {
  const c = canonicalOp(op);
  switch (c) {
    case 'sum': case 'mean': case 'var': case 'std': case 'velocity': case 'min': case 'max':
      return { op, params: { field: 'amount', window: '1m' } };
    case 'rate': return { op, params: { window: '1m' } };
    case 'first_seen_in_window': return { op, params: { window: '1h' } };
    case 'first_n': case 'last_n': case 'most_recent_n': case 'lag': return { op, params: { field: 's', n: 3 } };
    case 'time_since_last_n': return { op, params: { n: 3 } };
    case 'ewma': case 'ewvar': case 'ew_zscore': case 'decayed_sum': return { op, params: { field: 'amount', half_life: '10s' } };
    case 'decayed_count': return { op, params: { half_life: '10s' } };
    case 'burst_count': return { op, params: { sub_window: '1s' } };
    case 'histogram': return { op, params: { field: 'amount', buckets: [0, 10, 100] } };
    case 'reservoir_sample': return { op, params: { field: 'n', samples: 5 } };
    case 'geo_velocity': case 'geo_distance': case 'geo_spread': case 'distance_from_home': return { op, params: {} };
    case 'count': case 'ratio': case 'first_seen': case 'last_seen': case 'age': case 'has_seen': case 'time_since':
    case 'streak': case 'max_streak': case 'negative_streak': case 'inter_arrival_stats': case 'hour_of_day_histogram':
    case 'dow_hour_histogram':
      return { op, params: {} };
    case 'first': case 'last': case 'value_change_count': case 'n_unique': case 'top_k': case 'bloom_member':
    case 'entropy': case 'event_type_mix':
      return { op, params: { field: 's' } };
    default:
      return { op, params: { field: 'amount' } };
  }
}

