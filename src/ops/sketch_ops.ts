/**
 * The sketch-backed ops, as accumulators for val_window.ts (windowed and
 * lifetime), plus bloom_member and string min/max:
 *   n_unique     DistinctSketch: exact up to 512 distinct, then HLL p=12 (1.625 % RSE)
 *   quantile     QuantileSketch: exact up to 256 values, then DDSketch (1 % relative)
 *   top_k        TopKSketch: exact up to max(64, 4k) distinct, then Space-Saving
 *   entropy      exact category counts, at most max_categories categories
 *   bloom_member was the LATEST value (probably) seen before it arrived
 * Sketch semantics and bounds are in src/ops/sketch/index.ts and docs/ops.md.
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
import { strict as assert } from 'node:assert';
import { ValWindowCfg, type WindowAgg } from './val_window';
import { categoryOf } from './buffer';
import { jsonNum } from './values';
import {
  BloomFilter,
  DistinctSketch,
  QuantileSketch,
  TopKSketch,
  topKCapacity,
  type BloomGeometry,
  type QuantileConfig,
} from './sketch';

type Scalar = string | number | boolean;

/** A present value that equality-based ops can use (NaN is never equal to itself). */
export function isScalar(x: Value | undefined): x is Scalar {
  if (x === null || x === undefined) return false;
  return typeof x !== 'number' || x === x;
}

function isFiniteNum(x: Value | undefined): x is number {
  return typeof x === 'number' && Number.isFinite(x);
}

export class DistinctAgg implements WindowAgg<DistinctSketch> {
  readonly timeless = true;
  accepts(x: Value | undefined): x is Scalar {
    return isScalar(x);
  }
  empty(): DistinctSketch {
    return new DistinctSketch();
  }
  clear(a: DistinctSketch): DistinctSketch {
    a.reset();
    return a;
  }
  add(a: DistinctSketch, v: Scalar): DistinctSketch {
    a.add(v);
    return a;
  }
  merge(into: DistinctSketch, from: DistinctSketch): DistinctSketch {
    into.merge(from);
    return into;
  }
  result(a: DistinctSketch): JsonValue {
    return a.count();
  }
  save(a: DistinctSketch): unknown {
    return a.save();
  }
  load(saved: unknown): DistinctSketch {
    return DistinctSketch.load(saved);
  }
}

/**
 * n_unique over a ring column whose cells hold each value's hashValue instead of
 * the value (shard/columns/ring_group.ts "hashed fields": a column only n_unique reads
 * needs no intern table). The sketch is the one DistinctAgg builds from the values:
 * it adds the hash it would have computed.
 */
export class DistinctHashAgg extends DistinctAgg {
  override accepts(x: Value | undefined): x is number {
    return typeof x === 'number';
  }
  override add(a: DistinctSketch, h: Scalar): DistinctSketch {
    a.addHash(h as number);
    return a;
  }
}

const DISTINCT_HASH_AGG = new DistinctHashAgg();
const hashedCfgs = new WeakMap<ValWindowCfg<unknown>, ValWindowCfg<unknown>>();

/** Whether a windowed value feature's cells may hold hashes of its values (it is an n_unique). */
export function readsHashes(c: ValWindowCfg<unknown>): boolean {
  return c.agg instanceof DistinctAgg && c.auxField === null;
}

/** The config of n_unique `c` reading a hashed column: the same windows and buckets, DistinctHashAgg. */
export function hashedCfg(c: ValWindowCfg<unknown>): ValWindowCfg<unknown> {
  if (c.agg instanceof DistinctHashAgg) return c;
  let h = hashedCfgs.get(c);
  if (h === undefined) {
    h = new ValWindowCfg<unknown>(DISTINCT_HASH_AGG as WindowAgg<unknown>, c.windowMs, c.bSlotsMax - 1, c.numeric, c.auxField);
    assert(h.bucketMs === c.bucketMs, 'a hashed config has the buckets of its feature');
    hashedCfgs.set(c, h);
  }
  return h;
}

export class QuantileAgg implements WindowAgg<QuantileSketch> {
  readonly timeless = true;
  readonly q: number;
  readonly config: QuantileConfig;
  constructor(q: number, config: QuantileConfig) {
    this.q = q;
    this.config = config;
  }
  accepts(x: Value | undefined): x is number {
    return isFiniteNum(x);
  }
  empty(): QuantileSketch {
    return new QuantileSketch(this.config);
  }
  clear(a: QuantileSketch): QuantileSketch {
    a.reset();
    return a;
  }
  add(a: QuantileSketch, v: Scalar): QuantileSketch {
    a.add(v as number);
    return a;
  }
  merge(into: QuantileSketch, from: QuantileSketch): QuantileSketch {
    into.merge(from);
    return into;
  }
  result(a: QuantileSketch): JsonValue {
    return a.count() === 0 ? null : jsonNum(a.quantile(this.q));
  }
  save(a: QuantileSketch): unknown {
    return a.save();
  }
  load(saved: unknown): QuantileSketch {
    return QuantileSketch.load(saved, this.config);
  }
}

export class TopKAgg implements WindowAgg<TopKSketch> {
  readonly timeless = true;
  readonly k: number;
  readonly capacity: number;
  constructor(k: number) {
    this.k = k;
    this.capacity = topKCapacity(k);
  }
  accepts(x: Value | undefined): x is Scalar {
    return isScalar(x);
  }
  empty(): TopKSketch {
    return new TopKSketch(this.capacity);
  }
  clear(a: TopKSketch): TopKSketch {
    a.reset();
    return a;
  }
  add(a: TopKSketch, v: Scalar): TopKSketch {
    a.add(v);
    return a;
  }
  merge(into: TopKSketch, from: TopKSketch): TopKSketch {
    into.merge(from);
    return into;
  }
  result(a: TopKSketch): JsonValue {
    const top = a.top(this.k);
    const out: JsonValue[] = [];
    for (const e of top) out.push({ value: e.value, count: e.count });
    return out;
  }
  save(a: TopKSketch): unknown {
    return a.save();
  }
  load(saved: unknown): TopKSketch {
    return TopKSketch.load(saved);
  }
}

/** Category counts for entropy; `total` counts only kept categories. */
export class Counts {
  readonly map: Map<string, number>;
  total: number;
  constructor() {
    this.map = new Map();
    this.total = 0;
  }
}

/**
 * entropy: H = -sum p_i log2 p_i over the categories' shares (bits). Exact while at
 * most `maxCategories` categories are held; a new category beyond that is dropped
 * (not counted in any share), as the peer does.
 */
export class EntropyAgg implements WindowAgg<Counts> {
  readonly timeless = true;
  readonly maxCategories: number;
  constructor(maxCategories: number) {
    this.maxCategories = maxCategories;
  }
  accepts(x: Value | undefined): x is Scalar {
    return isScalar(x) && (typeof x !== 'number' || Number.isFinite(x));
  }
  empty(): Counts {
    return new Counts();
  }
  clear(a: Counts): Counts {
    a.map.clear();
    a.total = 0;
    return a;
  }
  add(a: Counts, v: Scalar): Counts {
    this.addCount(a, categoryOf(v), 1);
    return a;
  }
  private addCount(a: Counts, c: string, n: number): void {
    const prev = a.map.get(c);
    if (prev !== undefined) a.map.set(c, prev + n);
    else if (a.map.size < this.maxCategories) a.map.set(c, n);
    else return;
    a.total += n;
  }
  merge(into: Counts, from: Counts): Counts {
    for (const [c, n] of from.map) this.addCount(into, c, n);
    return into;
  }
  result(a: Counts): JsonValue {
    return entropyBits(a.map.values(), a.total);
  }
  save(a: Counts): unknown {
    return [...a.map];
  }
  load(saved: unknown): Counts {
    const c = new Counts();
    for (const [k, n] of saved as Array<[string, number]>) {
      c.map.set(k, n);
      c.total += n;
    }
    return c;
  }
}

/** -sum (n_i / total) log2 (n_i / total); 0 for no data. Summed in the given order. */
export function entropyBits(counts: Iterable<number>, total: number): number {
  if (total <= 0) return 0;
  let h = 0;
  for (const n of counts) {
    if (n <= 0) continue;
    const p = n / total;
    h -= p * Math.log2(p);
  }
  return h > 0 ? h : 0;
}

/** String min/max as a window accumulator (null = nothing yet). First extreme wins ties. */
export class StrExtremeAgg implements WindowAgg<string | null> {
  readonly timeless = true;
  readonly isMax: boolean;
  constructor(isMax: boolean) {
    this.isMax = isMax;
  }
  accepts(x: Value | undefined): x is string {
    return typeof x === 'string';
  }
  empty(): string | null {
    return null;
  }
  clear(_a: string | null): string | null {
    return null;
  }
  add(a: string | null, v: Scalar): string | null {
    const s = v as string;
    if (a === null) return s;
    return (this.isMax ? s > a : s < a) ? s : a;
  }
  merge(into: string | null, from: string | null): string | null {
    return from === null ? into : this.add(into, from);
  }
  result(a: string | null): JsonValue {
    return a;
  }
  save(a: string | null): unknown {
    return a;
  }
  load(saved: unknown): string | null {
    return saved as string | null;
  }
}

/**
 * bloom_member: "had the entity's latest value been seen before it arrived?".
 * Each present value is tested against the entity's Bloom filter and then
 * inserted; the answer for the latest value is kept. No false negatives; a false
 * "true" with probability <= fpr while at most `capacity` distinct values were
 * inserted (exact while the filter is still an exact list).
 */
export class BloomMemberState implements StoredState {
  readonly geometry: BloomGeometry;
  filter: BloomFilter | null;
  seenBefore: boolean;
  constructor(geometry: BloomGeometry) {
    this.geometry = geometry;
    this.filter = null;
    this.seenBefore = false;
  }
  update(x: Value | undefined, _t: number, _row: Row): void {
    if (!isScalar(x)) return;
    if (this.filter === null) this.filter = new BloomFilter(this.geometry);
    this.seenBefore = this.filter.add(x);
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return this.seenBefore;
  }
  save(): unknown {
    return [this.seenBefore, this.filter === null ? null : this.filter.save()];
  }
  restore(saved: unknown): void {
    const [seen, f] = saved as [boolean, unknown];
    this.seenBefore = seen;
    this.filter = f === null ? null : BloomFilter.load(f, this.geometry);
  }
}
