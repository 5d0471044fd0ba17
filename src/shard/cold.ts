/**
 * Idle-entity eviction (`cold_after` on an event source; spec 2.1 "idle-eviction
 * threshold": an entity that has not received the event for this long is cold
 * and may leave hot memory).
 *
 * A cold entity leaves hot memory without losing anything: its op states are
 * saved and serialized into one compact Buffer (no per-object overhead), kept in
 * the table's cold map, and thawed back into live states by the next push or
 * read of that key. Lifetime aggregates therefore keep their exact values, and
 * windowed ones read exactly as if the entity had stayed hot. Snapshots carry
 * cold entities as their buffers.
 *
 * The sweep is incremental: each tick looks at a bounded number of entities
 * (COLD_SWEEP_ENTITIES_PER_TICK), resuming where the previous tick stopped, so
 * a shard never stalls on a large table.
 */
import { deserialize, serialize } from 'node:v8';
import type { TablePlan } from '../registry/compile';
import type { OpState } from '../ops/op';

/** Entities examined per sweep tick, per shard. */
export const COLD_SWEEP_ENTITIES_PER_TICK = 20_000;
/** Sweep cadence. */
export const COLD_SWEEP_INTERVAL_MS = 1_000;

export interface HotEntity {
  states: OpState[];
  lastT: number;
  lastLsn: number;
}

export function freeze(ent: HotEntity): Buffer {
  const saved = new Array(ent.states.length);
  for (let i = 0; i < saved.length; i++) saved[i] = ent.states[i].save();
  return serialize([ent.lastT, ent.lastLsn, saved]);
}

/** The parts of a frozen entity, without loading its states. */
export function frozenParts(buf: Buffer): { lastT: number; lastLsn: number; saved: unknown[] } {
  const [lastT, lastLsn, saved] = deserialize(buf) as [number, number, unknown[]];
  return { lastT, lastLsn, saved };
}

/** Live states from a frozen entity, for the plan it was frozen under. */
export function thaw(buf: Buffer, plan: TablePlan): HotEntity {
  const { lastT, lastLsn, saved } = frozenParts(buf);
  const states = plan.features.map((f, i) => f.factory.load(saved[i]));
  return { states, lastT, lastLsn };
}

/** Resumable cursor over one table's hot map. */
export class SweepCursor {
  #it: Iterator<[string, HotEntity]> | null = null;
  #map: Map<string, HotEntity> | null = null;

  /** Freezes up to `budget` idle entities' worth of scanning; returns entities frozen. */
  sweep(rows: Map<string, HotEntity>, cold: Map<string, Buffer>, idleBeforeMs: number, budget: number): number {
    if (this.#map !== rows) { this.#map = rows; this.#it = null; }
    let frozen = 0;
    for (let n = 0; n < budget; n++) {
      if (this.#it === null) this.#it = rows.entries();
      const next = this.#it.next();
      if (next.done) { this.#it = null; break; }
      const [key, ent] = next.value;
      if (ent.lastT >= idleBeforeMs) continue;
      cold.set(key, freeze(ent));
      // Deleting the current entry during Map iteration is safe in JS.
      rows.delete(key);
      frozen++;
    }
    return frozen;
  }
}
