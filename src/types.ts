/**
 * Value types shared by every thread. Kept tiny and dependency-free so that the
 * front, the shards, the coordinator and the client can all import it.
 */

/** Wire field types of spec 2.1. */
export type FieldType = 'str' | 'f64' | 'i64' | 'bool' | 'bytes' | 'datetime';

export const FIELD_TYPES: readonly FieldType[] = ['str', 'f64', 'i64', 'bool', 'bytes', 'datetime'];

export function isFieldType(s: unknown): s is FieldType {
  return typeof s === 'string' && (FIELD_TYPES as readonly string[]).includes(s);
}

/**
 * A value inside a row, after push validation:
 * - `i64`, `f64`: JS number (i64 limited to the safe-integer range);
 * - `datetime`: epoch milliseconds (number);
 * - `bytes`: the base64 string as pushed;
 * - `str`, `bool`: as-is; `null` for an absent optional field.
 */
export type Value = string | number | boolean | null;

/** A row is the validated `data` object of a push, possibly transformed by a chain. */
export type Row = Record<string, Value | undefined>;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

/** Field name -> type. Object created with a null prototype where built by us. */
export type FieldMap = Record<string, FieldType>;

export interface Schema {
  fields: FieldMap;
  /** Fields that may be absent (or null) in a push. */
  optional: string[];
}
