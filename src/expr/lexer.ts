/**
 * Tokenizer for the expression language (docs/expressions.md, "Lexical rules").
 * Produces the whole token list up front: expressions are short (at most
 * EXPRESSION_LENGTH_MAX characters) and lexed once, at register time.
 */
import { exprError } from './error';

export type TokKind =
  | 'int' // digits only
  | 'float' // digits with a fraction and/or an exponent
  | 'str' // quoted string, value unescaped
  | 'ident' // bare or backtick-quoted identifier
  | 'kw' // and or not in true false null
  | 'op' // punctuation and operators
  | 'eof';

export interface Token {
  readonly kind: TokKind;
  /** Identifier name, keyword, operator text, unescaped string, or literal digits. */
  readonly text: string;
  /** 0-based offset in the source. */
  readonly pos: number;
  /** True for `` `quoted` `` identifiers: never a keyword, never a function name. */
  readonly quoted: boolean;
}

const KEYWORDS: ReadonlySet<string> = new Set(['and', 'or', 'not', 'in', 'true', 'false', 'null']);

/** Longest match first: two-character operators before their one-character prefixes. */
const OPS2: ReadonlySet<string> = new Set(['==', '!=', '<=', '>=', '&&', '||']);
const OPS1: ReadonlySet<string> = new Set(['+', '-', '*', '/', '%', '<', '>', '(', ')', ',', '!']);

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
function isIdentStart(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}
function isIdentPart(c: number): boolean {
  return isIdentStart(c) || isDigit(c);
}
/** ASCII whitespace only: space, tab, LF, VT, FF, CR. */
function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

export function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src.charCodeAt(i);
    if (isSpace(c)) {
      i++;
    } else if (isDigit(c)) {
      i = lexNumber(src, i, out);
    } else if (isIdentStart(c)) {
      let j = i + 1;
      while (j < src.length && isIdentPart(src.charCodeAt(j))) j++;
      const word = src.slice(i, j);
      out.push({ kind: KEYWORDS.has(word) ? 'kw' : 'ident', text: word, pos: i, quoted: false });
      i = j;
    } else if (c === 39 /* ' */ || c === 34 /* " */) {
      i = lexString(src, i, out);
    } else if (c === 96 /* ` */) {
      i = lexQuotedIdent(src, i, out);
    } else {
      i = lexOperator(src, i, out);
    }
  }
  out.push({ kind: 'eof', text: '', pos: src.length, quoted: false });
  return out;
}

function lexOperator(src: string, i: number, out: Token[]): number {
  const two = src.slice(i, i + 2);
  if (OPS2.has(two)) {
    out.push({ kind: 'op', text: two, pos: i, quoted: false });
    return i + 2;
  }
  const one = src[i];
  if (OPS1.has(one)) {
    out.push({ kind: 'op', text: one, pos: i, quoted: false });
    return i + 1;
  }
  if (one === '=') throw exprError('invalid_expression', i, "unexpected '='; use '==' for equality");
  if (one === '&' || one === '|') throw exprError('invalid_expression', i, `unexpected '${one}'; use '${one}${one}' or '${one === '&' ? 'and' : 'or'}'`);
  throw exprError('invalid_expression', i, `unexpected character ${describeChar(src, i)}`);
}

function describeChar(src: string, i: number): string {
  const cp = src.codePointAt(i) ?? 0;
  const shown = cp >= 32 && cp !== 127 ? String.fromCodePoint(cp) : '';
  return `${JSON.stringify(shown)} (U+${cp.toString(16).toUpperCase().padStart(4, '0')})`;
}

/**
 * `digits` -> int; `digits.digits`, `digits[.digits]e[+-]digits` -> float.
 * A number glued to a letter (`12abc`, `1.5x`) is an error rather than two tokens.
 */
function lexNumber(src: string, start: number, out: Token[]): number {
  let i = start;
  while (i < src.length && isDigit(src.charCodeAt(i))) i++;
  let float = false;
  if (src[i] === '.') {
    i++;
    if (!isDigit(src.charCodeAt(i))) throw exprError('invalid_expression', i, "expected a digit after '.' in a number");
    while (i < src.length && isDigit(src.charCodeAt(i))) i++;
    float = true;
  }
  if (src[i] === 'e' || src[i] === 'E') {
    i++;
    if (src[i] === '+' || src[i] === '-') i++;
    if (!isDigit(src.charCodeAt(i))) throw exprError('invalid_expression', i, 'expected a digit in the exponent of a number');
    while (i < src.length && isDigit(src.charCodeAt(i))) i++;
    float = true;
  }
  if (i < src.length && (isIdentPart(src.charCodeAt(i)) || src[i] === '.')) {
    throw exprError('invalid_expression', start, `malformed number ${JSON.stringify(src.slice(start, i + 1))}`);
  }
  out.push({ kind: float ? 'float' : 'int', text: src.slice(start, i), pos: start, quoted: false });
  return i;
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = { '\\': '\\', "'": "'", '"': '"', n: '\n', t: '\t', r: '\r', '0': '\0' };

function lexString(src: string, start: number, out: Token[]): number {
  const quote = src[start];
  let i = start + 1;
  let value = '';
  for (;;) {
    if (i >= src.length) throw exprError('invalid_expression', start, 'unterminated string literal');
    const ch = src[i];
    if (ch === quote) break;
    if (ch !== '\\') {
      value += ch;
      i++;
      continue;
    }
    const esc = src[i + 1];
    if (esc !== undefined && Object.prototype.hasOwnProperty.call(SIMPLE_ESCAPES, esc)) {
      value += SIMPLE_ESCAPES[esc];
      i += 2;
    } else if (esc === 'u') {
      const [cp, next] = lexUnicodeEscape(src, i);
      value += String.fromCodePoint(cp);
      i = next;
    } else {
      const shown = esc === undefined ? 'at end of input' : JSON.stringify('\\' + esc);
      throw exprError('invalid_expression', i, `unknown escape ${shown} in string literal (use \\\\ for a backslash)`);
    }
  }
  out.push({ kind: 'str', text: value, pos: start, quoted: false });
  return i + 1;
}

/** `\uXXXX` (exactly four hex digits) or `\u{X...}` (1 to 6 hex digits, at most 10FFFF). */
function lexUnicodeEscape(src: string, at: number): [number, number] {
  let i = at + 2;
  let hex: string;
  if (src[i] === '{') {
    const close = src.indexOf('}', i);
    hex = close < 0 ? '' : src.slice(i + 1, close);
    i = close + 1;
    if (close < 0 || !/^[0-9A-Fa-f]{1,6}$/.test(hex)) throw exprError('invalid_expression', at, 'malformed \\u{...} escape');
  } else {
    hex = src.slice(i, i + 4);
    i += 4;
    if (!/^[0-9A-Fa-f]{4}$/.test(hex)) throw exprError('invalid_expression', at, 'malformed \\uXXXX escape (four hex digits)');
  }
  const cp = parseInt(hex, 16);
  if (cp > 0x10ffff) throw exprError('invalid_expression', at, 'code point above U+10FFFF in \\u{...} escape');
  return [cp, i];
}

/** `` `any text` `` with ``` `` ``` standing for one backtick. */
function lexQuotedIdent(src: string, start: number, out: Token[]): number {
  let i = start + 1;
  let name = '';
  for (;;) {
    if (i >= src.length) throw exprError('invalid_expression', start, 'unterminated `quoted` identifier');
    if (src[i] === '`') {
      if (src[i + 1] !== '`') break;
      name += '`';
      i += 2;
    } else {
      name += src[i];
      i++;
    }
  }
  if (name.length === 0) throw exprError('invalid_expression', start, 'empty `quoted` identifier');
  out.push({ kind: 'ident', text: name, pos: start, quoted: true });
  return i + 1;
}
