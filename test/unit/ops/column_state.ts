/**
 * One entity's state of a compiled op, kept where the shard keeps it
 * (src/shard/columns/): a windowed op that can share a ring in a ring group of its
 * own (RingGroup with one member, as a feature with `where` has), every other op in
 * its solo column (soloColumn: a fixed, kept, exact-values or bloom column, or an
 * object column of the op's own OpState). The op tests drive ops through this, so
 * they test the implementation the server runs, behind the OpState interface.
 *
 * An event that fails the feature's `where` reaches a ring group not at all (the
 * table pushes only rows that pass it) and a solo column as a miss.
 */
import type { OpFactory, OpState } from '../../../src/ops/op';
import type { JsonValue, Row, Value } from '../../../src/types';
import { RingGroup } from '../../../src/shard/columns/ring_group';
import { hashedFieldsOf, RingMember } from '../../../src/shard/columns/ring_member';
import { ObjectColumn, soloColumn, type SoloColumn } from '../../../src/shard/columns/solo_column';
import { InternTable } from '../../../src/shard/state/intern';

/** An OpState over the shard's column of the op, with its save loaded back by restore(). */
export interface ColumnState extends OpState {
  restore(saved: unknown): void;
}

const SLOT = 0;
/** No interned ids or record hashes handed in: the ring interns and hashes each value itself, as every path but PUSH records does. */
const NO_IDS = new Int32Array(0);
const NO_HASHES = new Float64Array(0);

class RingState implements ColumnState {
  readonly group: RingGroup;
  readonly member: RingMember;
  constructor(readonly factory: OpFactory) {
    const sh = factory.shared!;
    const fields = factory.field === null ? [] : [factory.field];
    this.member = new RingMember(0, fields.length === 0 ? -1 : 0, sh.num, sh.val);
    const windowMs = sh.num !== null ? sh.num.windowMs : sh.val.windowMs;
    this.group = new RingGroup([windowMs], null, fields, fields.map(() => new InternTable()), [this.member], 1, hashedFieldsOf(fields, [this.member]));
  }
  /** The row the ring reads: its one field, `x` (the op tests pass x with or without the row). */
  readonly #row: Row = {};
  update(x: Value | undefined, t: number): void {
    if (this.factory.field !== null) this.#row[this.factory.field] = x;
    this.group.push(SLOT, this.#row, t, NO_IDS, NO_HASHES);
  }
  miss(): void {}
  read(now: number): JsonValue {
    return this.group.read(this.member, SLOT, now);
  }
  save(): unknown {
    return this.group.save(SLOT);
  }
  restore(saved: unknown): void {
    this.group.clear(SLOT);
    this.group.load(SLOT, saved as Parameters<RingGroup['load']>[1]);
  }
  emptyAt(t: number): boolean {
    return this.group.emptyAt(SLOT, t);
  }
}

class SoloState implements ColumnState {
  readonly col: SoloColumn;
  constructor(readonly factory: OpFactory) {
    const intern = new InternTable();
    this.col = soloColumn(factory, 1, () => intern);
    this.col.create(SLOT);
  }
  update(x: Value | undefined, t: number, row: Row): void {
    this.col.update(SLOT, x, t, row);
  }
  miss(t: number): void {
    this.col.miss(SLOT, t);
  }
  read(now: number): JsonValue {
    return this.col.read(SLOT, now);
  }
  save(): unknown {
    return this.col.save(SLOT);
  }
  restore(saved: unknown): void {
    this.col.load(SLOT, saved);
  }
}

/** A state that can tell it is empty from a time on (a window): its column answers; lifetime ones have no emptyAt (OpState). */
class SoloWindowState extends SoloState {
  emptyAt(t: number): boolean {
    return this.col.emptyAt(SLOT, t);
  }
}

/** A fresh state of `factory` for one entity, in the shard's column for it. */
export function columnState(factory: OpFactory): ColumnState {
  if (factory.shared !== null && factory.shared !== undefined) return new RingState(factory);
  const st = new SoloState(factory);
  const col = st.col;
  if (col instanceof ObjectColumn && col.states[SLOT]!.emptyAt !== undefined) return new SoloWindowState(factory);
  return st;
}

/** columnState() loaded from a save of one (the saved form snapshots and cold entities hold). */
export function loadColumnState(factory: OpFactory, saved: unknown): ColumnState {
  const st = columnState(factory);
  st.restore(saved);
  return st;
}
