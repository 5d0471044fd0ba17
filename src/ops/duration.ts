/**
 * The duration grammar of spec 2.4: `\d+(ms|s|m|h|d)`, strictly positive. The
 * literal `forever` is not a duration: callers that accept it test for it first.
 */
import { DURATION_MS_MAX } from '../limits';

/** Milliseconds per unit of the grammar (also read by config.ts, whose durations allow 0 and a bare number). */
export const DURATION_UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

const DURATION_PATTERN = /^(\d+)(ms|s|m|h|d)$/;

/** `"90s"` -> 90000. Returns null for anything else (including `"0s"`, `"forever"`, numbers). */
export function parseDuration(s: unknown): number | null {
  if (typeof s !== 'string') return null;
  const m = DURATION_PATTERN.exec(s);
  if (m === null) return null;
  const ms = Number(m[1]) * DURATION_UNIT_MS[m[2]];
  if (!(ms > 0) || ms > DURATION_MS_MAX) return null;
  return ms;
}

/** The canonical spelling of a duration in ms, used in signatures ("90s" and "90000ms" agree). */
export function durationKey(ms: number): string {
  return `${ms}ms`;
}
