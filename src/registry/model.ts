/**
 * Registry nodes after structural parsing (node_parse.ts). The raw JSON of each
 * node is kept as registered (GET /registry returns it); these typed views are
 * what the compiler (compile.ts) works from.
 */
import { NAME_LENGTH_MAX } from '../limits';
import type { FieldMap } from '../types';

export type ChainOpDef =
  | { op: 'filter'; expr: string }
  | { op: 'with_columns'; exprs: Array<[string, string]> }
  | { op: 'select'; fields: string[] }
  | { op: 'drop'; fields: string[] }
  | { op: 'rename'; mapping: Array<[string, string]> };

export interface EventNodeDef {
  kind: 'event';
  name: string;
  fields: FieldMap;
  optional: string[];
  dedupeKey: string | null;
  dedupeWindowMs: number;
  keepEventsForMs: number | null;
  coldAfterMs: number | null;
  validators: string[];
}

export interface DerivedEventNodeDef {
  kind: 'derived';
  name: string;
  upstream: string;
  ops: ChainOpDef[];
  /** `schema` given on the node: must equal what the chain produces (bad_return_type otherwise). */
  declaredFields: FieldMap | null;
}

export interface TableNodeDef {
  kind: 'table';
  name: string;
  upstream: string;
  ops: ChainOpDef[];
  key: string[];
  /** Feature name -> aggregation spec `{op, params}` in declared order. */
  agg: Array<[string, { op: string; params: Record<string, unknown> }]>;
}

export type NodeDef = EventNodeDef | DerivedEventNodeDef | TableNodeDef;

/** A node as stored: its typed view, its raw JSON, and where it came from (for error paths). */
export interface RegistryEntry {
  def: NodeDef;
  raw: Record<string, unknown>;
}

/** The serializable registry: what the coordinator persists and every thread compiles. */
export interface RegistryState {
  version: number;
  /** Raw node JSON in topological order. */
  nodes: Array<Record<string, unknown>>;
}

export const EMPTY_REGISTRY: RegistryState = { version: 0, nodes: [] };

/** Names of nodes, fields, columns and features. */
export const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Rows and responses are plain JS objects (JSON.parse output, on the hot path), so a
 * name that is a property of Object.prototype would read an inherited value when
 * absent (`toString`) or set the prototype (`__proto__`). Such names are reserved.
 */
const RESERVED_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));

/**
 * Every name is at most NAME_LENGTH_MAX characters: names are repeated in every
 * answer row (`"name":`), in error messages and in "did you mean" hints, so an
 * unbounded name makes every one of those unbounded.
 */
export function isValidName(name: string): boolean {
  return name.length <= NAME_LENGTH_MAX && NAME_PATTERN.test(name) && !RESERVED_NAMES.has(name);
}

export const NAME_RULE = `must match ${NAME_PATTERN.source}, be at most ${NAME_LENGTH_MAX} characters (NAME_LENGTH_MAX) and not be a JavaScript Object.prototype property (__proto__, constructor, toString, ...)`;
