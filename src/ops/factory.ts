/**
 * The OpFactory every compiled feature hands to the shard: a canonical name, the
 * column read as x, whether `miss` matters, and the form of its state (op.ts).
 * `make` (the object form) runs once per new entity (not per event), so a closure
 * is fine here.
 */
import type { ObjectOp, OpFactory, OpState } from './op';
import type { NumWindowCfg } from './num_window';
import type { ValWindowCfg, WindowAgg } from './val_window';
import type { FixedOp } from './fixed';
import type { PointAgg } from './point';
import type { BloomGeometry } from './sketch/bloom';

/**
 * A sliding-window op whose raw events the shard may keep in a ring shared with
 * the table's other windowed features (shard/columns/ring_group.ts): the op is then its
 * per-feature config (bucket part, fold, result), not a state object per entity.
 * `num` for the numeric ops (num_window.ts), `val` for the accumulator ops
 * (val_window.ts); null for every other op (one OpState per entity).
 */
export type SharedWindow = { num: NumWindowCfg; val: null } | { num: null; val: ValWindowCfg<unknown> };

/** A state that can be refilled from its own save(). */
export interface StoredState extends OpState {
  restore(saved: unknown): void;
}

export class Factory implements OpFactory {
  readonly op: string;
  readonly field: string | null;
  readonly wantsMiss: boolean;
  readonly shared: SharedWindow | null;
  /** A lifetime op of a fixed number of doubles (fixed.ts): a slab row per entity in the shard; null otherwise. */
  readonly fixed: FixedOp | null;
  /** A lifetime point op (first, last, first_n, last_n, most_recent_n, lag): kept values per entity in a slab (shard/columns/kept_column.ts); null otherwise. */
  readonly kept: PointAgg | null;
  /** bloom_member: its filter geometry (pooled filters per table, shard/columns/bloom_column.ts); null otherwise. */
  readonly bloom: BloomGeometry | null;
  /** A lifetime value op over a timeless agg (n_unique, quantile, top_k, entropy): its agg, for a slot's values kept exactly while few (shard/columns/exact_column.ts); null otherwise. */
  readonly exact: WindowAgg<unknown> | null;
  readonly object: ObjectOp | null;

  /** `make`: the object form's state (null for an op kept in a column form: shared, fixed or kept). */
  constructor(op: string, field: string | null, wantsMiss: boolean, make: (() => StoredState) | null, shared: SharedWindow | null = null, fixed: FixedOp | null = null, kept: PointAgg | null = null, bloom: BloomGeometry | null = null, exact: WindowAgg<unknown> | null = null) {
    this.op = op;
    this.field = field;
    this.wantsMiss = wantsMiss;
    this.object = make === null ? null : new MadeState(make);
    this.shared = shared;
    this.fixed = fixed;
    this.kept = kept;
    this.bloom = bloom;
    this.exact = exact;
  }
}

class MadeState implements ObjectOp {
  constructor(private readonly make: () => StoredState) {}

  create(): OpState {
    return this.make();
  }

  load(saved: unknown): OpState {
    const st = this.make();
    st.restore(saved);
    return st;
  }
}
