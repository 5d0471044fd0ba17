/**
 * Reads and checks the `params` of one aggregation spec at register time. Every
 * failure is an SfError with the spec code of 2.3/2.4 and a path that points
 * into the spec (`<feature path>.params.<name>`). The reader remembers which keys
 * the op consumed, so a key no op of this kind reads (a typo such as `windw`) is
 * rejected instead of silently ignored.
 */
import { SfError, type ErrorCode } from '../errors';
import type { FieldMap, FieldType } from '../types';
import { parseDuration } from './duration';
import { unknownNameHint } from '../util/near_name';

/** Keys accepted on every op: `where` is compiled by the registry; the others are sent by the
 * peer's SDK and carry no meaning here (documented in docs/ops.md). */
const IGNORED_KEYS: ReadonlySet<string> = new Set(['where', 'precision', 'baseline_window']);

/** `window` after parsing: a finite window in ms, `forever` (explicit lifetime), or absent. */
export type WindowParam = { kind: 'none' } | { kind: 'forever' } | { kind: 'ms'; ms: number };

export class ParamReader {
  readonly params: Record<string, unknown>;
  readonly path: string;
  readonly fields: FieldMap;
  private readonly used: Set<string>;

  constructor(params: Record<string, unknown>, path: string, fields: FieldMap) {
    this.params = params;
    this.path = path;
    this.fields = fields;
    this.used = new Set();
  }

  fail(code: ErrorCode, key: string | null, message: string): never {
    const path = key === null ? this.path : `${this.path}.params.${key}`;
    throw new SfError(code, message, { path });
  }

  has(key: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.params, key) && this.params[key] !== undefined;
  }

  /** Raw value of the first present key among `keys` (aliases), marking all of them used. */
  raw(...keys: string[]): { key: string; value: unknown } | null {
    let found: { key: string; value: unknown } | null = null;
    for (const k of keys) {
      this.used.add(k);
      if (found === null && this.has(k)) found = { key: k, value: this.params[k] };
    }
    return found;
  }

  window(): WindowParam {
    const r = this.raw('window');
    if (r === null) return { kind: 'none' };
    if (r.value === 'forever') return { kind: 'forever' };
    const ms = parseDuration(r.value);
    if (ms === null) this.fail('aggregation_invalid_window', 'window', `window must match \\d+(ms|s|m|h|d) or be "forever", got ${show(r.value)}`);
    return { kind: 'ms', ms };
  }

  /** A positive finite duration (half_life, sub_window); `forever` and malformed -> `code`. */
  duration(key: string, code: ErrorCode): number {
    const r = this.raw(key);
    if (r === null) this.fail(code, key, `${key} is required`);
    const ms = parseDuration(r.value);
    if (ms === null) this.fail(code, key, `${key} must be a positive duration \\d+(ms|s|m|h|d), got ${show(r.value)}`);
    return ms;
  }

  /** An integer in [min, max], or `dflt` when absent (null dflt = absent is returned as null). */
  int(keys: string[], min: number, max: number, dflt: number | null, code: ErrorCode = 'aggregation_invalid_param'): number | null {
    const r = this.raw(...keys);
    if (r === null) return dflt;
    const v = r.value;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      this.fail(code, r.key, `${r.key} must be an integer in [${min}, ${max}], got ${show(v)}`);
    }
    return v;
  }

  /** A number in the open interval (lo, hi) (hi may be Infinity). */
  openNum(keys: string[], lo: number, hi: number, dflt: number, code: ErrorCode): number {
    const r = this.raw(...keys);
    if (r === null) return dflt;
    const v = r.value;
    if (typeof v !== 'number' || !Number.isFinite(v) || !(v > lo) || !(v < hi)) {
      const range = hi === Infinity ? `> ${lo}` : `in the open interval (${lo}, ${hi})`;
      this.fail(code, r.key, `${r.key} must be a number ${range}, got ${show(v)}`);
    }
    return v;
  }

  /**
   * A column name: must be a string (schema_mismatch) naming a field of the row
   * (schema_propagation_failure) whose type is in `types` (schema_mismatch).
   */
  column(keys: string[], types: readonly FieldType[], dflt: string | null): string {
    const r = this.raw(...keys);
    let name: unknown;
    let key = keys[0];
    if (r === null) {
      if (dflt === null) this.fail('schema_mismatch', key, `${key} is required and must be a column name`);
      name = dflt;
    } else {
      name = r.value;
      key = r.key;
    }
    if (typeof name !== 'string') this.fail('schema_mismatch', key, `${key} must be a string column name, got ${show(name)}`);
    if (!Object.prototype.hasOwnProperty.call(this.fields, name)) {
      this.fail('schema_propagation_failure', key, `column "${name}" is not produced by the upstream chain${unknownNameHint(name, Object.keys(this.fields), 'upstream columns')}`);
    }
    const type = this.fields[name];
    if (!types.includes(type)) {
      this.fail('schema_mismatch', key, `column "${name}" has type ${type}; this op needs ${types.join(' or ')}`);
    }
    return name;
  }

  /** Rejects keys that this op did not read (typos), except the globally ignored ones. */
  finish(op: string): void {
    for (const k of Object.keys(this.params)) {
      if (this.used.has(k) || IGNORED_KEYS.has(k)) continue;
      this.fail('aggregation_invalid_param', k, `op ${op} takes no parameter "${k}"`);
    }
  }
}

export function show(v: unknown): string {
  if (v === undefined) return 'nothing';
  try {
    const s = JSON.stringify(v);
    return s.length > 60 ? s.slice(0, 57) + '...' : s;
  } catch {
    return String(v);
  }
}
