/**
 * Schema builder: native JS type names -> wire field types (spec 2.1, issue 7).
 *
 *   String -> 'str'        Number -> 'f64' ('i64' with { type: Number, int: true } or 'int')
 *   BigInt -> 'i64'        Boolean -> 'bool'
 *   Date -> 'datetime'     Buffer / Uint8Array -> 'bytes'
 *   any other constructor or object -> 'str' (spec 2.1: coerce anything else to str)
 *   a string: the wire names 'str' 'f64' 'i64' 'bool' 'bytes' 'datetime', and the
 *   cast-style names 'int' (i64) 'float' (f64) 'string' (str) 'boolean' (bool).
 *   Any other string is sent as written so the server answers unknown_field_type:
 *   a typo must not silently become a string column.
 */
import { isFieldType } from '../types';
import type { FieldType } from '../types';
import type { WireSchema } from './wire';

/** A type as the user writes it: a constructor (String, Number, ...) or a type name. */
export type NativeType = (abstract new (...args: never[]) => unknown) | ((...args: never[]) => unknown) | string;

export interface FieldDecl {
  type: NativeType;
  /** The field may be absent (or null) in a push. */
  optional?: boolean;
  /** With Number: declare the field as i64 instead of f64. */
  int?: boolean;
}

export type FieldSpec = NativeType | FieldDecl;
export type FieldsSpec = Record<string, FieldSpec>;

const TYPE_NAME_ALIASES: Record<string, FieldType> = {
  int: 'i64',
  integer: 'i64',
  float: 'f64',
  number: 'f64',
  string: 'str',
  boolean: 'bool',
};

/**
 * The wire type names as constants, for declarations that read like the wire:
 * `event('Txn', { user: str, amount: f64, n: i64, at: optional(datetime) })`.
 */
export const str = 'str';
export const f64 = 'f64';
export const i64 = 'i64';
export const bool = 'bool';
export const bytes = 'bytes';
export const datetime = 'datetime';

/** Marks a field optional: `{ country: optional(String) }`. */
export function optional<const S extends FieldSpec>(spec: S): (S extends FieldDecl ? Omit<S, 'optional'> : { type: S }) & { optional: true };
export function optional(spec: FieldSpec): object {
  return isFieldDecl(spec) ? { ...spec, optional: true } : { type: spec, optional: true };
}

/** An integer number field: `{ count: int() }` or `{ count: int({ optional: true }) }`. */
export function int<const O extends { optional?: boolean } = {}>(opts?: O): { type: NumberConstructor; int: true; optional: O['optional'] extends true ? true : false };
export function int(opts: { optional?: boolean } = {}): { type: NumberConstructor; int: true; optional: boolean } {
  return { type: Number, int: true, optional: opts.optional === true };
}

/** Wire type for one native type (see the table at the top of the file). */
export function wireType(type: NativeType, asInt = false): FieldType | string {
  if (typeof type === 'string') {
    if (isFieldType(type)) return type;
    const alias = TYPE_NAME_ALIASES[type.toLowerCase()];
    return alias ?? type;
  }
  if (type === String) return 'str';
  if (type === Number) return asInt ? 'i64' : 'f64';
  if (type === BigInt) return 'i64';
  if (type === Boolean) return 'bool';
  if (type === Date) return 'datetime';
  if (type === Buffer || type === Uint8Array || isSubclassOf(type, Uint8Array)) return 'bytes';
  return 'str';
}

/** Builds the wire schema; `extraOptional` adds names listed separately (settings.optional). */
export function buildSchema(fields: FieldsSpec, extraOptional: readonly string[] = []): WireSchema {
  const out: Record<string, FieldType | string> = {};
  const optionalFields: string[] = [];
  for (const name of Object.keys(fields)) {
    const spec = fields[name];
    if (isFieldDecl(spec)) {
      out[name] = wireType(spec.type, spec.int === true);
      if (spec.optional === true) optionalFields.push(name);
    } else {
      out[name] = wireType(spec);
    }
  }
  for (const name of extraOptional) if (!optionalFields.includes(name)) optionalFields.push(name);
  return { fields: out, optional_fields: optionalFields };
}

function isFieldDecl(spec: FieldSpec): spec is FieldDecl {
  return typeof spec === 'object' && spec !== null && 'type' in spec;
}

function isSubclassOf(type: unknown, base: abstract new (...args: never[]) => unknown): boolean {
  return typeof type === 'function' && type.prototype instanceof base;
}
