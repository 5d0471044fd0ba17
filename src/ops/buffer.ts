/**
 * Distribution ops kept as small fixed tables (lifetime; memory fixed by params):
 *   histogram              counts per cell of the edges b0 < b1 < ... < bn:
 *                          (-inf,b0) "<b0", [b_i,b_(i+1)) "b_i-b_(i+1)", [bn,inf) ">=bn"
 *   hour_of_day_histogram  24 counts by UTC hour of the server time
 *   dow_hour_histogram     168 counts by (UTC weekday Mon..Sun, hour), keys "Mon-00".."Sun-23"
 *   seasonal_deviation     z of the latest x against the values of the same UTC hour
 *   event_type_mix         category -> share of the events with a present value
 *   reservoir_sample       uniform sample of `samples` values (Algorithm R)
 * Tables are allocated on the first update, so an entity whose events never
 * reach the feature costs one small object.
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
import { hashLo, hashValue } from './sketch';
import { isNum, jsonNum, jsonVal, newDoubles } from './values';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const EMPTY: number[] = [];

/** Cell labels of a histogram: edges printed by JS String (10 -> "10", 0.5 -> "0.5"). */
export function histogramLabels(edges: readonly number[]): string[] {
  if (edges.length === 0) return ['all'];
  const labels = [`<${edges[0]}`];
  for (let i = 0; i + 1 < edges.length; i++) labels.push(`${edges[i]}-${edges[i + 1]}`);
  labels.push(`>=${edges[edges.length - 1]}`);
  return labels;
}

export class HistogramCfg {
  readonly edges: readonly number[];
  readonly labels: readonly string[];
  constructor(edges: readonly number[]) {
    this.edges = edges;
    this.labels = histogramLabels(edges);
  }
  /** Index of the cell holding x (binary search: edges are strictly increasing). */
  cell(x: number): number {
    const e = this.edges;
    let lo = 0;
    let hi = e.length;
    // Invariant: cells < lo hold values < x's cell; answer = number of edges <= x.
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (e[mid] <= x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** `{label: count}` of a histogram, count(i) = events in cell i (lifetime table or window tally). */
export function histogramOut(cfg: HistogramCfg, count: (i: number) => number): JsonValue {
  const out: { [k: string]: JsonValue } = {};
  const labels = cfg.labels;
  for (let i = 0; i < labels.length; i++) out[labels[i]] = count(i);
  return out;
}

export class HistogramState implements StoredState {
  readonly cfg: HistogramCfg;
  counts: number[];
  constructor(cfg: HistogramCfg) {
    this.cfg = cfg;
    this.counts = EMPTY;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (!isNum(x)) return;
    if (this.counts === EMPTY) this.counts = newDoubles(this.cfg.labels.length);
    this.counts[this.cfg.edges.length === 0 ? 0 : this.cfg.cell(x)]++;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    const counts = this.counts;
    return histogramOut(this.cfg, (i) => (counts === EMPTY ? 0 : counts[i]));
  }
  save(): unknown {
    return this.counts.slice();
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    if (a.length === 0) return;
    this.counts = newDoubles(this.cfg.labels.length);
    for (let i = 0; i < a.length && i < this.counts.length; i++) this.counts[i] = a[i];
  }
}

const DOW_NAMES = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
/** 1970-01-01 was a Thursday: Monday-based weekday of epoch day d is (d + 3) mod 7. */
const EPOCH_DOW_MON0 = 3;
const DOW_HOUR_KEYS: string[] = [];
for (let d = 0; d < 7; d++) for (let h = 0; h < 24; h++) DOW_HOUR_KEYS.push(`${DOW_NAMES[d]}-${h < 10 ? '0' : ''}${h}`);

export function utcHour(t: number): number {
  const r = Math.floor(t / HOUR_MS) % 24;
  return r < 0 ? r + 24 : r;
}

export function dowHourIndex(t: number): number {
  const day = Math.floor(t / DAY_MS);
  let dow = (day + EPOCH_DOW_MON0) % 7;
  if (dow < 0) dow += 7;
  return dow * 24 + utcHour(t);
}

/** 24 counts by UTC hour (array), or 168 by (weekday, hour) as {"Mon-00": n, ...}; count(i) = cell i. */
export function timeHistogramOut(dow: boolean, count: (i: number) => number): JsonValue {
  if (!dow) {
    const out: number[] = [];
    for (let i = 0; i < 24; i++) out.push(count(i));
    return out;
  }
  const out: { [k: string]: JsonValue } = {};
  for (let i = 0; i < 168; i++) out[DOW_HOUR_KEYS[i]] = count(i);
  return out;
}

/** hour_of_day_histogram (24 cells, array out) and dow_hour_histogram (168 cells, object out). */
export class TimeHistogramState implements StoredState {
  readonly dow: boolean;
  counts: number[];
  constructor(dow: boolean) {
    this.dow = dow;
    this.counts = EMPTY;
  }
  update(_x: Value | undefined, t: number, _row: Row): void {
    if (this.counts === EMPTY) this.counts = newDoubles(this.dow ? 168 : 24);
    this.counts[this.dow ? dowHourIndex(t) : utcHour(t)]++;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    const counts = this.counts;
    return timeHistogramOut(this.dow, (i) => (counts === EMPTY ? 0 : counts[i]));
  }
  save(): unknown {
    return this.counts.slice();
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    if (a.length === 0) return;
    this.counts = newDoubles(this.dow ? 168 : 24);
    for (let i = 0; i < a.length && i < this.counts.length; i++) this.counts[i] = a[i];
  }
}

/** seasonal_deviation: Welford (n, mean, m2) per UTC hour; z of the latest value in its hour. */
export class SeasonalState implements StoredState {
  stats: number[];
  lastHour: number;
  last: number;
  constructor() {
    this.stats = EMPTY;
    this.lastHour = -1;
    this.last = 0;
  }
  update(x: Value | undefined, t: number, _row: Row): void {
    if (!isNum(x)) return;
    if (this.stats === EMPTY) this.stats = newDoubles(24 * 3);
    const h = utcHour(t);
    const j = h * 3;
    const n = this.stats[j] + 1;
    const d = x - this.stats[j + 1];
    this.stats[j] = n;
    this.stats[j + 1] += d / n;
    this.stats[j + 2] += d * (x - this.stats[j + 1]);
    this.lastHour = h;
    this.last = x;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    if (this.lastHour < 0) return null;
    const j = this.lastHour * 3;
    const n = this.stats[j];
    if (n < 2) return null;
    const variance = this.stats[j + 2] / (n - 1);
    if (!(variance > 0)) return null;
    return jsonNum((this.last - this.stats[j + 1]) / Math.sqrt(variance));
  }
  save(): unknown {
    return [this.stats.slice(), this.lastHour, this.last];
  }
  restore(saved: unknown): void {
    const [stats, h, last] = saved as [number[], number, number];
    if (stats.length > 0) {
      this.stats = newDoubles(24 * 3);
      for (let i = 0; i < stats.length && i < 72; i++) this.stats[i] = stats[i];
    }
    this.lastHour = h;
    this.last = last;
  }
}

/** A category name for a value: strings as-is, numbers by JS String, booleans "true"/"false". */
export function categoryOf(x: string | number | boolean): string {
  return typeof x === 'string' ? x : String(x);
}

export class MixCfg {
  /** Null = every category admitted (up to maxCategories). */
  readonly allow: ReadonlySet<string> | null;
  readonly maxCategories: number;
  constructor(allow: ReadonlySet<string> | null, maxCategories: number) {
    this.allow = allow;
    this.maxCategories = maxCategories;
  }
}

/** `{category: count / total}` with keys sorted. */
export function mixOut(counts: ReadonlyMap<string, number>, total: number): JsonValue {
  const out: { [k: string]: JsonValue } = {};
  const keys = [...counts.keys()].sort();
  for (const k of keys) out[k] = (counts.get(k) as number) / total;
  return out;
}

/**
 * event_type_mix: share = count(category) / total, where total counts every event
 * with a present value, including those whose category was not kept (outside the
 * allowlist, or new once maxCategories are held). Shares therefore sum to <= 1.
 */
export class MixState implements StoredState {
  readonly cfg: MixCfg;
  counts: Map<string, number> | null;
  total: number;
  constructor(cfg: MixCfg) {
    this.cfg = cfg;
    this.counts = null;
    this.total = 0;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (x === null || x === undefined) return;
    if (typeof x === 'number' && !Number.isFinite(x)) return;
    this.total++;
    const c = categoryOf(x);
    const allow = this.cfg.allow;
    if (allow !== null && !allow.has(c)) return;
    if (this.counts === null) this.counts = new Map();
    const prev = this.counts.get(c);
    if (prev !== undefined) this.counts.set(c, prev + 1);
    else if (this.counts.size < this.cfg.maxCategories) this.counts.set(c, 1);
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.counts === null ? {} : mixOut(this.counts, this.total);
  }
  save(): unknown {
    return [this.total, this.counts === null ? [] : [...this.counts]];
  }
  restore(saved: unknown): void {
    const [total, entries] = saved as [number, Array<[string, number]>];
    this.total = total;
    this.counts = entries.length === 0 ? null : new Map(entries);
  }
}

/**
 * reservoir_sample (Algorithm R): the first `size` values fill the sample; the
 * i-th value after that (1-based count seen) replaces slot j = r mod i when j < size,
 * with r a 32-bit hash of (i, value). The choice depends only on the stream, so a
 * WAL replay rebuilds the same sample, while two entities with different values
 * keep different positions.
 */
export class ReservoirState implements StoredState {
  readonly size: number;
  seen: number;
  sample: Array<string | number | boolean>;
  constructor(size: number) {
    this.size = size;
    this.seen = 0;
    this.sample = [];
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (x === null || x === undefined) return;
    this.seen++;
    if (this.sample.length < this.size) {
      this.sample.push(x);
      return;
    }
    const j = mix32((mix32(this.seen) ^ hashLo(hashValue(x))) >>> 0) % this.seen;
    if (j < this.size) this.sample[j] = x;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.sample.map(jsonVal);
  }
  save(): unknown {
    return [this.seen, this.sample.slice()];
  }
  restore(saved: unknown): void {
    const [seen, sample] = saved as [number, Array<string | number | boolean>];
    this.seen = seen;
    this.sample = sample.slice(0, this.size);
  }
}

/** A 32-bit integer hash (lowbias32 by Chris Wellons): unsigned result. Counts beyond 2^32
 * are folded in through the high word so the sequence never repeats early. */
export function mix32(i: number): number {
  let x = (i >>> 0) ^ Math.floor(i / 4294967296);
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}
