/**
 * Server time: the clock every thread of one server stamps pushes and reads
 * windows with, and the rule that keeps it sane when the wall clock steps
 * (docs/time.md). Durations and timeouts do not use it: they read the monotonic
 * clock (`performance.now()`), which no clock step moves.
 *
 *   server time = floor(monotonic + offset)
 *
 *   boot       offset = wall - monotonic; then raised so that server time is not
 *              behind the newest time the data dir holds (raiseTo)
 *   check()    once a second on the owner: the wall ahead of server time ->
 *              offset follows it (a step forward); the wall behind -> nothing
 *              moves, server time keeps running on the monotonic clock
 *
 * So server time never goes backwards, runs at the monotonic clock's rate, and is
 * never behind the wall clock by more than one check interval. A wall clock that
 * moved against the monotonic clock by CLOCK_JUMP_THRESHOLD_MS or more between
 * two checks is a jump: check() reports it (the owner logs and counts it).
 *
 * One owner (the front thread) reads the wall clock and writes the offset into a
 * SharedArrayBuffer; every other thread (shards) holds a view of it and derives
 * the same server time from its own monotonic clock. Layout (shared_slots-style):
 *
 *   bytes 0-7   Float64  offset against CLOCK_MONOTONIC, ms
 *   bytes 8-11  Int32    generation: odd while the owner writes (a seqlock: a Float64
 *                store is not guaranteed tear-free, an Int32 Atomics one is)
 *
 * performance.now() counts from each thread's own start, so the shared offset is
 * taken against CLOCK_MONOTONIC (process.hrtime, the clock performance.now() reads)
 * and each thread converts with the base it measured once at load (THREAD_BASE_MS,
 * within a microsecond of the truth).
 */
import { CLOCK_JUMP_THRESHOLD_MS } from '../limits';

/** CLOCK_MONOTONIC ms minus this thread's performance.now(): converts one to the other. */
const THREAD_BASE_MS = ((): number => {
  const a = performance.now();
  const hr = Number(process.hrtime.bigint()) / 1e6;
  return hr - (a + performance.now()) / 2;
})();

/** Float64 index of the offset, Int32 index of the generation (bytes 8-11). */
const OFFSET_F64 = 0;
const GEN_I32 = 2;
const SHARED_BYTES = 16;

/** What check() or raiseTo() saw: a wall clock that jumped, and what server time did about it. */
export interface ClockJump {
  /** forward: the wall clock moved ahead of the monotonic clock; backward: behind it. */
  direction: 'forward' | 'backward';
  /** How far the wall clock moved against the monotonic clock, ms (negative: backward). */
  jumpMs: number;
  /** How far server time stepped forward because of it, ms (0: it kept running as it was). */
  stepMs: number;
  /** Server time minus the wall clock after the check, ms (> 0: server time is ahead). */
  aheadMs: number;
}

export interface ServerClockOptions {
  /** The wall clock (unit tests inject one); Date.now() by default, read at each check. */
  wallMs?: () => number;
  /** A monotonic clock in the same units as the readings given to at() (tests inject one); performance.now() by default. */
  monoMs?: () => number;
  jumpThresholdMs?: number;
}

export class ServerClock {
  /** The buffer a view is built from (ShardInit.clock). */
  readonly shared: SharedArrayBuffer;
  readonly #f64: Float64Array;
  readonly #i32: Int32Array;
  readonly #owner: boolean;
  readonly #mono: () => number;
  readonly #wall: () => number;
  /** monotonic (this thread's units) -> shared units. */
  readonly #base: number;
  readonly #threshold: number;
  /** Server time = floor(monotonic reading + #local). */
  #local = 0;
  #gen = -1;
  /** Wall minus server time at the previous check (how far the wall moved since is the jump). */
  #lastDrift = 0;
  /** Server time minus wall clock at the last check or raise, ms. */
  aheadMs = 0;

  private constructor(shared: SharedArrayBuffer, owner: boolean, opts: ServerClockOptions) {
    this.shared = shared;
    this.#f64 = new Float64Array(shared, 0, 1);
    this.#i32 = new Int32Array(shared);
    this.#owner = owner;
    this.#mono = opts.monoMs ?? (() => performance.now());
    this.#wall = opts.wallMs ?? (() => Date.now());
    this.#base = opts.monoMs === undefined ? THREAD_BASE_MS : 0;
    this.#threshold = opts.jumpThresholdMs ?? CLOCK_JUMP_THRESHOLD_MS;
  }

  /** The owner: anchored at the wall clock now. One per server (the front thread), or per thread outside one (tests, tools). */
  static owner(opts: ServerClockOptions = {}): ServerClock {
    const c = new ServerClock(new SharedArrayBuffer(SHARED_BYTES), true, opts);
    c.#publish(c.wallMs() - c.#mono() - c.#base);
    return c;
  }

  /** A read-only view of an owner's clock in another thread (its `shared`). */
  static view(shared: SharedArrayBuffer, opts: Pick<ServerClockOptions, 'monoMs'> = {}): ServerClock {
    const c = new ServerClock(shared, false, opts);
    c.#refresh();
    return c;
  }

  /** The wall clock as the owner reads it. */
  wallMs(): number {
    return this.#wall();
  }

  /** Server time now, integer ms. */
  nowMs(): number {
    if (!this.#owner) this.#refresh();
    return Math.floor(this.#mono() + this.#local);
  }

  /**
   * Server time at `mono`, a monotonic reading this thread just took (the push
   * path has one already, its latency start): no clock read of its own. On the
   * owner only, whose offset is always current.
   */
  at(mono: number): number {
    return Math.floor(mono + this.#local);
  }

  /**
   * Boot: server time is never behind `floorMs`, the newest server time the data
   * dir holds (a wall clock behind it would put new pushes before recovered ones).
   * Reports the wall clock being behind by the threshold or more.
   */
  raiseTo(floorMs: number): ClockJump | null {
    if (!this.#owner) throw new Error('only the clock owner moves server time');
    const m = this.#mono();
    const now = m + this.#local;
    if (floorMs <= now) return null;
    this.#publish(floorMs - m - this.#base);
    const drift = this.wallMs() - floorMs;
    this.#lastDrift = drift;
    this.aheadMs = -drift;
    return -drift >= this.#threshold ? { direction: 'backward', jumpMs: drift, stepMs: floorMs - now, aheadMs: -drift } : null;
  }

  /** Compares with the wall clock (owner, once every CLOCK_CHECK_INTERVAL_MS): follows it forward, never back. */
  check(): ClockJump | null {
    if (!this.#owner) throw new Error('only the clock owner reads the wall clock');
    const m = this.#mono();
    const wall = this.wallMs();
    const drift = wall - (m + this.#local);
    const jump = drift - this.#lastDrift;
    let step = 0;
    if (drift > 0) {
      step = drift;
      this.#publish(wall - m - this.#base);
    }
    this.#lastDrift = drift > 0 ? 0 : drift;
    this.aheadMs = drift >= 0 ? 0 : -drift;
    if (Math.abs(jump) < this.#threshold) return null;
    return { direction: jump > 0 ? 'forward' : 'backward', jumpMs: jump, stepMs: step, aheadMs: this.aheadMs };
  }

  #publish(offset: number): void {
    const i32 = this.#i32;
    Atomics.add(i32, GEN_I32, 1);
    this.#f64[OFFSET_F64] = offset;
    Atomics.add(i32, GEN_I32, 1);
    this.#local = offset + this.#base;
    this.#gen = Atomics.load(i32, GEN_I32);
  }

  /** A view re-reads the offset when the owner has written a new one (a seqlock read). */
  #refresh(): void {
    const i32 = this.#i32;
    for (;;) {
      const g = Atomics.load(i32, GEN_I32);
      if (g === this.#gen) return;
      if ((g & 1) === 0) {
        const offset = this.#f64[OFFSET_F64];
        if (Atomics.load(i32, GEN_I32) === g) {
          this.#gen = g;
          this.#local = offset + this.#base;
          return;
        }
      }
    }
  }
}
