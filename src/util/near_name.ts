/**
 * "Did you mean" for a name that is not there: the closest known name within a
 * small edit distance, and (when there are few) the list of names that exist.
 * Used by every unknown-name error (fields in expressions and pushes, events,
 * tables, features, ops, upstreams), only on the error path; the work is bounded
 * per thread and second (HINT_CELLS_PER_SECOND), so a client sending unknown
 * names in a loop cannot make errors expensive.
 */
import { HINT_CELLS_PER_SECOND, HINT_NAMES_LISTED_MAX, NAME_LENGTH_MAX } from '../limits';

/**
 * The text to append to an unknown-name message: `; did you mean "UserSpend"?`
 * when a known name is close, then ` (registered tables: A, B)` when there are at
 * most HINT_NAMES_LISTED_MAX of them, or ` (no tables are registered)`. `what` is
 * the plural shown in the list ("registered tables", "features of UserSpend").
 */
export function unknownNameHint(name: unknown, known: Iterable<string>, what: string, none = `no ${what}`): string {
  const names = [...known];
  let hint = didYouMean(name, names);
  if (names.length === 0) hint += ` (${none})`;
  else if (names.length <= HINT_NAMES_LISTED_MAX) hint += ` (${what}: ${names.sort().join(', ')})`;
  return hint;
}

/** `; did you mean "X"?` when a known name is close to `name`, else ''. */
export function didYouMean(name: unknown, known: readonly string[]): string {
  const near = typeof name === 'string' ? nearestName(name, known) : null;
  return near === null ? '' : `; did you mean ${JSON.stringify(near)}?`;
}

/** Largest edit distance a "did you mean" hint accepts. */
const HINT_DISTANCE_MAX = 2;
/** Distance cells computed for hints in the current one-second window of this thread. */
let hintCells = 0;
let hintWindowStartMs = 0;

/**
 * Closest candidate within edit distance 2 (case-insensitive), for "did you mean";
 * a short name allows fewer edits (one per three characters, so `x` is not "near"
 * every other one-letter name, but `usr` is near `user`). Bounded
 * cost: names longer than NAME_LENGTH_MAX + 2 cannot be near a valid name and get
 * no hint, candidates whose length differs by more than the best distance so far
 * are skipped, and the distance is computed in a band (O(length), not O(length²)),
 * so a register full of long unknown names costs microseconds per reference.
 */
export function nearestName(name: string, candidates: readonly string[]): string | null {
  if (name.length > NAME_LENGTH_MAX + HINT_DISTANCE_MAX) return null;
  const now = performance.now(); // a budget per second of elapsed time (monotonic)
  if (now - hintWindowStartMs >= 1000) { hintWindowStartMs = now; hintCells = 0; }
  const lower = name.toLowerCase();
  let best: string | null = null;
  let bestD = Math.min(HINT_DISTANCE_MAX, Math.floor((name.length + 1) / 3)) + 1;
  for (const c of candidates) {
    if (Math.abs(c.length - name.length) >= bestD) continue;
    // Many unknown references against many similar long names still add up: past
    // the budget the error goes out without a hint (hints are a courtesy).
    hintCells += name.length * (2 * HINT_DISTANCE_MAX + 1);
    if (hintCells > HINT_CELLS_PER_SECOND) return null;
    const d = boundedEditDistance(lower, c.toLowerCase(), bestD - 1);
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best;
}

/**
 * Levenshtein distance of a and b if it is at most `max`, else max + 1. Only the
 * diagonal band |i - j| <= max can hold a distance <= max, so each row computes
 * 2 * max + 1 cells.
 */
export function boundedEditDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const big = max + 1;
  let prev = new Array<number>(b.length + 1);
  let cur = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j <= max ? j : big;
  for (let i = 1; i <= a.length; i++) {
    const lo = Math.max(1, i - max);
    const hi = Math.min(b.length, i + max);
    cur[0] = i <= max ? i : big;
    if (lo > 1) cur[lo - 1] = big;
    let rowMin = cur[0];
    for (let j = lo; j <= hi; j++) {
      const sub = prev[j - 1] + (a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1);
      const del = j <= i - 1 + max ? prev[j] + 1 : big;
      const ins = j - 1 >= lo - 1 ? cur[j - 1] + 1 : big;
      const v = Math.min(sub, del, ins, big);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (hi < b.length) cur[hi + 1] = big;
    if (rowMin > max) return big;
    const t = prev; prev = cur; cur = t;
  }
  return Math.min(prev[b.length], big);
}
