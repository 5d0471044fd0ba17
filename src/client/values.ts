/**
 * Native JS values -> JSON wire values for push data and get keys (`datetime`
 * travels as epoch ms, `bytes` as base64: docs/wire.md).
 *
 *   Date                -> epoch milliseconds (number)
 *   Buffer / Uint8Array -> base64 string
 *   BigInt              -> number when it is a safe integer; otherwise its decimal
 *                          string, so the server (which owns the i64 range rule)
 *                          answers with a coded error instead of us losing digits
 *   arrays / plain objects are converted member by member; everything else is as-is.
 *
 * The common case (plain JSON values) allocates nothing: `toWireData` returns
 * its argument unless some member needed converting.
 */
import type { JsonValue } from '../types';

export type NativeValue =
  | JsonValue
  | Date
  | bigint
  | Uint8Array
  | undefined
  | NativeValue[]
  | { [k: string]: NativeValue };

export type NativeData = Record<string, NativeValue>;

/** Key input of get/batchGet: scalar, or an array for a composite key. */
export type KeyInput = string | number | boolean | bigint | Date | Array<string | number | boolean | bigint | Date | null>;

export function toWireValue(v: NativeValue): JsonValue | undefined {
  if (v === null || typeof v !== 'object') {
    if (typeof v === 'bigint') return bigintToWire(v);
    return v as JsonValue | undefined;
  }
  if (v instanceof Date) return v.getTime();
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  if (Array.isArray(v)) return v.map((x) => toWireValue(x) ?? null);
  return toWireData(v as NativeData);
}

/** Converts the top-level members of a push `data` object (and nested ones if any). */
export function toWireData(data: NativeData): Record<string, JsonValue> {
  let out: Record<string, JsonValue> | null = null;
  for (const name in data) {
    const v = data[name];
    if (needsConversion(v)) {
      if (out === null) out = { ...(data as Record<string, JsonValue>) };
      const w = toWireValue(v);
      if (w === undefined) delete out[name];
      else out[name] = w;
    }
  }
  return out ?? (data as Record<string, JsonValue>);
}

export function toWireKey(key: KeyInput): JsonValue {
  if (Array.isArray(key)) return key.map((k) => (toWireValue(k) ?? null) as JsonValue);
  return toWireValue(key) ?? null;
}

function needsConversion(v: NativeValue): boolean {
  if (typeof v === 'bigint') return true;
  if (v === null || typeof v !== 'object') return false;
  if (v instanceof Date || v instanceof Uint8Array) return true;
  if (Array.isArray(v)) return v.some(needsConversion);
  for (const k in v) if (needsConversion((v as Record<string, NativeValue>)[k])) return true;
  return false;
}

function bigintToWire(v: bigint): number | string {
  if (v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)) return Number(v);
  return v.toString();
}
