/**
 * The owner's side of the server clock while the server runs: a check against
 * the wall clock every CLOCK_CHECK_INTERVAL_MS (server_clock.ts check), and for
 * every jump of CLOCK_JUMP_THRESHOLD_MS or more one `server.clock_jump` warn
 * line and a count (streamfeat_clock_jumps_total, docs/metrics.md). Also reports
 * the boot-time raise to the data dir's newest time the same way.
 */
import type { Logger } from '../log';
import { CLOCK_CHECK_INTERVAL_MS, CLOCK_JUMP_THRESHOLD_MS } from '../limits';
import type { ClockJump, ServerClock } from './server_clock';

/** Where the jumps are counted (admin/metrics.ts Metrics has these fields). */
export interface ClockCounters {
  clockJumpsForwardTotal: number;
  clockJumpsBackwardTotal: number;
}

const MESSAGES = {
  boot: 'the wall clock is behind the newest server time in the data dir: server time starts from that time and stays ahead of the wall clock until the wall clock catches up',
  forward: 'the wall clock jumped forward: server time followed it (windows, decays and time_since see the time pass; dedupe windows and timeouts, on the monotonic clock, do not)',
  backward: 'the wall clock jumped back: server time keeps running on the monotonic clock and stays ahead of the wall clock until the wall clock catches up',
} as const;

export class ClockWatch {
  #timer: NodeJS.Timeout | null = null;

  constructor(readonly clock: ServerClock, readonly counters: ClockCounters, readonly log: Logger) {}

  /** Boot: server time not behind `floorMs`, the newest time the recovered data holds. */
  raiseTo(floorMs: number): void {
    this.#report(this.clock.raiseTo(floorMs), 'boot');
  }

  start(): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => this.check(), CLOCK_CHECK_INTERVAL_MS);
    this.#timer.unref();
  }

  check(): void {
    this.#report(this.clock.check(), 'running');
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  #report(j: ClockJump | null, at: 'boot' | 'running'): void {
    if (j === null) return;
    if (j.direction === 'forward') this.counters.clockJumpsForwardTotal++;
    else this.counters.clockJumpsBackwardTotal++;
    this.log.warn({
      kind: 'server.clock_jump', at, direction: j.direction, jump_ms: Math.round(j.jumpMs), step_ms: Math.round(j.stepMs),
      server_ahead_ms: Math.round(j.aheadMs), threshold_ms: CLOCK_JUMP_THRESHOLD_MS,
    }, at === 'boot' ? MESSAGES.boot : MESSAGES[j.direction]);
  }
}
