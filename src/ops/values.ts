/**
 * Small value helpers shared by the op families: what counts as a number, how
 * values compare, how numbers leave as JSON (NaN and infinities become null,
 * because JSON has no spelling for them).
 */
import type { FieldType, JsonValue, Value } from '../types';

/** Field types the arithmetic ops accept. `datetime` is ordered (min/max) but not summed. */
export const NUMERIC_TYPES: readonly FieldType[] = ['i64', 'f64'];
/** Field types with a total order that min/max can compare. */
export const ORDERED_TYPES: readonly FieldType[] = ['i64', 'f64', 'datetime', 'str'];
/** Every scalar type: ops that only test equality or keep values (last_n, n_unique, ...). */
export const ANY_TYPES: readonly FieldType[] = ['str', 'f64', 'i64', 'bool', 'bytes', 'datetime'];

/** A finite number: value ops skip null, absent and non-finite inputs. */
export function isNum(x: Value | undefined): x is number {
  return typeof x === 'number' && Number.isFinite(x);
}

/** A number for /get: JSON cannot carry NaN or infinities. */
export function jsonNum(v: number): number | null {
  return Number.isFinite(v) ? v : null;
}

/** A kept value for /get (values in rows are already JSON scalars). */
export function jsonVal(v: Value | undefined): JsonValue {
  if (v === undefined) return null;
  if (typeof v === 'number' && !Number.isFinite(v)) return null;
  return v;
}

/** A present value: null and undefined are "no value". */
export function isPresent(x: Value | undefined): x is string | number | boolean {
  return x !== null && x !== undefined;
}

/**
 * A string key identifying a value for distinct/equality ops. Values of one field
 * share one type, so the key only needs to be unique within a type; the prefix
 * keeps a number and its decimal string apart anyway (a field may change type
 * across a forced re-registration).
 */
export function valueKey(x: string | number | boolean): string {
  if (typeof x === 'string') return 's' + x;
  if (typeof x === 'number') return 'n' + String(x);
  return x ? 'bt' : 'bf';
}

/** Deterministic order over mixed values: numbers < strings < booleans, then natural order. */
export function compareValues(a: string | number | boolean, b: string | number | boolean): number {
  const ra = typeof a === 'number' ? 0 : typeof a === 'string' ? 1 : 2;
  const rb = typeof b === 'number' ? 0 : typeof b === 'string' ? 1 : 2;
  if (ra !== rb) return ra - rb;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A plain array of n doubles (HOLEY_DOUBLE_ELEMENTS, exact capacity): 8 bytes a
 * slot plus 48 bytes, against ~200 bytes of overhead for a Float64Array on Node 20
 * (measured; Node builds have no pointer compression). Built with fill, not push:
 * push grows the backing store by 1.5x + 16 slots.
 */
export function newDoubles(n: number): number[] {
  return new Array<number>(n).fill(0.5).fill(0);
}

/** Copies a saved array of numbers into a fresh double array. */
export function doublesFrom(src: readonly number[]): number[] {
  const a = newDoubles(src.length);
  for (let i = 0; i < src.length; i++) a[i] = src[i];
  return a;
}

/**
 * The saved layout of a numeric summary (trend, twa, geo path, ...): the listed fields
 * in order. Save and load only, never per event, so the keyed access costs nothing hot.
 */
export function saveFields<T>(o: T, keys: readonly (keyof T)[]): number[] {
  return keys.map((k) => o[k] as unknown as number);
}

/** Inverse of saveFields: fills the listed fields of `o` from `saved` (also used to copy one summary into another). */
export function loadFields<T>(o: T, keys: readonly (keyof T)[], saved: readonly number[]): T {
  for (let i = 0; i < keys.length; i++) (o[keys[i]] as unknown as number) = saved[i];
  return o;
}
