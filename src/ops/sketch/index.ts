/**
 * Probabilistic sketches for the aggregation ops n_unique, quantile, top_k and
 * bloom_member. No dependencies; every sketch starts at a few dozen bytes, grows
 * only as values arrive, and stops at a fixed cap.
 *
 * API summary (all values are `string | number | boolean`; hash equality is per
 * JS type: "5", 5 and true are three different values; -0 is 0):
 *
 *   hashValue(v): number                     53-bit deterministic hash (hash.ts)
 *   hashString32(s, seed?): number           murmur3 x86_32 over UTF-16LE
 *
 *   new DistinctSketch()                                          (distinct.ts)
 *     .add(v) .addHash(h) .count(): number .merge(o) .isExact()
 *     exact up to 512 values, then HLL p = 12: 1.625 % relative standard error
 *
 *   new QuantileSketch(config = QUANTILE_DEFAULT_CONFIG)          (quantile.ts)
 *     .add(x: number)            (non-finite ignored)
 *     .quantile(q in [0,1]): number   NaN when empty
 *     .count() .merge(o) .isExact()
 *     exact up to 256 values (linear interpolation at pos = q (n-1)), then DDSketch
 *     alpha = 1 %: each order statistic within 1 % relative, <= 1024 buckets per
 *     sign, the lowest values collapse first. new QuantileConfig(alpha, exactMax,
 *     storeBucketsMax) for other settings: build one per feature, not per entity.
 *
 *   new TopKSketch(topKCapacity(k))                               (topk.ts)
 *     .add(v) .top(k): {value, count}[] .count() .errorBound() .merge(o) .isExact()
 *     capacity C = max(64, 4k); exact while <= C distinct, then Space-Saving:
 *     counts overestimate by <= N/C, any value with count > N/C is held.
 *     Order: count desc, then strings < numbers < booleans, each ascending.
 *     NaN is ignored.
 *
 *   bloomGeometry(capacity, fpr): BloomGeometry   validates, throws SfError
 *     (invalid_bloom_fpr / aggregation_invalid_param); build once per feature.
 *   new BloomFilter(geometry = BLOOM_DEFAULT_GEOMETRY)            (bloom.ts)
 *     .add(v): boolean (was it probably present before) .has(v) .merge(o) .isExact()
 *     no false negatives; exact list while it is smaller than the bit array.
 *
 * Every sketch also has:
 *   .save(): plain structured-cloneable object (numbers, strings, arrays, typed
 *     arrays, a `kind` string and a version `v`); the typed arrays are copies.
 *   static load(data[, config|geometry]): the same answers and the same future
 *     behaviour; asserts (node:assert) on malformed data. Pass the shared
 *     config/geometry to avoid one copy per entity.
 *   .clone()   .bytes(): approximate retained bytes for the memory benchmark.
 *   .merge(other): mutates the receiver only; `other` must be another instance
 *     with the same parameters. Windowed folds: acc = new X(); acc.merge(bucket)...
 *
 * Sizes (bytes() on Node 20, see test/unit/sketch/bytes.test.ts for the measured
 * figures): distinct 40 B empty, <= ~4.3 KiB exact, ~4.3 KiB HLL; quantile ~100 B
 * empty, <= ~2.3 KiB exact, a few KiB sketch (<= ~17 KiB at the cap); bloom ~50 B
 * empty, then min(8 B/value, m/8 B); top_k ~ (60 B + value) per held value.
 */
export { hashValue, hashString32, hashString53, hashNumber53, hashBoolean53, hashLo, hashHi, fmix32 } from './hash';
export {
  DistinctSketch,
  DISTINCT_EXACT_MAX,
  HLL_PRECISION,
  HLL_REGISTERS,
  HLL_STANDARD_ERROR,
  type DistinctSaved,
} from './distinct';
export {
  QuantileSketch,
  QuantileConfig,
  QUANTILE_DEFAULT_CONFIG,
  QUANTILE_ALPHA_DEFAULT,
  QUANTILE_EXACT_MAX_DEFAULT,
  QUANTILE_STORE_BUCKETS_MAX_DEFAULT,
  type QuantileSaved,
} from './quantile';
export {
  TopKSketch,
  topKCapacity,
  compareTopValues,
  TOP_K_CAPACITY_MIN,
  TOP_K_CAPACITY_PER_K,
  type TopValue,
  type TopEntry,
  type TopKSaved,
} from './topk';
export {
  BloomFilter,
  bloomGeometry,
  BLOOM_DEFAULT_GEOMETRY,
  BLOOM_CAPACITY_DEFAULT,
  BLOOM_FPR_DEFAULT,
  BLOOM_CAPACITY_MAX,
  BLOOM_BITS_MAX,
  type BloomGeometry,
  type BloomSaved,
} from './bloom';
