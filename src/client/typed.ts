/**
 * The types the builders infer from definitions, so `tsc` checks push data, keys,
 * aggregated fields and feature rows against the schema (docs/client.md
 * "Types"). Types only: nothing here exists at run time.
 *
 *   const Txn = event('Txn', { user: str, amount: f64 });       // EventSource<{ user: string; amount: number }>
 *   const UserSpend = table('UserSpend', { from: Txn, key: 'user',
 *                           features: { n: agg.count(), total: agg.sum('amount', { window: '1h' }) } });
 *   sf.push(Txn, { user: 'u1', amount: 12.5 });                  // checked against the schema
 *   const row = await sf.get(UserSpend, 'u1');                   // Partial<{ n: number; total: number | null }>
 *
 * Where inference stops (and what the type falls back to):
 * - columns added by `withColumns` are known by name, with the value type
 *   `ColumnValue` (expressions are strings to the type system);
 * - a field type name the client does not know (the server answers
 *   unknown_field_type) is `NativeValue`; any other constructor is `string`
 *   (the server coerces it to str);
 * - `ref(name)` and `from: 'Name'` know nothing unless given a row type:
 *   `ref<{ user: string }>('Txn')`; untyped they accept any column;
 * - field names are checked for every aggregation, field types are not (`sum`
 *   of a str column is the server's schema_mismatch); `where` and `lat_field`
 *   are not checked;
 * - a schema built at run time (a `FieldsSpec` value, not a literal) is
 *   `NativeData`, as is everything passed by name (`push('Txn', ...)`).
 */
import type { JsonValue } from '../types';
import type { NativeData, NativeValue } from './values';

/** Flattens an intersection for readable hover text and error messages. */
export type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** A column name of a row type (any string for an untyped row). */
export type ColumnOf<Row> = keyof Row & string;

/** The value of a column computed by an expression (withColumns): not inferred. */
export type ColumnValue = string | number | boolean | null;

type TypeValue<T> =
  T extends 'str' | 'string' | StringConstructor ? string
  : T extends 'f64' | 'float' | 'number' | NumberConstructor ? number
  : T extends 'i64' | 'int' | 'integer' | BigIntConstructor ? number | bigint
  : T extends 'bool' | 'boolean' | BooleanConstructor ? boolean
  : T extends 'datetime' | DateConstructor ? Date | number | string
  : T extends 'bytes' | (abstract new (...args: never[]) => Uint8Array) ? Uint8Array | string
  : T extends string ? NativeValue
  : string;

/** The TS type of one field as declared: `String`, `'f64'`, `int()`, `optional(Date)`, ... */
export type FieldValue<S> =
  S extends { int: true } ? number | bigint
  : S extends { type: infer T } ? TypeValue<T>
  : TypeValue<S>;

type RequiredKeys<F, Extra> = { [K in keyof F]-?: K extends Extra ? never : F[K] extends { optional: true } ? never : K }[keyof F];

/**
 * An event's push data (also the columns its chains start from): required fields,
 * then optional ones (`optional(...)` or `settings.optional`), which may be absent or null.
 */
export type EventRow<F, Extra = never> =
  string extends keyof F ? NativeData
  : Simplify<
    { [K in RequiredKeys<F, Extra>]: FieldValue<F[K]> } &
    { [K in Exclude<keyof F, RequiredKeys<F, Extra>>]?: FieldValue<F[K]> | null }
  >;

/** The names in `settings.optional`. */
export type OptionalNames<S> = S extends { optional: readonly (infer N)[] } ? N : never;

/** A row after `rename({ old: 'new' })`. */
export type Renamed<Row, M> = Simplify<
  Omit<Row, keyof M & keyof Row> & { [K in keyof M & keyof Row as M[K] extends string ? M[K] : never]: Row[K] }
>;

/** A row after `withColumns({ name: expr })`: the names are known, the values are not. */
export type WithColumns<Row, C> = Simplify<Omit<Row, keyof C> & { [K in keyof C]: ColumnValue }>;

type KeyScalar<V> = Extract<NonNullable<V>, string | number | boolean | bigint | Date>;

/**
 * The key a table is read by, from its declared key and its upstream's columns:
 * a scalar for one field (also as a one-element array), a tuple in declared order
 * for a composite key.
 */
export type KeyOf<Row, K> =
  string extends ColumnOf<Row> ? KeyInputAny
  : K extends readonly [infer One] ? KeyScalar<Row[One & keyof Row]> | [KeyScalar<Row[One & keyof Row]>]
  : K extends readonly unknown[] ? { -readonly [I in keyof K]: KeyScalar<Row[K[I] & keyof Row]> | null }
  : KeyScalar<Row[K & keyof Row]>;

/** Any key (an untyped table). */
export type KeyInputAny = string | number | boolean | bigint | Date | Array<string | number | boolean | bigint | Date | null>;

/** Marks an aggregation whose value has the type of its input field (`last`, `min`, `lag`...). */
export interface InputValue { readonly __input: 'value' }
/** Marks an aggregation whose value is an array of its input field's values (`last_n`...). */
export interface InputValues { readonly __input: 'values' }

/** How a pushed value comes back in a row: i64 and datetime as numbers, bytes as base64 text. */
type WireOut<V> = V extends bigint | Date ? number : V extends Uint8Array ? string : V extends JsonValue ? V : JsonValue;

/** The value type of one feature, given the upstream row (for the input-typed ops). */
export type AggValue<Out, Field, Row> =
  Out extends InputValue ? (Field extends keyof Row ? WireOut<NonNullable<Row[Field]>> | null : JsonValue)
  : Out extends InputValues ? (Field extends keyof Row ? Array<WireOut<NonNullable<Row[Field]>>> : JsonValue[])
  : Out;

/** The push data of an event or derived event builder: `PushData<typeof Txn>`. */
export type PushData<E> = E extends { readonly __row?: infer R; readonly source: unknown } ? R : never;
/** The feature row of a table builder: `RowOf<typeof UserSpend>`. */
export type RowOf<T> = T extends { readonly __row?: infer R; readonly __key?: unknown } ? R : never;
/** The key type of a table builder: `KeyOfTable<typeof UserSpend>`. */
export type KeyOfTable<T> = T extends { readonly __key?: infer K } ? K : never;
