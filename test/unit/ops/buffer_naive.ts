/**
 * Naive recomputations of the count-table and point ops from a list of events
 * (oldest first): the lifetime tests apply them to every event, the window tests
 * to the events of the window (or of a suffix, for the bucketed regime).
 */
import type { JsonValue } from '../../../src/types';
import { isNum, type Ev } from './harness';

const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

export function histogram(evs: readonly Ev[], edges: readonly number[], labels: readonly string[]): JsonValue {
  const out: Record<string, number> = Object.fromEntries(labels.map((l) => [l, 0]));
  for (const e of evs) {
    if (!e.match || !isNum(e.row.x)) continue;
    const x = e.row.x;
    let i = 0;
    while (i < edges.length && edges[i] <= x) i++;
    out[labels[i]]++;
  }
  return out;
}

export function hourHistogram(evs: readonly Ev[]): JsonValue {
  const out = new Array<number>(24).fill(0);
  for (const e of evs) if (e.match) out[new Date(e.t).getUTCHours()]++;
  return out;
}

export function dowHourHistogram(evs: readonly Ev[]): JsonValue {
  const out: Record<string, number> = {};
  for (const d of DAYS) for (let h = 0; h < 24; h++) out[`${d}-${String(h).padStart(2, '0')}`] = 0;
  for (const e of evs) {
    if (!e.match) continue;
    const d = new Date(e.t);
    out[`${DAYS[(d.getUTCDay() + 6) % 7]}-${String(d.getUTCHours()).padStart(2, '0')}`]++;
  }
  return out;
}

export function mix(evs: readonly Ev[], allow: readonly string[] | null, cap: number): JsonValue {
  const counts = new Map<string, number>();
  let total = 0;
  for (const e of evs) {
    if (!e.match || e.row.x === null || e.row.x === undefined) continue;
    total++;
    const c = String(e.row.x);
    if (allow !== null && !allow.includes(c)) continue;
    if (counts.has(c)) counts.set(c, (counts.get(c) as number) + 1);
    else if (counts.size < cap) counts.set(c, 1);
  }
  const out: Record<string, number> = {};
  for (const k of [...counts.keys()].sort()) out[k] = (counts.get(k) as number) / total;
  return out;
}

/** The present values of the matching events, oldest first. */
export function present(evs: readonly Ev[]): JsonValue[] {
  return evs.filter((e) => e.match && e.row.x !== null && e.row.x !== undefined).map((e) => e.row.x as JsonValue);
}
