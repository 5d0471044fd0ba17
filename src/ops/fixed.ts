/**
 * Ops whose state is a fixed number of doubles (the lifetime core ops,
 * num_life.ts): the shard keeps them as rows of one Float64Array per feature
 * (shard/columns/solo_column.ts FixedColumn), indexed by entity slot. A row of
 * zeros is the empty state.
 */
import type { JsonValue, Value } from '../types';

export interface FixedOp {
  /** Doubles per row. */
  readonly width: number;
  update(a: Float64Array, at: number, x: Value | undefined, t: number): void;
  miss(a: Float64Array, at: number, t: number): void;
  read(a: Float64Array, at: number, now: number): JsonValue;
  /** The row as plain data (the format snapshots and cold entities keep). */
  save(a: Float64Array, at: number): unknown;
  load(a: Float64Array, at: number, saved: unknown): void;
}

/** A row as saved: its `width` numbers (the save format of most fixed ops). */
export function rowSave(a: Float64Array, at: number, width: number): number[] {
  const out: number[] = new Array(width);
  for (let i = 0; i < width; i++) out[i] = a[at + i];
  return out;
}

/** Inverse of rowSave. */
export function rowLoad(a: Float64Array, at: number, saved: unknown, width: number): void {
  const s = saved as number[];
  for (let i = 0; i < width; i++) a[at + i] = s[i];
}

/** A fixed op whose save format is its row as `width` numbers (rowSave/rowLoad). */
export abstract class RowFixedOp implements FixedOp {
  abstract readonly width: number;
  abstract update(a: Float64Array, at: number, x: Value | undefined, t: number): void;
  abstract miss(a: Float64Array, at: number, t: number): void;
  abstract read(a: Float64Array, at: number, now: number): JsonValue;
  save(a: Float64Array, at: number): unknown {
    return rowSave(a, at, this.width);
  }
  load(a: Float64Array, at: number, saved: unknown): void {
    rowLoad(a, at, saved, this.width);
  }
}
