/**
 * The front's LSN sequence (docs/durability.md "LSNs"): one counter for pushes
 * from both transports and for registry installs and resets, taken in arrival
 * order, so records grow strictly in every shard and `ack_lsn` never goes back.
 *
 * Seeded once, at boot, above every LSN any shard recovered (lastRecoveredLsn:
 * snapshot, WAL and skipped corrupt records, ShardHello.lastLsn). Nothing reseeds
 * it later: a shard thread that dies recovers its own WAL below the counter, and a
 * reset or snapshot takes LSNs from it like any record. Cluster mode acks stream
 * sequences instead (cluster/ingest.ts); the counter still numbers registry items.
 */
import type { ShardHello } from '../protocol/messages';

/** The highest LSN the shards recovered (0: none), from their hellos. */
export function lastRecoveredLsn(hellos: ReadonlyArray<Pick<ShardHello, 'lastLsn'>>): number {
  return Math.max(0, ...hellos.map((h) => h.lastLsn));
}

export class LsnCounter {
  #next: number;

  /** `lastLsn`: the highest LSN already used (lastRecoveredLsn at boot). */
  constructor(lastLsn: number) {
    this.#next = lastLsn + 1;
  }

  /** The next LSN; each is handed out once. */
  take(): number {
    return this.#next++;
  }
}
