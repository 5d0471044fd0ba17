/**
 * Push validation of spec 4.1 rules 4-6: a generated check runs on every push
 * (the fast path: one straight-line function, no allocation when the row is
 * good); only a rejected row goes through `classify`, which finds the precise
 * code and path. Values are normalised in place: datetime strings become epoch ms.
 *
 * The check is generated here rather than by ajv: ajv kept every compiled schema
 * in a module-level cache (memory grew with every register, dry runs included)
 * and compiled a 1,000-field schema in about a second, on the front thread. This
 * generator is linear in the fields (milliseconds for 1,000) and the function is
 * released with the registry version that holds it.
 */
import { compilePredicate } from '../expr';
import { STRING_VALUE_BYTES_MAX } from '../limits';
import { SfError } from '../errors';
import type { FieldMap, FieldType, Row } from '../types';
import { withPath } from './with_path';
import { didYouMean } from '../util/near_name';

/** Standard base64 (with optional padding) or base64url. */
const BASE64 = /^(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}(?:==)?|[A-Za-z0-9+/_-]{3}=?)?$/;
/** The Date range of ECMAScript: ±8.64e15 ms around the epoch. */
const DATETIME_MS_MAX = 8.64e15;
/** RFC 3339 date-time (Date.parse is too lenient on its own). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;

/** True when a string is within STRING_VALUE_BYTES_MAX UTF-8 bytes (measured only when it could be over). */
export function stringFits(v: string): boolean {
  return v.length * 3 <= STRING_VALUE_BYTES_MAX || (v.length <= STRING_VALUE_BYTES_MAX && Buffer.byteLength(v) <= STRING_VALUE_BYTES_MAX);
}

/** The test of one present, non-null value `v` of type t, as JS source. */
function typeTest(t: FieldType): string {
  switch (t) {
    case 'str': return 'typeof v === "string" && S(v)';
    // JSON 1e400 parses to Infinity: bounded so that only finite numbers pass.
    case 'f64': return `typeof v === "number" && v >= ${-Number.MAX_VALUE} && v <= ${Number.MAX_VALUE}`;
    case 'i64': return `typeof v === "number" && Number.isInteger(v) && v >= ${Number.MIN_SAFE_INTEGER} && v <= ${Number.MAX_SAFE_INTEGER}`;
    case 'bool': return 'typeof v === "boolean"';
    case 'bytes': return 'typeof v === "string" && S(v) && B.test(v)';
    case 'datetime': return `typeof v === "string" || (Number.isInteger(v) && v >= ${-DATETIME_MS_MAX} && v <= ${DATETIME_MS_MAX})`;
  }
}

/**
 * One generated function: data is a plain object, has no undeclared key, every
 * required field is present and not null, and every present value has its type.
 * Field names are quoted through JSON.stringify (and match NAME_PATTERN anyway).
 */
function compileCheck(fields: FieldMap, optional: ReadonlySet<string>): (d: unknown) => boolean {
  const declared: Record<string, true> = Object.create(null);
  const body: string[] = [
    'if (typeof d !== "object" || d === null || Array.isArray(d)) return false;',
    'for (const k in d) if (F[k] !== true) return false;',
    'let v;',
  ];
  for (const [f, t] of Object.entries(fields)) {
    declared[f] = true;
    const opt = optional.has(f);
    body.push(`v = d[${JSON.stringify(f)}];`);
    body.push(`if (v === undefined || v === null) { ${opt ? '' : 'return false;'} } else if (!(${typeTest(t)})) return false;`);
  }
  body.push('return true;');
  const make = new Function('F', 'S', 'B', `return function check(d) {\n${body.join('\n')}\n};`) as
    (F: Record<string, true>, S: (v: string) => boolean, B: RegExp) => (d: unknown) => boolean;
  return make(declared, stringFits, BASE64);
}

export interface CompiledValidator {
  source: string;
  fn: (row: Row) => boolean;
}

export class PushValidator {
  readonly #fields: FieldMap;
  readonly #required: Set<string>;
  readonly #check: (d: unknown) => boolean;
  readonly #datetimeFields: string[];
  readonly #validators: CompiledValidator[];

  constructor(fields: FieldMap, optional: readonly string[], validatorSources: readonly string[], pathPrefix: string) {
    this.#fields = fields;
    const opt = new Set(optional);
    this.#required = new Set(Object.keys(fields).filter((f) => !opt.has(f)));
    this.#check = compileCheck(fields, opt);
    this.#datetimeFields = Object.keys(fields).filter((f) => fields[f] === 'datetime');
    this.#validators = validatorSources.map((source, i) => ({
      source,
      fn: withPath(`${pathPrefix}.validators[${i}]`, () => compilePredicate(source, fields)),
    }));
  }

  /**
   * True when a row that passes the type check is accepted as is: no datetime field
   * to normalise, no validator predicate to run (front/push_text.ts reads such
   * events' bodies without building the row).
   */
  get checkOnly(): boolean {
    return this.#datetimeFields.length === 0 && this.#validators.length === 0;
  }

  /** Returns the row (the same object, normalised) or throws a coded SfError. */
  validate(data: unknown): Row {
    if (!this.#check(data)) this.#classify(data);
    const row = data as Row;
    for (let i = 0; i < this.#datetimeFields.length; i++) {
      const f = this.#datetimeFields[i];
      const v = row[f];
      if (typeof v === 'string') row[f] = parseDatetime(v, f);
    }
    for (let i = 0; i < this.#validators.length; i++) {
      if (!this.#validators[i].fn(row)) {
        throw new SfError('validation_failed', `validator ${JSON.stringify(this.#validators[i].source)} rejected the payload`, { path: `validators[${i}]` });
      }
    }
    return row;
  }

  /** Slow path: ajv said no; find the first precise reason. Always throws. */
  #classify(data: unknown): never {
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      throw new SfError('invalid_event', '"data" must be a JSON object of field -> value', { path: 'data' });
    }
    const obj = data as Record<string, unknown>;
    for (const k of Object.keys(obj)) {
      if (k in this.#fields) continue;
      if (k === 'event_time' || k === 'event_time_ms') {
        throw new SfError('unknown_field_event_time_v0', `${k} is not supported in v0: time is the server's processing time`, { path: `fields.${k}` });
      }
      throw new SfError('unknown_field_v0', `${JSON.stringify(k)} is not a declared field of this event in v0${didYouMean(k, Object.keys(this.#fields))}`, { path: `fields.${k}` });
    }
    for (const [f, t] of Object.entries(this.#fields)) {
      const v = Object.prototype.hasOwnProperty.call(obj, f) ? obj[f] : undefined;
      if (v === undefined) {
        if (this.#required.has(f)) throw new SfError('invalid_event', `missing required field ${JSON.stringify(f)}`, { path: `fields.${f}` });
        continue;
      }
      if (v === null) {
        if (this.#required.has(f)) throw new SfError('missing_field', `required field ${JSON.stringify(f)} is null`, { path: `fields.${f}` });
        continue;
      }
      checkValue(v, t, f);
    }
    // The check and classify disagree: a bug, but never let a row through unchecked.
    throw new SfError('invalid_event', 'data does not match the event schema', { path: 'data' });
  }
}

function wrongType(f: string, t: FieldType, v: unknown): never {
  throw new SfError('invalid_event', `field ${JSON.stringify(f)} must be ${t}, got ${Array.isArray(v) ? 'array' : typeof v}`, { path: `fields.${f}` });
}

function noCoerce(f: string, t: FieldType, why: string): never {
  throw new SfError('schema_mismatch', `field ${JSON.stringify(f)} cannot be coerced to ${t}: ${why}`, { path: `fields.${f}` });
}

function tooLong(f: string, v: string): never {
  throw new SfError('invalid_event', `field ${JSON.stringify(f)} is ${Buffer.byteLength(v)} bytes; a value is at most ${STRING_VALUE_BYTES_MAX} bytes (STRING_VALUE_BYTES_MAX)`, { path: `fields.${f}` });
}

function checkValue(v: unknown, t: FieldType, f: string): void {
  switch (t) {
    case 'str':
      if (typeof v !== 'string') wrongType(f, t, v);
      if (!stringFits(v)) tooLong(f, v);
      return;
    case 'f64':
      if (typeof v !== 'number') wrongType(f, t, v);
      if (!Number.isFinite(v)) noCoerce(f, t, 'the number is out of the finite f64 range');
      return;
    case 'bool': if (typeof v !== 'boolean') wrongType(f, t, v); return;
    case 'i64':
      if (typeof v !== 'number') wrongType(f, t, v);
      if (!Number.isInteger(v)) noCoerce(f, t, `${v} is not an integer`);
      if (!Number.isSafeInteger(v)) noCoerce(f, t, `${v} is outside the exactly representable range ±(2^53-1)`);
      return;
    case 'bytes':
      if (typeof v !== 'string') wrongType(f, t, v);
      if (!stringFits(v)) tooLong(f, v);
      if (!BASE64.test(v)) noCoerce(f, t, 'bytes travel as base64 strings');
      return;
    case 'datetime':
      if (typeof v === 'number') {
        if (!Number.isSafeInteger(v) || Math.abs(v) > DATETIME_MS_MAX) noCoerce(f, t, 'epoch milliseconds must be an integer within ±8.64e15');
        return;
      }
      if (typeof v !== 'string') wrongType(f, t, v);
      parseDatetime(v, f);
      return;
  }
}

function parseDatetime(s: string, f: string): number {
  const ms = RFC3339.test(s) ? Date.parse(s) : NaN;
  if (Number.isNaN(ms)) noCoerce(f, 'datetime', 'expected an RFC 3339 string or integer epoch milliseconds');
  return ms;
}
