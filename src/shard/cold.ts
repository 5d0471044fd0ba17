/**
 * Idle-entity eviction (`cold_after` on an event source; spec 2.1 "idle-eviction
 * threshold": an entity that has not received the event for this long is cold
 * and may leave hot memory).
 *
 * A cold entity leaves hot memory without losing anything: its op states are
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
import type { TablePlan } from '../registry/compile';
import type { OpState } from '../ops/op';

/** Entities examined per sweep tick, per shard (at most; COLD_SWEEP_SLICE_MS bounds the time). */
export const COLD_SWEEP_ENTITIES_PER_TICK = 100_000;
/**
 * Sweep cadence. Often and short: 150k new keys every 6 s (the churn bench) need
 * 25k entities a second out of memory; a tick examines ~20k entities per ms and
 * drops ~5k or freezes a few hundred per ms, so 5 ms slices every 100 ms keep up
 * with dropping and bound the stall a batch can see behind a sweep.
 */
export const COLD_SWEEP_INTERVAL_MS = 100;
/** Time budget of one sweep tick, ms (checked every COLD_SWEEP_CLOCK_STRIDE entities). */
export const COLD_SWEEP_SLICE_MS = 5;
const COLD_SWEEP_CLOCK_STRIDE = 256;

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

  /**
   * Looks at up to `budget` entities, resuming where the last call stopped, and
   * hands those idle since before `idleBeforeMs` to `evict` (which removes them
   * from `rows`: deleting the current entry during Map iteration is safe in JS).
   * Returns entities evicted.
   */
  sweep(rows: Map<string, HotEntity>, idleBeforeMs: number, budget: number, evict: (key: string, ent: HotEntity) => void, deadline = Number.POSITIVE_INFINITY): number {
    if (this.#map !== rows) { this.#map = rows; this.#it = null; }
    let evicted = 0;
    for (let n = 0; n < budget; n++) {
      if (n % COLD_SWEEP_CLOCK_STRIDE === COLD_SWEEP_CLOCK_STRIDE - 1 && performance.now() > deadline) break;
      if (this.#it === null) this.#it = rows.entries();
      const next = this.#it.next();
      if (next.done) { this.#it = null; break; }
      const [key, ent] = next.value;
      if (ent.lastT >= idleBeforeMs) continue;
      evict(key, ent);
      evicted++;
    }
    return evicted;
  }
}
