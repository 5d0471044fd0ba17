/**
 * Several validation failures in one register response (spec 4.2 rule 6, 2.7):
 * the first failure is the envelope's code/path/message and every failure is an
 * `errors` item whose `kind` is one of the frozen set of spec 7.3.
 */
import { SfError, type ErrorCode, type ValidationItem } from '../errors';

export const VALIDATION_KINDS = ['cycle', 'missing_upstream', 'schema_mismatch', 'bad_return_type', 'unknown_field_type',
  'table_key_invalid', 'registration_conflict', 'duplicate_name', 'unsupported_node_kind'] as const;
export type ValidationKind = (typeof VALIDATION_KINDS)[number];

const KIND_OF: Partial<Record<ErrorCode, ValidationKind>> = {
  cycle: 'cycle',
  registration_cycle: 'cycle',
  missing_upstream: 'missing_upstream',
  topological_order_violation: 'missing_upstream',
  bad_return_type: 'bad_return_type',
  unknown_field_type: 'unknown_field_type',
  table_key_invalid: 'table_key_invalid',
  registration_conflict: 'registration_conflict',
  force_required: 'registration_conflict',
  duplicate_name: 'duplicate_name',
  unsupported_node_kind: 'unsupported_node_kind',
  feature_removed_no_joins_v0: 'unsupported_node_kind',
  feature_removed_no_unions_v0: 'unsupported_node_kind',
  session_windows_not_supported_in_v0: 'unsupported_node_kind',
  aggregation_on_table_not_supported: 'unsupported_node_kind',
};

/** Every other validation failure (expressions, params, schema propagation) is a schema mismatch of the descriptor. */
export function validationKind(code: ErrorCode): ValidationKind {
  return KIND_OF[code] ?? 'schema_mismatch';
}

export function toItem(err: SfError): ValidationItem {
  return { kind: validationKind(err.code), path: err.detail.path ?? '', message: err.message };
}

/** One SfError for a list of failures; the list rides along when there is more than one. */
export function combineErrors(errors: readonly SfError[]): SfError {
  const first = errors[0];
  if (errors.length === 1) return first;
  return new SfError(first.code, first.message, { ...first.detail, errors: errors.map(toItem) });
}
