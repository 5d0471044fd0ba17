/**
 * Dedupe entries a shard has logged, so that they survive snapshots and restarts
 * (DESIGN.md section 4). One insertion-ordered map per event: entries of one event
 * share its window, so the oldest entry is always at the head and expiry is a
 * sweep from the head.
 */
export type DedupeEntry = [string, string, number, number, number]; // event, value, lsn, version, t

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

  entries(now: number): DedupeEntry[] {
    return [...this.each(now)];
  }

  /**
   * The entries one at a time, after a sweep (a periodic snapshot writes them
   * across slices). An entry recorded while this is walked may or may not be seen:
   * it comes from a push after the snapshot's start, which recovery replays.
   */
  *each(now: number): Generator<DedupeEntry> {
    this.sweep(now);
    for (const [event, e] of this.#byEvent) for (const [value, [lsn, v, t]] of e.entries) yield [event, value, lsn, v, t];
  }

  load(entries: readonly DedupeEntry[], windowOf: (event: string) => number): void {
    for (const [event, value, lsn, v, t] of entries) this.record(event, windowOf(event), value, lsn, v, t);
  }

  clear(): void {
    this.#byEvent.clear();
  }
}
