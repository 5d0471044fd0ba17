/**
 * Idle-entity eviction (`cold_after` on an event source; spec 2.1 "idle-eviction
 * threshold": an entity that has not received the event for this long is cold
 * and may leave hot memory).
 *
 * A cold entity leaves hot memory without losing anything: its slot's bytes are
 * copied out of the columns into one compact Buffer (frozen_entity.ts freeze:
 * lastT, lastLsn, ring cells, lengths and skip counts, slab rows of the
 * fixed columns, and a small rest for what is genuinely an object: buckets,
 * kept and object-column saves, the values of interned ids; plain-encoded, or
 * v8-serialized when it holds buckets or anything but JSON-like arrays), handed
 * to the table's cold store (cold_store.ts: on disk in the data dir, in memory in
 * memory-only mode), and thawed back into live states by the next push or read of
 * that key. An entity whose every state is back to empty is dropped instead
 * (OpState.emptyAt; state.ts). Lifetime aggregates therefore keep their exact values, and
 * windowed ones read exactly as if the entity had stayed hot. Snapshots carry
 * cold entities as their buffers.
 *
 * The sweep is incremental: each tick looks at a bounded number of entities
 * (COLD_SWEEP_ENTITIES_PER_TICK) within a time budget (COLD_SWEEP_SLICE_MS),
 * resuming where the previous tick stopped, so a shard never stalls on a large table.
 */
import type { EntityIndex } from '../state/entity_index';
import { COLD_SWEEP_CLOCK_STRIDE } from '../../limits';

/** Resumable cursor over one table's slots. */
export class SweepCursor {
  #at = 0;
  #index: EntityIndex | null = null;

  /**
   * Looks at up to `budget` entities, resuming where the last call stopped, and
   * hands the slots of those idle since before `idleBeforeMs` to `evict` (which
   * may release them: a released slot is reused only by a later add). Returns
   * entities handed over.
   */
  sweep(index: EntityIndex, idleBeforeMs: number, budget: number, evict: (slot: number) => void, deadline = Number.POSITIVE_INFINITY): number {
    if (this.#index !== index) { this.#index = index; this.#at = 0; }
    let evicted = 0;
    for (let n = 0; n < budget; n++) {
      if (n % COLD_SWEEP_CLOCK_STRIDE === COLD_SWEEP_CLOCK_STRIDE - 1 && performance.now() > deadline) break;
      if (this.#at >= index.high) { this.#at = 0; break; }
      const slot = this.#at++;
      if (!index.live(slot) || index.lastT[slot] >= idleBeforeMs) continue;
      evict(slot);
      evicted++;
    }
    return evicted;
  }
}
