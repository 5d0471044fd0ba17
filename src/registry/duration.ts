/** Duration strings of spec 2.4: `\d+(ms|s|m|h|d)`. Returns ms (> 0) or null. `forever` is not a duration. */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDurationMs(s: string): number | null {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(s);
  if (m === null) return null;
  const v = Number(m[1]) * UNIT_MS[m[2]];
  return v > 0 && Number.isSafeInteger(v) ? v : null;
}
