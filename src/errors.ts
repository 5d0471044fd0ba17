/**
 * Every error code the server can send, in one table (spec 7.2), with its HTTP
 * status. Code that raises an error names the code; the envelope of spec 2.7 is
 * built here and nowhere else.
 */

export interface ErrorInfo {
  /** HTTP status (a hint: clients dispatch on the code). */
  status: number;
  /** Default human text, forward-looking ("X is not supported in v0"). */
  message: string;
}

function e(status: number, message: string): ErrorInfo {
  return { status, message };
}

export const ERRORS = {
  // Push.
  event_not_found: e(404, 'event is not registered'),
  invalid_event: e(400, 'data does not match the event schema'),
  invalid_json_body: e(400, 'request body is not valid JSON'),
  missing_event_name_in_body: e(400, 'top-level "event" must be a string'),
  unknown_field_v0: e(400, 'data has a key that is not a declared field'),
  unknown_field_event_time_v0: e(400, 'event_time is not supported in v0'),
  missing_field: e(400, 'a required field has no value'),
  schema_mismatch: e(400, 'value cannot be coerced to the declared type'),
  validation_failed: e(400, 'a validator of the event rejected the payload'),
  dedupe_replay: e(200, 'not an error: a dedupe match returns the prior ack'),
  dedupe_capacity_exceeded: e(503, 'the dedupe store is full; retry once older entries expire'),
  memory_limit_exceeded: e(503, 'the shard is over --memory-limit without a disk to evict to (--memory-only): new entities are refused; existing ones keep updating'),
  // Get and batch_get.
  unknown_table: e(404, 'table is not registered'),
  key_not_found: e(404, 'reserved: a cold key returns {}'),
  key_parse_failure: e(400, 'key cannot be read against the table key schema'),
  key_shape_mismatch: e(400, 'key shape does not match the declared key'),
  feature_not_in_table: e(400, 'feature belongs to another table'),
  feature_not_found: e(400, 'feature is not registered'),
  batch_too_large: e(400, 'batch is over the batch_get limit'),
  response_too_large: e(400, 'the answer is over the response size limit; ask for fewer entries or features'),
  // Forget (an extension of the spec).
  forget_unavailable_in_cluster_mode: e(501, 'forget is not available in cluster mode yet'),
  // Register.
  invalid_registration: e(400, 'registration payload is structurally invalid'),
  schema_invalid: e(400, 'node violates its JSON schema'),
  schema_propagation_failure: e(400, 'op references a column the upstream chain does not produce'),
  cycle: e(400, 'nodes form a cycle'),
  registration_cycle: e(400, 'registration would create a cycle in the registry'),
  missing_upstream: e(400, 'upstream is neither in the payload nor registered'),
  topological_order_violation: e(400, 'upstream appears later in the list than its downstream'),
  duplicate_name: e(400, 'name appears twice in one register call'),
  unsupported_node_kind: e(400, 'node kind is not supported in v0'),
  unknown_field_type: e(400, 'field type is not one of str, f64, i64, bool, bytes, datetime'),
  table_key_invalid: e(400, 'table key is empty, not a string list, or names an unknown field'),
  bad_return_type: e(400, 'derivation output does not match its declared shape'),
  unknown_op: e(400, 'op is not in the catalogue'),
  unknown_field_reference: e(400, 'expression references an unknown field'),
  invalid_expression: e(400, 'expression does not parse'),
  invalid_cast_target: e(400, 'cast target must be str, int, float or bool'),
  aggregation_invalid_window: e(400, 'window is invalid, missing or not supported'),
  aggregation_invalid_half_life: e(400, 'half_life is missing, malformed, non-positive or forever'),
  aggregation_invalid_sub_window: e(400, 'sub_window is missing, malformed or non-positive'),
  aggregation_invalid_param: e(400, 'aggregation parameter is out of range'),
  invalid_percentile_q: e(400, 'q must be in the open interval (0,1)'),
  invalid_top_k_k: e(400, 'k must be an integer in (0,1024]'),
  invalid_bloom_fpr: e(400, 'fpr must be in the open interval (0,1)'),
  window_not_supported: e(400, 'this op takes no window'),
  unbounded_op_in_lifetime_mode: e(400, 'windowless op has no per-entity memory bound'),
  aggregation_on_table_not_supported: e(400, 'aggregation over a table is not supported in v0'),
  event_time_not_supported_in_v0: e(400, 'event time is not supported in v0'),
  unknown_field_tolerate_delay_v0: e(400, 'tolerate_delay_ms is not supported in v0'),
  feature_removed_no_joins_v0: e(400, 'joins are not supported in v0'),
  feature_removed_no_unions_v0: e(400, 'unions are not supported in v0'),
  session_windows_not_supported_in_v0: e(400, 'session windows are not supported in v0'),
  registry_too_large: e(400, 'the registry would exceed a size limit (nodes, features, expressions or derivation depth)'),
  force_required: e(409, 'destructive change requires force=true'),
  registration_conflict: e(409, 'change cannot be applied, even with force'),
  unsupported_media_type: e(415, 'Content-Type must be application/json'),
  // Transport, server and admin.
  op_not_implemented: e(501, 'opcode is reserved and not implemented in v0'),
  frame_too_large: e(413, 'frame length is above the maximum'),
  frame_error: e(400, 'malformed frame'),
  unauthorized: e(401, 'the request lacks the server\'s auth token (HTTP: Authorization: Bearer <token>; TCP: an AUTH frame first)'),
  too_many_connections: e(503, 'the server is at its TCP or HTTP connection limit; retry later or on another connection'),
  http_protocol_error: e(400, 'HTTP layer rejected the request'),
  unsupported_content_type: e(415, 'content type is not supported in v0'),
  unsupported_request_shape: e(400, 'body matches no known shape for this endpoint'),
  not_found: e(404, 'no such route'),
  method_not_allowed: e(405, 'method not allowed on this route'),
  reset_disabled_in_production: e(403, 'reset is disabled outside test mode'),
  wal_unavailable: e(503, 'write-ahead log is unavailable'),
  partition_unavailable: e(503, 'the partition of this key is moving to another node (cluster mode); retry'),
  wal_sync_timeout: e(504, 'fsync did not complete in time; the event may or may not be durable'),
  wal_truncate_failed: e(500, 'WAL truncation failed during reset; server state is undefined'),
  internal_error: e(500, 'internal error'),
} as const satisfies Record<string, ErrorInfo>;

export type ErrorCode = keyof typeof ERRORS;

/** Fields of the `error` object of spec 2.7 beyond `code`. */
export interface ErrorDetail {
  path?: string;
  message?: string;
  reason?: string;
  diff?: unknown;
  /** Several validation failures (spec 2.7): `{kind, path, message}` items. */
  errors?: ValidationItem[];
  /** Extra members inside `error` (e.g. `method` and `path` of method_not_allowed). */
  extra?: Record<string, unknown>;
}

export interface ValidationItem {
  kind: string;
  path: string;
  message: string;
}

/**
 * An operating error: expected, coded, turned into the envelope. Programmer
 * errors are plain `Error`s and become `internal_error`.
 */
export class SfError extends Error {
  readonly code: ErrorCode;
  readonly detail: ErrorDetail;
  constructor(code: ErrorCode, message?: string, detail: ErrorDetail = {}) {
    super(message ?? ERRORS[code].message);
    this.code = code;
    this.detail = detail;
    if (detail.message === undefined) detail.message = this.message;
  }
  get status(): number {
    return ERRORS[this.code].status;
  }
}

/** Builds the envelope object of spec 2.7. Member order is stable (code first). */
export function errorEnvelope(code: ErrorCode, detail: ErrorDetail = {}, registryVersion?: number): object {
  const error: Record<string, unknown> = { code };
  if (detail.path !== undefined) error.path = detail.path;
  error.message = detail.message ?? ERRORS[code].message;
  if (detail.reason !== undefined) error.reason = detail.reason;
  if (detail.diff !== undefined) error.diff = detail.diff;
  if (detail.extra !== undefined) Object.assign(error, detail.extra);
  const body: Record<string, unknown> = { error };
  if (detail.errors !== undefined && detail.errors.length > 0) body.errors = detail.errors;
  if (registryVersion !== undefined) body.registry_version = registryVersion;
  return body;
}

export function errorJson(code: ErrorCode, detail?: ErrorDetail, registryVersion?: number): string {
  return JSON.stringify(errorEnvelope(code, detail, registryVersion));
}

export function sfErrorJson(err: SfError, registryVersion?: number): string {
  return errorJson(err.code, err.detail, registryVersion);
}

/** Any thrown value as a coded error: SfError passes through, anything else is internal_error. */
export function asSfError(err: unknown): SfError {
  if (err instanceof SfError) return err;
  const text = err instanceof Error ? err.message : String(err);
  return new SfError('internal_error', 'internal error', { reason: text });
}
