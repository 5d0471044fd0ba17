/**
 * Idle-entity eviction (`cold_after` on an event source; spec 2.1 "idle-eviction
 * threshold": an entity that has not received the event for this long is cold
 * and may leave hot memory).
 *
 * A cold entity leaves hot memory without losing anything: its slot's state is
 * saved and serialized into one compact Buffer (no per-object overhead), handed
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
import { deserialize, serialize } from 'node:v8';
import type { EntityIndex } from './entity_index';
import { COLD_SWEEP_CLOCK_STRIDE } from '../limits';
import type { EntitySave, TableColumns } from './table_columns';


/**
 * The frozen encoding of the entity at `slot`: [lastT, lastLsn, EntitySave]
 * (table_columns.ts: per ring group its entries and buckets, per other feature
 * its OpState.save()), v8-serialized. Valid for the table layout it was frozen
 * under: a layout change thaws every cold entity first (state.ts carryOver).
 */
export function freeze(cols: TableColumns, slot: number): Buffer {
  const index = cols.index;
  return serialize([index.lastT[slot], index.lastLsn[slot], cols.save(slot)]);
}

/** The parts of a frozen entity, without loading its states. */
export function frozenParts(buf: Buffer): { lastT: number; lastLsn: number; saved: EntitySave } {
  const [lastT, lastLsn, saved] = deserialize(buf) as [number, number, EntitySave];
  return { lastT, lastLsn, saved };
}

/** Makes a frozen entity hot again under `key`; returns its slot. */
export function thaw(buf: Buffer, cols: TableColumns, key: string): number {
  const { lastT, lastLsn, saved } = frozenParts(buf);
  return cols.addSaved(key, lastT, lastLsn, saved);
}

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
