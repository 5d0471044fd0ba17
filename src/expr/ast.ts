/**
 * Syntax tree produced by the parser (untyped) and the typed tree produced by
 * the type checker. Compilation only ever sees the typed tree, whose nodes say
 * exactly which runtime operation to emit (no type tests left for run time,
 * except the defensive "is this row value of its declared type" check on field
 * reads).
 */
import type { FieldType } from '../types';

/** A static type: a field type, or the type of the `null` literal (compatible with anything). */
export type ExprType = FieldType | 'null';

// ---------------------------------------------------------------------------
// Untyped tree (parser output). `pos` is the 0-based source offset of the node's
// operator or first token, used for error columns.

export type CmpOp = '==' | '!=' | '<' | '<=' | '>' | '>=';
export type ArithOp = '+' | '-' | '*' | '/' | '%';
export type LogicOp = 'and' | 'or';

export type LitValue = string | number | boolean | null;

export type Expr =
  | { readonly kind: 'lit'; readonly pos: number; readonly type: 'i64' | 'f64' | 'str' | 'bool' | 'null'; readonly value: LitValue }
  | { readonly kind: 'field'; readonly pos: number; readonly name: string }
  | { readonly kind: 'neg'; readonly pos: number; readonly arg: Expr }
  /** `not x` (low precedence) and `!x` (high precedence) build the same node. */
  | { readonly kind: 'not'; readonly pos: number; readonly arg: Expr }
  | { readonly kind: 'arith'; readonly pos: number; readonly op: ArithOp; readonly left: Expr; readonly right: Expr }
  | { readonly kind: 'cmp'; readonly pos: number; readonly op: CmpOp; readonly left: Expr; readonly right: Expr }
  | { readonly kind: 'logic'; readonly pos: number; readonly op: LogicOp; readonly left: Expr; readonly right: Expr }
  | { readonly kind: 'in'; readonly pos: number; readonly negated: boolean; readonly arg: Expr; readonly items: readonly LitExpr[] }
  | { readonly kind: 'call'; readonly pos: number; readonly name: string; readonly args: readonly Expr[] };

export type LitExpr = Extract<Expr, { kind: 'lit' }>;

// ---------------------------------------------------------------------------
// Typed tree (type checker output). Every node has its static type.

export type CastTarget = 'int' | 'float' | 'str' | 'bool';

/** How a comparison is evaluated, decided from the operand types. */
export type CmpMode =
  /** Both numbers (i64, f64, datetime); `!=` must be false when a NaN is involved. */
  | 'num'
  /** Both numbers, neither can be NaN (i64 / datetime only): plain JS operators. */
  | 'int'
  | 'str'
  | 'bool';

/** How arithmetic is evaluated. */
export type ArithMode =
  /** i64 result: saturated to the safe-integer range; `/` truncates; `/` and `%` by zero give null. */
  | 'int'
  /** f64 result: IEEE. */
  | 'float'
  /** str + str. */
  | 'concat';

export type TExpr =
  | { readonly kind: 'lit'; readonly type: ExprType; readonly value: LitValue }
  | { readonly kind: 'field'; readonly type: FieldType; readonly name: string }
  | { readonly kind: 'neg'; readonly type: ExprType; readonly int: boolean; readonly arg: TExpr }
  | { readonly kind: 'not'; readonly type: 'bool'; readonly arg: TExpr }
  | { readonly kind: 'arith'; readonly type: ExprType; readonly mode: ArithMode; readonly op: ArithOp; readonly left: TExpr; readonly right: TExpr }
  | { readonly kind: 'cmp'; readonly type: 'bool'; readonly mode: CmpMode; readonly op: CmpOp; readonly left: TExpr; readonly right: TExpr }
  /** `x == null` (negated: `x != null`) and `isnull(x)`: always true or false, never null. */
  | { readonly kind: 'isnull'; readonly type: 'bool'; readonly negated: boolean; readonly arg: TExpr }
  | { readonly kind: 'logic'; readonly type: 'bool'; readonly op: LogicOp; readonly left: TExpr; readonly right: TExpr }
  /** `items` are already converted to the runtime representation of `arg` (numbers, strings, booleans). */
  | { readonly kind: 'in'; readonly type: 'bool'; readonly negated: boolean; readonly arg: TExpr; readonly items: readonly (string | number | boolean)[] }
  | { readonly kind: 'cast'; readonly type: ExprType; readonly from: ExprType; readonly to: CastTarget; readonly arg: TExpr }
  | { readonly kind: 'coalesce'; readonly type: ExprType; readonly args: readonly TExpr[] }
  | { readonly kind: 'abs'; readonly type: ExprType; readonly arg: TExpr }
  | { readonly kind: 'case'; readonly type: 'str'; readonly upper: boolean; readonly arg: TExpr }
  | { readonly kind: 'length'; readonly type: 'i64'; readonly bytes: boolean; readonly arg: TExpr };
