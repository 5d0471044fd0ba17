/**
 * Entity keys. A table's key is computed from the row that reaches it (after its
 * chain) and turned into a canonical string: the value itself for a one-field key,
 * a JSON array of the parts for a composite key. The same canonical string comes
 * from a /get key, so both land on the same shard and the same map entry.
 */
import { SfError } from '../errors';
import type { FieldType, Row, Value } from '../types';

export type KeyFn = (row: Row) => string | null;

function part(v: Value | undefined): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : null;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return null;
}

/** A short, safe description of any JSON value for error messages (never recurses). */
export function preview(v: unknown): string {
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (v === null) return 'null';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}...` : v);
  return String(v);
}

export function makeKeyFn(keyFields: readonly string[]): KeyFn {
  if (keyFields.length === 1) {
    const f = keyFields[0];
    return (row) => part(row[f]);
  }
  const fs = keyFields.slice();
  return (row) => {
    const parts: string[] = [];
    for (let i = 0; i < fs.length; i++) {
      const p = part(row[fs[i]]);
      if (p === null) return null;
      parts.push(p);
    }
    return JSON.stringify(parts);
  };
}

/** One wire key part against its declared type, or throws key_parse_failure. */
function wirePart(v: unknown, t: FieldType, path: string): string {
  switch (t) {
    case 'str':
    case 'bytes':
      if (typeof v === 'string') return v;
      if (typeof v === 'number' && Number.isFinite(v)) return String(v);
      break;
    case 'i64':
    case 'datetime':
      if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
      if (typeof v === 'string' && /^-?\d+$/.test(v) && Number.isSafeInteger(Number(v))) return String(Number(v));
      if (t === 'datetime' && typeof v === 'string') {
        const ms = Date.parse(v);
        if (!Number.isNaN(ms)) return String(ms);
      }
      break;
    case 'bool':
      if (typeof v === 'boolean') return v ? 'true' : 'false';
      if (v === 'true' || v === 'false') return v;
      break;
    case 'f64':
      if (typeof v === 'number' && Number.isFinite(v)) return String(v);
      break;
  }
  throw new SfError('key_parse_failure', `key part ${preview(v)} cannot be read as ${t}`, { path });
}

/**
 * Canonical key from a /get key (spec 4.3): a scalar for a one-field key, an
 * array in declared order for a composite key; a composite key may also be the
 * string "a|b" (peer convenience).
 */
export function parseWireKey(key: unknown, keyFields: readonly string[], keyTypes: readonly FieldType[], path: string): string {
  const n = keyFields.length;
  if (key === null || key === undefined || (typeof key === 'object' && !Array.isArray(key))) {
    throw new SfError('key_shape_mismatch', `key must be ${n === 1 ? 'a scalar' : `an array of ${n} values`} (${keyFields.join(', ')})`, { path });
  }
  if (n === 1) {
    if (Array.isArray(key)) throw new SfError('key_shape_mismatch', `table key is the single field ${keyFields[0]}; send a scalar, not an array`, { path });
    return wirePart(key, keyTypes[0], path);
  }
  let parts: unknown[];
  if (Array.isArray(key)) parts = key;
  else if (typeof key === 'string' && key.includes('|')) parts = key.split('|');
  else throw new SfError('key_shape_mismatch', `table key is composite (${keyFields.join(', ')}); send an array in that order`, { path });
  if (parts.length !== n) throw new SfError('key_parse_failure', `key has ${parts.length} parts; the table key has ${n} (${keyFields.join(', ')})`, { path });
  return JSON.stringify(parts.map((p, i) => wirePart(p, keyTypes[i], `${path}[${i}]`)));
}

/** FNV-1a over UTF-16 code units: stable across threads and restarts. */
export function hashKey(s: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < s.length; i++) h = fnvStep(h, s.charCodeAt(i));
  return h >>> 0;
}

/** hashKey of the string of the ASCII bytes b[from, to) (one byte per code unit), without the string. */
export function hashKeyAscii(b: Uint8Array, from: number, to: number): number {
  let h = FNV_OFFSET;
  for (let i = from; i < to; i++) h = fnvStep(h, b[i]);
  return h >>> 0;
}

const FNV_OFFSET = 0x811c9dc5;

function fnvStep(h: number, unit: number): number {
  return Math.imul(h ^ unit, 0x01000193);
}

export function shardOf(canonicalKey: string, shardCount: number): number {
  return shardCount === 1 ? 0 : hashKey(canonicalKey) % shardCount;
}

/**
 * Cluster partition of a canonical key (docs/cluster.md). The key's FNV hash goes
 * through murmur3's finalizer first: shardOf takes the same hash mod the shard
 * count, and without the mix every key of partition p would land in shard
 * p mod shards on its owner (16 partitions, 2 shards: a node owning only odd
 * partitions would use one shard).
 */
export function partitionOf(canonicalKey: string, partitions: number): number {
  return partitionOfHash(hashKey(canonicalKey), partitions);
}

export function partitionOfHash(keyHash: number, partitions: number): number {
  let h = keyHash;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % partitions;
}
