/**
 * Dedupe entries a shard has logged: a push's dedupe value with the ack it got
 * (its LSN and registry version) and its server time. The shard that logged the
 * push keeps them in its snapshots and rebuilds them from its WAL (PUSH records
 * carry the value), so a replay of the same value after a restart answers with
 * the original ack; each expires with its event's dedupe window. The front seeds
 * its own dedupe store (front/dedupe.ts) from these at boot.
 *
 * One insertion-ordered map per event: entries of one event share its window, so
 * the oldest entry is always at the head and expiry is a sweep from the head.
 */
/** A logged entry, as snapshots store it: event, value, lsn, registry version, t. */
export type DedupeLogEntry = [string, string, number, number, number];

export class DedupeLog {
  readonly #byEvent = new Map<string, { windowMs: number; entries: Map<string, [number, number, number]> }>();

  record(event: string, windowMs: number, value: string, lsn: number, version: number, t: number): void {
    let e = this.#byEvent.get(event);
    if (e === undefined) { e = { windowMs, entries: new Map() }; this.#byEvent.set(event, e); }
    e.windowMs = windowMs;
    if (!e.entries.has(value)) e.entries.set(value, [lsn, version, t]);
  }

  sweep(now: number): void {
    for (const e of this.#byEvent.values()) {
      for (const [value, [, , t]] of e.entries) {
        if (t + e.windowMs > now) break;
        e.entries.delete(value);
      }
    }
  }

  entries(now: number): DedupeLogEntry[] {
    return [...this.each(now)];
  }

  /**
   * The entries one at a time, after a sweep (a periodic snapshot writes them
   * across slices). An entry recorded while this is walked may or may not be seen:
   * it comes from a push after the snapshot's start, which recovery replays.
   */
  *each(now: number): Generator<DedupeLogEntry> {
    this.sweep(now);
    for (const [event, e] of this.#byEvent) for (const [value, [lsn, v, t]] of e.entries) yield [event, value, lsn, v, t];
  }

  load(entries: readonly DedupeLogEntry[], windowOf: (event: string) => number): void {
    for (const [event, value, lsn, v, t] of entries) this.record(event, windowOf(event), value, lsn, v, t);
  }

  clear(): void {
    this.#byEvent.clear();
  }
}
