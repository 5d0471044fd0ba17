/**
 * Dedupe of spec 4.1 rule 7 on the front thread: (event, dedupe value) -> the
 * push that first used it. A replay inside the window gets that push's ack with
 * `idempotent_replay: true`; a replay that arrives while the original is still
 * in flight waits for it. Entries expire with their event's window; a failed
 * original is forgotten so that a retry can succeed.
 */
import { DEDUPE_ENTRIES_MAX } from '../limits';

export class DedupeEntry {
  /** The replay body once the original push is acknowledged; null while in flight. */
  replayBody: string | null = null;
  waiters: Array<(body: string | null) => void> | null = null;
  constructor(readonly expiresMs: number) {}
}

export class DedupeStore {
  /** Insertion-ordered per event: entries of one event share a window, so expiry sweeps from the head. */
  readonly #byEvent = new Map<string, Map<string, DedupeEntry>>();
  #size = 0;

  constructor(readonly capacity: number = DEDUPE_ENTRIES_MAX) {}

  lookup(event: string, value: string, now: number): DedupeEntry | null {
    const m = this.#byEvent.get(event);
    if (m === undefined) return null;
    const e = m.get(value);
    if (e === undefined) return null;
    if (e.expiresMs <= now) { m.delete(value); this.#size--; return null; }
    return e;
  }

  /** Null when the store is full: the caller refuses the push (dedupe_capacity_exceeded). */
  insert(event: string, value: string, expiresMs: number): DedupeEntry | null {
    if (this.#size >= this.capacity) return null;
    let m = this.#byEvent.get(event);
    if (m === undefined) { m = new Map(); this.#byEvent.set(event, m); }
    const e = new DedupeEntry(expiresMs);
    m.set(value, e);
    this.#size++;
    return e;
  }

  forget(event: string, value: string): void {
    if (this.#byEvent.get(event)?.delete(value)) this.#size--;
  }

  sweep(now: number): void {
    for (const m of this.#byEvent.values()) {
      for (const [k, e] of m) {
        if (e.expiresMs > now) break;
        m.delete(k);
        this.#size--;
      }
    }
  }

  clear(): void {
    this.#byEvent.clear();
    this.#size = 0;
  }

  get size(): number {
    return this.#size;
  }
}
