/**
 * A log line that may repeat per batch or per sync (a full disk fails every WAL
 * write): the first occurrence is logged in full (with its `err` and stack), later
 * ones are counted, and at most one summary line per interval says how many there
 * were (`count`, `since_ms`, the latest error's message). When the condition clears
 * (ok()), one line says how many failures the streak had and how long it lasted.
 *
 * ok() runs after every successful write: one comparison while nothing failed.
 */
import type { Logger } from './log';

export class RepeatedLine {
  readonly #log: Logger;
  readonly #kind: string;
  readonly #clearedKind: string;
  readonly #intervalMs: number;
  readonly #now: () => number;
  /** Occurrences since the line last logged. */
  #pending = 0;
  /** Occurrences of the current streak (0: nothing failing). */
  #streak = 0;
  #streakStartMs = 0;
  #lastLogMs = 0;

  /** `kind` is logged at error level; `clearedKind` (info) when the streak ends. */
  constructor(log: Logger, kind: string, clearedKind: string, intervalMs: number, now: () => number = Date.now) {
    this.#log = log;
    this.#kind = kind;
    this.#clearedKind = clearedKind;
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  /** One occurrence. `fields` go on every line it logs. */
  hit(fields: Record<string, unknown>, err: unknown): void {
    const t = this.#now();
    this.#pending++;
    if (this.#streak++ === 0) {
      this.#streakStartMs = t;
      this.#lastLogMs = t;
      this.#pending = 0;
      this.#log.error({ kind: this.#kind, ...fields, err });
      return;
    }
    if (t - this.#lastLogMs < this.#intervalMs) return;
    this.#log.error({ kind: this.#kind, ...fields, count: this.#pending, since_ms: t - this.#lastLogMs, failures: this.#streak, error: errorText(err) },
      `${this.#kind}: ${this.#pending} more since the last line`);
    this.#pending = 0;
    this.#lastLogMs = t;
  }

  /** The operation worked: ends a streak of failures with one line. */
  ok(fields: Record<string, unknown>): void {
    if (this.#streak === 0) return;
    this.#log.info({ kind: this.#clearedKind, ...fields, failures: this.#streak, unlogged: this.#pending, duration_ms: this.#now() - this.#streakStartMs });
    this.#streak = 0;
    this.#pending = 0;
  }
}

function errorText(err: unknown): string {
  return String((err as Error)?.message ?? err);
}
