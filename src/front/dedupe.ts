/**
 * Dedupe of spec 4.1 rule 7 on the front thread: (event, dedupe value) -> the
 * push that first used it. A replay inside the window gets that push's ack with
 * `idempotent_replay: true`; a replay that arrives while the original is still
 * in flight waits for it. Entries expire with their event's window; a failed
 * original is forgotten so that a retry can succeed.
 *
 * DedupeStore is the table; PushDedupe is what the front's push path does with it
 * (claim a value or answer the replay, settle the entry when the push is answered,
 * refuse when full) and the reseed from the shards' recovered entries at boot.
 *
 * A window is how long a value is remembered, so it counts on the monotonic clock
 * (performance.now()): a wall clock step forward must not expire it early (a
 * duplicate would be applied twice) and one back must not keep it longer. Every
 * time here (`now`, `expiresMs`) is a performance.now() reading of this thread.
 * Across a restart no monotonic clock survives: the shards persist each value with
 * its push's server time, and reseed() gives it what is left of its window at the
 * server time of the boot (docs/time.md "Dedupe").
 */
import type { Logger } from '../log';
import type { Metrics } from '../admin/metrics';
import type { CompiledRegistry, EventPlan } from '../registry/compile';
import type { ErrorPayload, ShardHello } from '../protocol/messages';
import { ackBody } from './push';
import type { Reply } from './reply';
import { DEDUPE_ENTRIES_MAX, DEDUPE_FULL_LOG_INTERVAL_MS } from '../limits';

export class DedupeEntry {
  /** The replay body once the original push is acknowledged; null while in flight. */
  replayBody: string | null = null;
  waiters: Array<(body: string | null) => void> | null = null;
  /** `expiresMs`: the performance.now() reading at which the value is forgotten. */
  constructor(readonly expiresMs: number) {}

  /**
   * The original push is answered: `body` is its replay answer (its ack with
   * idempotent_replay true), or null when it failed (each waiter answers
   * wal_unavailable). Every replay waiting for it is answered now.
   */
  settle(body: string | null): void {
    this.replayBody = body;
    const waiters = this.waiters;
    this.waiters = null;
    if (waiters !== null) for (const w of waiters) w(body);
  }
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

  /**
   * A new entry for (event, value) expiring at `expiresMs`, sweeping expired entries
   * first when the store is full; null when it is full even then (the push is
   * refused: dedupe_capacity_exceeded). The caller has looked the value up already.
   */
  admit(event: string, value: string, now: number, expiresMs: number): DedupeEntry | null {
    const entry = this.insert(event, value, expiresMs);
    if (entry !== null) return entry;
    this.sweep(now); // expired entries leave once a second; make room now if any did
    return this.insert(event, value, expiresMs);
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

/** What PushDedupe needs of the front (Front implements it). */
export interface DedupeHost {
  /** The registry pushes are validated under now: replay errors carry its version, reseeds read its windows. */
  readonly registry: CompiledRegistry;
  readonly metrics: Metrics;
  readonly log: Logger;
  fail(reply: Reply, e: ErrorPayload): void;
}

/** The front's dedupe: the store and what pushes do with it. */
export class PushDedupe {
  readonly store: DedupeStore;
  #fullLoggedMs = Number.NEGATIVE_INFINITY;

  constructor(readonly host: DedupeHost, capacity: number = DEDUPE_ENTRIES_MAX) {
    this.store = new DedupeStore(capacity);
  }

  /**
   * A push of `plan` with dedupe value `value`, arrived at `now` (performance.now()): its new entry, to
   * settle when the push is answered; or null when `reply` is answered here already
   * (a replay of a live entry, or the store is full).
   */
  claim(plan: EventPlan, value: string, now: number, reply: Reply): DedupeEntry | null {
    const store = this.store;
    const prior = store.lookup(plan.name, value, now);
    if (prior !== null) { this.#replay(prior, reply); return null; }
    const entry = store.admit(plan.name, value, now, now + plan.dedupeWindowMs);
    if (entry === null) this.#full(reply, now);
    return entry;
  }

  /** The push that claimed `entry` is acknowledged with (lsn, version): replays get that ack. */
  acked(entry: DedupeEntry, lsn: number, version: number): void {
    entry.settle(ackBody(lsn, version, true));
  }

  /** The push that claimed `entry` for (event, value) failed: a retry may use the value again. */
  failed(entry: DedupeEntry, event: string, value: string): void {
    this.store.forget(event, value);
    entry.settle(null);
  }

  /** Answers a replay with `body`, the original push's replay answer, and counts it as a push. */
  replayed(reply: Reply, body: string): void {
    const m = this.host.metrics;
    m.pushTotal++;
    m.pushReplayTotal++;
    reply.ok(body, true);
  }

  #replay(entry: DedupeEntry, reply: Reply): void {
    const answer = (body: string | null): void => {
      if (body === null) { this.host.fail(reply, { code: 'wal_unavailable', detail: { message: 'the original push with this dedupe value failed; retry' } }); return; }
      this.replayed(reply, body);
    };
    if (entry.replayBody !== null) answer(entry.replayBody);
    else (entry.waiters ??= []).push(answer);
  }

  /**
   * The dedupe store is full (DEDUPE_ENTRIES_MAX live entries): accepting the push
   * would store it without the protection its event asked for, so it is refused
   * with a retryable code. Logged at most once a second; counted always.
   */
  #full(reply: Reply, now: number): void {
    const h = this.host;
    const store = this.store;
    h.metrics.dedupeFullTotal++;
    if (now - this.#fullLoggedMs >= DEDUPE_FULL_LOG_INTERVAL_MS) {
      this.#fullLoggedMs = now;
      h.log.warn({ kind: 'front.dedupe_full', msg: 'dedupe store full; pushes that need a dedupe entry are refused until entries expire', entries: store.size, limit: store.capacity });
    }
    h.fail(reply, { code: 'dedupe_capacity_exceeded', detail: { message: `the dedupe store holds ${store.size} entries (DEDUPE_ENTRIES_MAX); retry once older entries expire`, path: 'data' } });
  }

  /**
   * Re-seeds the entries a shard recovered (ShardHello.dedupe) that are still inside
   * their windows at server time `serverMs` (the boot's: not behind any recovered
   * push time, so what is left is never more than the window): each is remembered
   * for what is left, from `now` (performance.now()) on.
   */
  reseed(entries: ShardHello['dedupe'], serverMs: number, now = performance.now()): void {
    const store = this.store;
    for (const [event, value, lsn, version, t] of entries) {
      const plan = this.host.registry.events.get(event);
      if (plan === undefined || plan.dedupeField === null) continue;
      const left = t + plan.dedupeWindowMs - serverMs;
      if (left <= 0 || store.lookup(event, value, now) !== null) continue;
      const e = store.insert(event, value, now + Math.min(left, plan.dedupeWindowMs));
      if (e !== null) e.replayBody = ackBody(lsn, version, true);
    }
  }
}
