/**
 * The offline engine (docs/training.md): the server's push and get code in one
 * process, on one thread, with no socket, pool, WAL or clock. Time is injected:
 * each event is pushed at its own time, and rows are read at the time asked.
 *
 *   pushBytes(...): PushText         (front/push_text.ts: a common body read from its
 *                                     bytes, no JSON.parse: the front's fast path)
 *   push(body, t):  PushCore.accept  (front/push_core.ts: envelope, validation,
 *                                     chains, keys: what the front runs per push)
 *                   dedupe           (front/dedupe.ts DedupeStore, at time t)
 *                   PushRoute.write  (the PUSH record the front writes for a shard)
 *                   PushApplier      (shard/state/push_apply.ts: what a shard runs
 *                                     per record, into a ShardState)
 *   read(...):      ShardState.readRow at the time asked, after the verdict the
 *                   shard's cold sweep reaches on an idle entity (readServed)
 *
 * So a row replayed here is computed by the same compile, the same record bytes
 * and the same op code as the row a server answers (the test suite checks them
 * byte for byte). One ShardState holds every key (shard count 1): a row depends on
 * its own entity's events only, and on no other shard's.
 */
import { strict as assert } from 'node:assert';
import { SfError } from '../errors';
import { compileRegistry, type CompiledRegistry } from '../registry/compile';
import type { RegistryState } from '../registry/model';
import type { ErrorPayload } from '../protocol/messages';
import { PushCore } from '../front/push_core';
import { PushText } from '../front/push_text';
import { DedupeStore } from '../front/dedupe';
import { PushFrameWriter } from '../wal/push_record';
import { FRAME_LENGTH_CRC_BYTES } from '../wal/constants';
import { PushApplier } from '../shard/state/push_apply';
import { ShardState, type TableState } from '../shard/state/state';
import { DEDUPE_ENTRIES_MAX, RESPONSE_BYTES_MAX, WAL_RECORD_BYTES_MAX } from '../limits';

/** push() of an event whose dedupe value was seen within its window: not applied (spec 4.1 rule 7). */
export const DEDUPE_REPLAY = 'dedupe_replay';

export class OfflineEngine {
  /** The registry as the front compiles it (validators, chains, keys; feature names only). */
  readonly registry: CompiledRegistry;
  /** Every key's aggregates, as one shard holds them. */
  readonly state: ShardState;
  /** Events applied, and those a dedupe window swallowed. */
  applied = 0;
  deduplicated = 0;
  readonly #core = new PushCore();
  readonly #reader = new PushText();
  readonly #writer = new PushFrameWriter();
  readonly #applier: PushApplier;
  readonly #dedupe = new DedupeStore(DEDUPE_ENTRIES_MAX);
  #lsn = 0;
  #lastT = Number.NEGATIVE_INFINITY;

  constructor(registry: RegistryState, memoryGovEnforce = true) {
    this.registry = compileRegistry(registry, { memoryGovEnforce, pushValidators: true, features: false });
    this.state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce });
    this.state.install(registry);
    this.#applier = new PushApplier(this.state);
  }

  /** Time of the last event pushed (-Infinity before the first). */
  get lastT(): number {
    return this.#lastT;
  }

  /**
   * Pushes envelope `body` ({event, data}) at server time `t` (ms, not before the
   * previous event's). Returns null when applied, DEDUPE_REPLAY when a dedupe window
   * swallowed it, or the refusal the server would answer.
   */
  push(body: unknown, t: number): ErrorPayload | typeof DEDUPE_REPLAY | null {
    assert(t >= this.#lastT, 'events are pushed in time order');
    const reg = this.registry;
    const core = this.#core;
    const refused = core.accept(reg, body, 1);
    if (refused !== null) return refused;
    const plan = core.plan!;
    const value = core.dedupeValue();
    if (value !== null) {
      const store = this.#dedupe;
      if (store.lookup(plan.name, value, t) !== null) { this.deduplicated++; return DEDUPE_REPLAY; }
      if (store.admit(plan.name, value, t, t + plan.dedupeWindowMs) === null) {
        return { code: 'dedupe_capacity_exceeded', detail: { message: `more than ${store.capacity} dedupe values are live at once (DEDUPE_ENTRIES_MAX)` } };
      }
    }
    this.#lastT = t;
    const lsn = ++this.#lsn;
    const w = this.#writer;
    w.pos = 0; // one record at a time: it is applied before the next is written
    if (core.route.write(w, 0, plan, lsn, t, reg.version, value) < 0) {
      // As the front refuses it: a record over RECORD_BYTES_MAX is nothing applied.
      w.dropFrom(0);
      this.#lsn--;
      if (value !== null) this.#dedupe.forget(plan.name, value);
      return { code: 'invalid_event', detail: { message: `the push would be logged as a record over ${WAL_RECORD_BYTES_MAX} bytes (WAL_RECORD_BYTES_MAX)`, path: 'data' } };
    }
    const ok = this.#applier.apply(w.buf, FRAME_LENGTH_CRC_BYTES, null);
    assert(ok, 'the record was written under the installed registry version');
    this.applied++;
    return null;
  }

  /**
   * The push body b[start, end) at time `t`, read from its bytes as the front reads a
   * common body (push_text.ts), when the reader takes it: true once applied. false:
   * nothing was done, and the caller decodes the body and calls push() (which answers
   * every refusal). Events with a dedupe field are never taken here (EventText.of).
   */
  pushBytes(b: Uint8Array, start: number, end: number, t: number): boolean {
    assert(t >= this.#lastT, 'events are pushed in time order');
    const reg = this.registry;
    const reader = this.#reader;
    const ev = reader.parse(b, start, end, reg.events);
    if (ev === null || reader.route(ev, b, 1) < 0) return false;
    this.#lastT = t;
    const w = this.#writer;
    w.pos = 0;
    reader.write(w, 0, ev, b, ++this.#lsn, t, reg.version);
    const ok = this.#applier.apply(w.buf, FRAME_LENGTH_CRC_BYTES, null);
    assert(ok, 'the record was written under the installed registry version');
    this.applied++;
    return true;
  }

  /** The table's state, or undefined when the registry has no such table. */
  table(name: string): TableState | undefined {
    return this.state.tableByName(name);
  }

  /**
   * The row of canonical key `key` of `ts` read at time `at`, as a server answers it
   * (features `f` by index, null: all), or response_too_large.
   */
  read(ts: TableState, key: string, f: readonly number[] | null, at: number): string | ErrorPayload {
    return readServed(this.state, ts, key, f, at);
  }
}

/**
 * A row as a server answers it at time `at`: ShardState.readRow, after the verdict
 * the shard's cold sweep reaches on this entity. An entity idle past its table's
 * cold_after is taken out of memory by the sweep (shard/state/state.ts sweepCold):
 * dropped when every feature is empty by then (a get answers `{}`), else frozen
 * and thawed again by the read (the same row). The server's sweep runs every
 * 100 ms in slices, so for up to that long after an entity qualifies it may still
 * answer the empty row instead of `{}`; offline the verdict is taken at once
 * (docs/training.md "What exactly means").
 */
export function readServed(state: ShardState, ts: TableState, key: string, f: readonly number[] | null, at: number): string | ErrorPayload {
  const t = at > state.lastT ? at : state.lastT;
  if (ts.coldAfterMs !== null) {
    const index = ts.cols.index;
    const slot = index.slotOf(key);
    if (slot >= 0 && index.lastT[slot] < at - ts.coldAfterMs) ts.evict(slot, t);
  }
  try {
    return state.readRow(ts, key, f, at, RESPONSE_BYTES_MAX);
  } catch (err) {
    if (!(err instanceof SfError)) throw err;
    return { code: err.code, detail: err.detail };
  }
}
