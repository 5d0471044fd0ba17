/**
 * One feature reading a ring group's ring (ring_group.ts), and the ring's hashed
 * fields.
 *
 * Hashed fields: a field that only n_unique members read (the fraud tables' user,
 * card and device ids) holds each value's 53-bit hashValue in its cells (null
 * cells for what n_unique does not count), the hash the sketch would compute: no
 * intern table, no string for a new value, no reference to take and give back,
 * and the push computes the hash from the record's bytes (push_apply.ts). Those
 * members read through DistinctHashAgg (ops/sketch_ops.ts). A group's hashed
 * fields are fixed when it is made (a later member change keeps them) and recorded
 * in its layout (table_columns.ts LayoutMeta), so saves of its cells (hashes) only
 * load where cells are hashes (TableColumns.planLoad).
 */
import { strict as assert } from 'node:assert';
import type { Value } from '../../types';
import type { NumWindowCfg } from '../../ops/num_window';
import type { ValWindowCfg } from '../../ops/val_window';
import { hashedCfg, isScalar, readsHashes } from '../../ops/sketch_ops';
import { hashValue } from '../../ops/sketch/hash';

/** One feature reading a group's ring. */
export class RingMember {
  /** Its position in the group's members (its column in the bucket records). */
  at = -1;
  /** Its window's position in the group's windows. */
  win = 0;
  constructor(
    /** Index of the feature in its table plan. */
    public feature: number,
    /** Ring column of its field, -1 without a field. */
    readonly col: number,
    public num: NumWindowCfg | null,
    public val: ValWindowCfg<unknown> | null,
  ) {
    assert((num === null) !== (val === null));
  }
}

/** What a hashed field's cell holds for value v: its hashValue, null for what n_unique does not count. */
export function hashOrNull(v: Value | undefined): number | null {
  return isScalar(v) ? hashValue(v) : null;
}

/**
 * The fields of a new group that hold hashes: those every member that reads them
 * is an n_unique (readsHashes), and that one reads at least.
 */
export function hashedFieldsOf(fields: readonly string[], members: readonly RingMember[]): string[] {
  return fields.filter((_, c) => {
    const readers = members.filter((m) => m.col === c);
    return readers.length > 0 && readers.every((m) => m.val !== null && readsHashes(m.val));
  });
}

/** Member m of a hashed field reads hashes: its config takes DistinctHashAgg (only n_unique may). */
export function readHashes(m: RingMember): void {
  assert(m.val !== null && readsHashes(m.val), 'only n_unique reads a hashed field');
  m.val = hashedCfg(m.val);
}
