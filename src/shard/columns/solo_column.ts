/**
 * The state of one feature that does not read a shared ring (table_columns.ts),
 * for every entity slot of its table. The kinds:
 *
 *   FixedColumn   a lifetime op of K doubles (ops/fixed.ts: count, sum, mean,
 *                 min/max, var/std/z_score, ratio, ewma/ewvar/ew_zscore,
 *                 decayed_sum/count, first_seen/last_seen/age/has_seen/
 *                 time_since/first_seen_in_window): one Float64Array, row `slot`
 *                 at slot * K, grown by doubling with the entity index
 *   BloomColumn   bloom_member: filters in pooled blocks (bloom_column.ts)
 *   KeptColumn    the lifetime point ops (first, last, first_n, last_n,
 *                 most_recent_n, lag): kept values as cells (kept_column.ts)
 *   ExactColumn   the lifetime sketch ops (n_unique, quantile, top_k, entropy):
 *                 a few values as cells, the op's object past them (exact_column.ts)
 *   ObjectColumn  every other op (the op's object form, OpFactory.object): one
 *                 OpState per slot: ops whose state is a structure of its own
 *                 (histograms, geo paths, streaks, reservoirs, ...), ratio and
 *                 the geo ops over a window, bloom filters too large to pool
 *
 * Each op is held by exactly one kind (its factory's form, ops/op.ts); a slot's
 * save is that kind's, the form snapshots and cold entities keep.
 */
import type { FixedOp } from '../../ops/fixed';
import { strict as assert } from 'node:assert';
import type { ObjectOp, OpFactory, OpState } from '../../ops/op';
import type { JsonValue, Row, Value } from '../../types';
import { zeroRange } from '../state/entity_index';
import { grown } from '../../util/unaccounted';
import type { InternTable } from '../state/intern';
import { BloomColumn, bloomPooled } from './bloom_column';
import { KeptColumn } from './kept_column';
import { ExactColumn } from './exact_column';

export interface SoloColumn {
  /** A fresh (empty) state at `slot`. */
  create(slot: number): void;
  /** Forgets the state at `slot`. */
  clear(slot: number): void;
  update(slot: number, x: Value | undefined, t: number, row: Row): void;
  miss(slot: number, t: number): void;
  read(slot: number, now: number): JsonValue;
  save(slot: number): unknown;
  load(slot: number, saved: unknown): void;
  /** The entity index grew to `capacity` slots. */
  grow(capacity: number): void;
  /** From time `t` on the state at `slot` is indistinguishable from a fresh one (OpState.emptyAt). */
  emptyAt(slot: number, t: number): boolean;
}

export class FixedColumn implements SoloColumn {
  readonly width: number;
  data: Float64Array;
  constructor(readonly op: FixedOp, capacity: number) {
    this.width = op.width;
    this.data = new Float64Array(capacity * op.width);
  }
  create(slot: number): void {
    zeroRange(this.data, slot * this.width, (slot + 1) * this.width);
  }
  clear(slot: number): void {
    this.create(slot);
  }
  update(slot: number, x: Value | undefined, t: number): void {
    this.op.update(this.data, slot * this.width, x, t);
  }
  miss(slot: number, t: number): void {
    this.op.miss(this.data, slot * this.width, t);
  }
  read(slot: number, now: number): JsonValue {
    return this.op.read(this.data, slot * this.width, now);
  }
  save(slot: number): unknown {
    return this.op.save(this.data, slot * this.width);
  }
  load(slot: number, saved: unknown): void {
    this.create(slot);
    this.op.load(this.data, slot * this.width, saved);
  }
  /** Lifetime states remember: never empty once they exist. */
  emptyAt(): boolean {
    return false;
  }
  grow(capacity: number): void {
    this.data = grown(this.data, capacity * this.width);
  }
}

export class ObjectColumn implements SoloColumn {
  readonly states: Array<OpState | undefined> = [];
  constructor(readonly op: ObjectOp) {}
  create(slot: number): void {
    this.states[slot] = this.op.create();
  }
  clear(slot: number): void {
    this.states[slot] = undefined;
  }
  update(slot: number, x: Value | undefined, t: number, row: Row): void {
    (this.states[slot] as OpState).update(x, t, row);
  }
  miss(slot: number, t: number): void {
    (this.states[slot] as OpState).miss(t);
  }
  read(slot: number, now: number): JsonValue {
    return (this.states[slot] as OpState).read(now);
  }
  save(slot: number): unknown {
    return (this.states[slot] as OpState).save();
  }
  load(slot: number, saved: unknown): void {
    this.states[slot] = this.op.load(saved);
  }
  grow(): void {}
  emptyAt(slot: number, t: number): boolean {
    const st = this.states[slot] as OpState;
    return st.emptyAt !== undefined && st.emptyAt(t);
  }
}

/** The column a feature without a shared ring gets; `internOf` gives the intern table of a field (kept values). */
export function soloColumn(factory: OpFactory, capacity: number, internOf: (field: string) => InternTable): SoloColumn {
  const fixed = factory.fixed;
  if (fixed !== null && fixed !== undefined) return new FixedColumn(fixed, capacity);
  const bloom = factory.bloom;
  if (bloom !== null && bloom !== undefined && bloomPooled(bloom)) return new BloomColumn(bloom, capacity);
  const kept = factory.kept;
  if (kept !== null && kept !== undefined && factory.field !== null) return new KeptColumn(kept, internOf(factory.field), capacity);
  const exact = factory.exact;
  if (exact !== null && exact !== undefined && factory.field !== null) return new ExactColumn(factory, exact, internOf(factory.field), capacity);
  assert(factory.object !== null, `op ${factory.op} has no column form and no object form`);
  return new ObjectColumn(factory.object);
}
