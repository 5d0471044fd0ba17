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
    this.sweep(now);
    const out: DedupeEntry[] = [];
    for (const [event, e] of this.#byEvent) for (const [value, [lsn, v, t]] of e.entries) out.push([event, value, lsn, v, t]);
    return out;
  }

  load(entries: readonly DedupeEntry[], windowOf: (event: string) => number): void {
    for (const [event, value, lsn, v, t] of entries) this.record(event, windowOf(event), value, lsn, v, t);
  }

  clear(): void {
    this.#byEvent.clear();
  }
}
