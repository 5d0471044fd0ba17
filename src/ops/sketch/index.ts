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
 * Sizes: bytes() estimate / measured V8 heap + buffers per instance, Node 20 x64:
 *   distinct   empty 48/65; 10 values 424/462; 512 (exact, full) 4392/~4.3K;
 *              HLL 4344/4322 (fixed from 513 values on)
 *   quantile   empty 104/133; 10 values 432/485; 256 (exact, full) 2352/2389;
 *              sketch: uniform 1..1000 3456/3583, lognormal(sd 2) 7552/7560,
 *              at the cap (1024 buckets per sign) 17560/18112
 *   top_k      empty 88/102; C = 64 full of 8-char strings 6728/6943 (~105 B per
 *              held value); C = 400 full 38984/49670 (Map overhead under-counted)
 *   bloom      empty 56/~60; 10 values 432/428; 153 values (exact, full) 1528/1445;
 *              bits (n = 1024, p = 1 %) 1484/1421
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
  type QuantileSaved,
} from './quantile';
export { BLOOM_BITS_MAX, BLOOM_CAPACITY_MAX, QUANTILE_EXACT_MAX_DEFAULT, QUANTILE_STORE_BUCKETS_MAX_DEFAULT } from '../../limits';
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
  type BloomGeometry,
  type BloomSaved,
} from './bloom';
