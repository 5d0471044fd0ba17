/**
 * Cells a registry change dropped that still hold references in the shard's
 * intern tables (ShardState.interns): the ring groups and kept-value columns of
 * a dropped table, or of features a carried table no longer has. The intern
 * tables outlive them, so each such cell must give its reference back, or its
 * value would stay interned for good. Releasing 1M entities takes ~60-170 ms,
 * so the shard does it in slices between batches (ShardState.releaseDropped,
 * run first by every cold-sweep slice), not inside the install.
 *
 * Every slot below `end` is visited whatever the index says now: a carried
 * table's index goes on (a slot freed and reused since still holds the dropped
 * parts' cells of the entity it had), and a slot free at the drop holds none
 * (an entity leaving empties every column it had then).
 */
import { DROPPED_CELLS_CLOCK_MASK } from '../../limits';
import type { KeptColumn } from './kept_column';
import type { ExactColumn } from './exact_column';
import type { RingGroup } from './ring_group';

export class DroppedCells {
  #next = 0;

  constructor(
    readonly groups: readonly RingGroup[],
    readonly kept: ReadonlyArray<KeptColumn | ExactColumn>,
    /** Slots the parts had state for (the index's high mark at the drop). */
    readonly end: number,
  ) {}

  get empty(): boolean {
    return this.groups.length === 0 && this.kept.length === 0;
  }

  /** Releases slots until `deadline` (performance.now()); true when every slot is done. */
  step(deadline: number): boolean {
    const { groups, kept, end } = this;
    for (let s = this.#next; s < end; s++) {
      for (let i = 0; i < groups.length; i++) groups[i].releaseRefs(s);
      for (let i = 0; i < kept.length; i++) kept[i].clear(s);
      if ((s & DROPPED_CELLS_CLOCK_MASK) === DROPPED_CELLS_CLOCK_MASK && performance.now() >= deadline) {
        this.#next = s + 1;
        return false;
      }
    }
    this.#next = end;
    return true;
  }
}
