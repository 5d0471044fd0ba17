/**
 * One way to raise an expression error, so every message carries the same
 * "at column N" prefix (1-based, in UTF-16 code units of the source string).
 * Registration code adds the DAG path; the column tells the user where inside
 * the expression string to look.
 */
import { SfError } from '../errors';

export type ExprErrorCode = 'invalid_expression' | 'unknown_field_reference' | 'schema_mismatch' | 'invalid_cast_target';

/** `pos` is the 0-based offset of the offending token in the source. */
export function exprError(code: ExprErrorCode, pos: number, message: string): SfError {
  return new SfError(code, `at column ${pos + 1}: ${message}`);
}
