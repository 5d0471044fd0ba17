/**
 * What a compiled feature hands the shard: an OpFactory, made once per registry
 * version. It names the op's input field, whether it needs misses, and the form
 * its state takes in the shard's columns (shard/columns/): a ring member
 * (`shared`), a slab row (`fixed`), kept values (`kept`), a pooled filter
 * (`bloom`), exact values then a sketch (`exact`), or an OpState object per
 * entity (`object`, for every other op). Each op has one of these forms; the
 * shard applies each row that reaches the table as
 *
 *   x = factory.field === null ? undefined : row[factory.field]   (compiled accessor)
 *   if (where === null || where(row) === true) update(x, t, row)
 *   else if (factory.wantsMiss) miss(t)
 *
 * Times are server wall-clock milliseconds (processing time). A read at `now` is
 * asked with the query time (>= every t passed to update so far).
 */
import type { JsonValue, Row, Value } from '../types';
import type { SharedWindow } from './factory';
import type { FixedOp } from './fixed';
import type { PointAgg } from './point';
import type { BloomGeometry } from './sketch/bloom';
import type { WindowAgg } from './val_window';

export interface OpState {
  /** A matching event. `x` is row[field] (undefined when the op has no field). */
  update(x: Value | undefined, t: number, row: Row): void;
  /** An event that reached the feature but failed its `where` predicate. */
  miss(t: number): void;
  /** The feature value for /get at query time `now`. */
  read(now: number): JsonValue;
  /** Plain structured-cloneable data (numbers, strings, arrays, typed arrays, plain objects). */
  save(): unknown;
  /**
   * True when, from time `t` on, this state is indistinguishable from a fresh one
   * (every read at now >= t and every later update gives what a fresh state would):
   * e.g. a sliding window whose events and buckets have all left it. An idle entity
   * whose every state says so is dropped instead of stored cold (shard/state/state.ts).
   * Absent = never (lifetime states, states that remember a previous value).
   */
  emptyAt?(t: number): boolean;
}

/** An op whose state is an object per entity (ObjectColumn; a lifetime sketch past its exact values, ExactColumn). */
export interface ObjectOp {
  create(): OpState;
  /** Inverse of OpState.save(). */
  load(saved: unknown): OpState;
}

export interface OpFactory {
  /** Canonical op name (aliases resolved). */
  readonly op: string;
  /** Column read as `x`, or null. */
  readonly field: string | null;
  /** True when the op needs `miss` calls (ratio, streaks); lets the shard skip them otherwise. */
  readonly wantsMiss: boolean;
  /** Set for a sliding-window op the shard can serve from a shared ring (ops/factory.ts); null otherwise. */
  readonly shared?: SharedWindow | null;
  /** Set for a lifetime op of a fixed number of doubles (ops/fixed.ts); null otherwise. */
  readonly fixed?: FixedOp | null;
  /** Set for a lifetime point op (first, last, *_n, lag): its parameters (ops/point.ts PointAgg); null otherwise. */
  readonly kept?: PointAgg | null;
  /** Set for bloom_member: its filter geometry (shard/columns/bloom_column.ts); null otherwise. */
  readonly bloom?: BloomGeometry | null;
  /** Set for a lifetime value op over a timeless agg (shard/columns/exact_column.ts): the agg; null otherwise. */
  readonly exact?: WindowAgg<unknown> | null;
  /** The op's state as an object per entity; null for an op the shard keeps in a ring, a slab row, kept values or a pooled filter. */
  readonly object: ObjectOp | null;
}
