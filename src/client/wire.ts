/**
 * JSON shapes on the wire (spec 2 and 4, the server's wire contract), as the
 * client sends and receives them. Member names stay snake_case because these are
 * the exact bodies; the builders (builders.ts) produce the node shapes.
 */
import type { FieldType, JsonValue } from '../types';
import type { DiffItem as KnownDiffItem } from '../protocol/diff_items';

// ---- Register nodes ---------------------------------------------------------

export interface WireSchema {
  fields: Record<string, FieldType | string>;
  optional_fields: string[];
}

export interface WireEventNode {
  kind: 'event';
  name: string;
  schema: WireSchema;
  dedupe_key?: string;
  dedupe_window?: string;
  keep_events_for?: string;
  cold_after?: string;
  validators?: string[];
}

export type WireChainOp =
  | { op: 'filter'; expr: string }
  | { op: 'with_columns'; exprs: Record<string, string> }
  | { op: 'select'; fields: string[] }
  | { op: 'drop'; fields: string[] }
  | { op: 'rename'; mapping: Record<string, string> };

export interface WireDerivedEventNode {
  kind: 'derivation';
  name: string;
  output_kind: 'event';
  upstreams: [string];
  ops: WireChainOp[];
}

export interface WireAggSpec {
  op: string;
  params: Record<string, JsonValue>;
}

export interface WireTableNode {
  kind: 'table';
  name: string;
  upstreams: [string];
  ops?: WireChainOp[];
  key: string[];
  agg: Record<string, WireAggSpec>;
}

/** Any node the client can send; raw objects are passed through untouched. */
export type WireNode = WireEventNode | WireDerivedEventNode | WireTableNode | Record<string, unknown>;

// ---- Register diff (spec 7.4) -----------------------------------------------

/** Every item kind of spec 7.4, plus an open variant: future kinds fall through a default branch. */
export type DiffItem = KnownDiffItem | { kind: string; [member: string]: unknown };

export interface RegisterDiff {
  additive: DiffItem[];
  destructive: DiffItem[];
}

// ---- Responses --------------------------------------------------------------

export interface PushAck {
  ack_lsn: number;
  registry_version: number;
  idempotent_replay: boolean;
}

export interface RegisterApplied {
  status: 'ok';
  registry_version: number;
  added: string[];
  unchanged: string[];
  changed: string[];
  diff: RegisterDiff;
  dry_run?: undefined;
  /** `unchanged`, sorted (the peer's name). */
  already_present?: string[];
  /** Every payload node's name, in payload order (the peer's name). */
  registered_descriptors?: string[];
  /** Accepted with a note, e.g. a declared `str` column the ops compute as another type. */
  warnings?: RegisterWarning[];
}

export interface RegisterWarning {
  code: string;
  path: string;
  message: string;
}

export interface RegisterDryRun {
  status: 'ok';
  dry_run: true;
  would_apply: boolean;
  registry_version: number;
  diff: RegisterDiff;
  warnings?: RegisterWarning[];
}

export type RegisterResult = RegisterApplied | RegisterDryRun;

/** A feature row of /get: feature name -> value; `{}` for a cold key. */
export type FeatureRow = Record<string, JsonValue>;

export interface PingReply {
  pong: boolean;
  registry_version: number;
  /** The server's package version (absent from servers before 0.1). */
  server_version?: string;
}

export interface ResetReply {
  status: 'ok';
  reset: true;
  registry_version: number;
}

/** What a forget answers (docs/wire.md "Forgetting an entity"). */
export interface ForgetReply {
  /** Entities removed over every table. */
  removed: number;
  /** Per table reached: 1 when it held the entity, 0 when it did not. */
  tables: Record<string, number>;
  /** The forget's place in the log, as a push's ack_lsn. */
  ack_lsn: number;
  registry_version: number;
}

export interface RegistryReply {
  registry_version: number;
  nodes: WireNode[];
}

/** A single-field key is a scalar; a composite key is an array in declared order. */
export type KeyValue = string | number | boolean | Array<string | number | boolean | null>;

export interface GetRequest {
  table: string;
  key: KeyValue;
  features?: string[];
}
