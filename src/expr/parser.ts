/**
 * Recursive-descent parser: tokens -> untyped tree (ast.ts). Precedence, lowest
 * first (docs/expressions.md has the table):
 *
 *   or ||  <  and &&  <  not  <  == != < <= > >= in, not in  <  + -  <  * / %  <  unary - !
 *
 * Binary operators are left-associative; comparisons do not chain (`a < b < c`
 * is an error, as in Python it would silently mean something else).
 */
import { EXPRESSION_DEPTH_MAX, EXPRESSION_LENGTH_MAX } from '../limits';
import type { ArithOp, CmpOp, Expr, LitExpr } from './ast';
import { exprError } from './error';
import { tokenize, type Token } from './lexer';

export function parse(src: string): Expr {
  if (src.length > EXPRESSION_LENGTH_MAX) {
    throw exprError('invalid_expression', EXPRESSION_LENGTH_MAX, `expression is longer than ${EXPRESSION_LENGTH_MAX} characters`);
  }
  const p = new Parser(tokenize(src));
  if (p.peek().kind === 'eof') throw exprError('invalid_expression', 0, 'empty expression');
  const e = p.parseExpr();
  const end = p.peek();
  if (end.kind !== 'eof') throw exprError('invalid_expression', end.pos, `unexpected ${describe(end)} after a complete expression`);
  checkHeight(e, 1);
  return e;
}

const CMP_OPS: ReadonlySet<string> = new Set(['==', '!=', '<', '<=', '>', '>=']);

export function describe(t: Token): string {
  switch (t.kind) {
    case 'eof':
      return 'end of input';
    case 'str':
      return `string ${JSON.stringify(t.text)}`;
    case 'ident':
      return t.quoted ? `identifier \`${t.text}\`` : `identifier '${t.text}'`;
    case 'int':
    case 'float':
      return `number ${t.text}`;
    default:
      return `'${t.text}'`;
  }
}

/**
 * Rejects trees taller than EXPRESSION_DEPTH_MAX. Recursion here is bounded by
 * the token count (at most EXPRESSION_LENGTH_MAX / 2 levels for `a+a+a...`),
 * which the JS stack handles; later passes only see trees that passed.
 */
function checkHeight(e: Expr, depth: number): void {
  if (depth > EXPRESSION_DEPTH_MAX) {
    throw exprError('invalid_expression', e.pos, `expression is nested deeper than ${EXPRESSION_DEPTH_MAX} levels`);
  }
  switch (e.kind) {
    case 'lit':
    case 'field':
      return;
    case 'neg':
    case 'not':
    case 'in':
      checkHeight(e.arg, depth + 1);
      return;
    case 'arith':
    case 'cmp':
    case 'logic':
      checkHeight(e.left, depth + 1);
      checkHeight(e.right, depth + 1);
      return;
    case 'call':
      for (const a of e.args) checkHeight(a, depth + 1);
      return;
  }
}

class Parser {
  private readonly toks: Token[];
  private at: number;
  /** Current recursion nesting (parentheses, prefix operators, calls); bounds the JS stack. */
  private nesting: number;

  constructor(toks: Token[]) {
    this.toks = toks;
    this.at = 0;
    this.nesting = 0;
  }

  peek(offset = 0): Token {
    return this.toks[Math.min(this.at + offset, this.toks.length - 1)];
  }

  private next(): Token {
    const t = this.toks[this.at];
    if (this.at < this.toks.length - 1) this.at++;
    return t;
  }

  private isOp(text: string): boolean {
    const t = this.peek();
    return t.kind === 'op' && t.text === text;
  }

  private isKw(text: string, offset = 0): boolean {
    const t = this.peek(offset);
    return t.kind === 'kw' && t.text === text;
  }

  private expectOp(text: string, what: string): Token {
    const t = this.peek();
    if (t.kind !== 'op' || t.text !== text) throw exprError('invalid_expression', t.pos, `expected '${text}' ${what}, found ${describe(t)}`);
    return this.next();
  }

  private enter(pos: number): void {
    if (++this.nesting > EXPRESSION_DEPTH_MAX) {
      throw exprError('invalid_expression', pos, `expression is nested deeper than ${EXPRESSION_DEPTH_MAX} levels`);
    }
  }

  parseExpr(): Expr {
    return this.parseOr();
  }

  private parseOr(): Expr {
    let left = this.parseAnd();
    while (this.isKw('or') || this.isOp('||')) {
      const pos = this.next().pos;
      left = { kind: 'logic', pos, op: 'or', left, right: this.parseAnd() };
    }
    return left;
  }

  private parseAnd(): Expr {
    let left = this.parseNot();
    while (this.isKw('and') || this.isOp('&&')) {
      const pos = this.next().pos;
      left = { kind: 'logic', pos, op: 'and', left, right: this.parseNot() };
    }
    return left;
  }

  private parseNot(): Expr {
    if (!this.isKw('not')) return this.parseCmp();
    const pos = this.next().pos;
    this.enter(pos);
    const arg = this.parseNot();
    this.nesting--;
    return { kind: 'not', pos, arg };
  }

  private parseCmp(): Expr {
    const left = this.parseAdd();
    const e = this.parseCmpTail(left);
    if (e === left) return e;
    const t = this.peek();
    if ((t.kind === 'op' && CMP_OPS.has(t.text)) || this.isKw('in') || (this.isKw('not') && this.isKw('in', 1))) {
      throw exprError('invalid_expression', t.pos, `comparisons do not chain: put parentheses around one of them or join them with 'and'`);
    }
    return e;
  }

  private parseCmpTail(left: Expr): Expr {
    const t = this.peek();
    if (t.kind === 'op' && CMP_OPS.has(t.text)) {
      this.next();
      return { kind: 'cmp', pos: t.pos, op: t.text as CmpOp, left, right: this.parseAdd() };
    }
    if (this.isKw('in')) {
      this.next();
      return { kind: 'in', pos: t.pos, negated: false, arg: left, items: this.parseList() };
    }
    if (this.isKw('not') && this.isKw('in', 1)) {
      this.next();
      this.next();
      return { kind: 'in', pos: t.pos, negated: true, arg: left, items: this.parseList() };
    }
    return left;
  }

  /** `( literal, literal, ... )`: at least one element; numbers may carry a leading '-'. */
  private parseList(): LitExpr[] {
    this.expectOp('(', "after 'in'");
    const items: LitExpr[] = [];
    for (;;) {
      items.push(this.parseListItem());
      if (this.isOp(')')) break;
      this.expectOp(',', "or ')' in an 'in' list");
    }
    this.next();
    return items;
  }

  private parseListItem(): LitExpr {
    const t = this.peek();
    if (t.kind === 'op' && t.text === '-') {
      this.next();
      const num = this.peek();
      if (num.kind !== 'int' && num.kind !== 'float') {
        throw exprError('invalid_expression', num.pos, `expected a number after '-' in an 'in' list, found ${describe(num)}`);
      }
      this.next();
      return numberLiteral(num, true, t.pos);
    }
    if (t.kind === 'kw' && t.text === 'null') {
      throw exprError('invalid_expression', t.pos, "null cannot be an element of an 'in' list; test it with 'x == null' or isnull(x)");
    }
    if (t.kind === 'int' || t.kind === 'float' || t.kind === 'str' || (t.kind === 'kw' && (t.text === 'true' || t.text === 'false'))) {
      return this.parseLiteral();
    }
    throw exprError('invalid_expression', t.pos, `'in' lists hold literals only (numbers, strings, true, false); found ${describe(t)}`);
  }

  private parseAdd(): Expr {
    let left = this.parseMul();
    while (this.isOp('+') || this.isOp('-')) {
      const t = this.next();
      left = { kind: 'arith', pos: t.pos, op: t.text as ArithOp, left, right: this.parseMul() };
    }
    return left;
  }

  private parseMul(): Expr {
    let left = this.parseUnary();
    while (this.isOp('*') || this.isOp('/') || this.isOp('%')) {
      const t = this.next();
      left = { kind: 'arith', pos: t.pos, op: t.text as ArithOp, left, right: this.parseUnary() };
    }
    return left;
  }

  private parseUnary(): Expr {
    const t = this.peek();
    if (t.kind !== 'op' || (t.text !== '-' && t.text !== '!')) return this.parsePrimary();
    this.next();
    const num = this.peek();
    // `-5` is one literal, so that -9007199254740991 and -0.0 keep their exact value.
    if (t.text === '-' && (num.kind === 'int' || num.kind === 'float')) {
      this.next();
      return numberLiteral(num, true, t.pos);
    }
    this.enter(t.pos);
    const arg = this.parseUnary();
    this.nesting--;
    return t.text === '-' ? { kind: 'neg', pos: t.pos, arg } : { kind: 'not', pos: t.pos, arg };
  }

  private parsePrimary(): Expr {
    const t = this.peek();
    if (t.kind === 'op' && t.text === '(') {
      this.next();
      this.enter(t.pos);
      const e = this.parseExpr();
      this.nesting--;
      this.expectOp(')', `to close the '(' at column ${t.pos + 1}`);
      return e;
    }
    if (t.kind === 'ident') {
      this.next();
      if (!t.quoted && this.isOp('(')) return this.parseCall(t);
      return { kind: 'field', pos: t.pos, name: t.text };
    }
    if (t.kind === 'int' || t.kind === 'float' || t.kind === 'str' || t.kind === 'kw') {
      if (t.kind !== 'kw' || t.text === 'true' || t.text === 'false' || t.text === 'null') return this.parseLiteral();
    }
    const hint = t.kind === 'kw' && t.text !== 'not' ? ` (a field named '${t.text}' must be written \`${t.text}\`)` : '';
    throw exprError('invalid_expression', t.pos, `expected an operand, found ${describe(t)}${hint}`);
  }

  private parseLiteral(): LitExpr {
    const t = this.next();
    switch (t.kind) {
      case 'int':
      case 'float':
        return numberLiteral(t, false, t.pos);
      case 'str':
        return { kind: 'lit', pos: t.pos, type: 'str', value: t.text };
      default:
        if (t.text === 'null') return { kind: 'lit', pos: t.pos, type: 'null', value: null };
        return { kind: 'lit', pos: t.pos, type: 'bool', value: t.text === 'true' };
    }
  }

  private parseCall(name: Token): Expr {
    const open = this.next();
    this.enter(open.pos);
    const args: Expr[] = [];
    if (!this.isOp(')')) {
      for (;;) {
        args.push(this.parseExpr());
        if (this.isOp(')')) break;
        this.expectOp(',', `or ')' in the arguments of ${name.text}()`);
      }
    }
    this.next();
    this.nesting--;
    return { kind: 'call', pos: name.pos, name: name.text, args };
  }
}

/** Integer literals must be safe integers (i64 values are JS numbers); floats must be finite. */
function numberLiteral(t: Token, negative: boolean, pos: number): LitExpr {
  const magnitude = Number(t.text);
  const value = negative ? -magnitude : magnitude;
  if (t.kind === 'int') {
    if (!Number.isSafeInteger(magnitude)) {
      throw exprError('invalid_expression', pos, `integer literal ${negative ? '-' : ''}${t.text} is outside the i64 range of ±${Number.MAX_SAFE_INTEGER}`);
    }
    return { kind: 'lit', pos, type: 'i64', value: value + 0 };
  }
  if (!Number.isFinite(magnitude)) throw exprError('invalid_expression', pos, `float literal ${t.text} is out of range`);
  return { kind: 'lit', pos, type: 'f64', value };
}
