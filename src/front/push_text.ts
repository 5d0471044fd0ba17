/**
 * The push envelope read straight from its bytes into PUSH records, for the common
 * body: `{"event":"E","data":{"f":v,...}}` (or `"body"`), flat, strings ASCII
 * without escapes, numbers, true/false/null. One pass over the body's bytes (as
 * received: a TCP frame's payload, uWS's body buffer) checks the JSON grammar, the
 * envelope, the fields and their types and finds each value's place; the record's
 * values are copied from there (wal/push_record.ts feedAscii / valueAscii). No text
 * decoding, no JSON.parse, so no body string, no object, no key internalizing (V8's
 * string table lookups were ~4% of the front thread), no row, no key string.
 *
 * Only for events whose rows are their bodies as pushed (EventText.of: no chain,
 * filter, datetime, bytes, validator predicate or dedupe field; one-field keys).
 * Anything this reader does not take (an escape, a non-ASCII character, another
 * shape, a bad value of any kind) makes parse() answer null and the caller decodes
 * the body and runs the JSON.parse path from the start, so every error keeps its code, message and path;
 * what this reader does take is a body that path accepts, written into the same
 * record bytes (test/unit/front/push_text.test.ts checks both on generated bodies).
 * A body it takes is ASCII, so it is UTF-8: a byte at or above 0x80 anywhere makes it
 * answer null, and that path refuses a body that is not UTF-8 before decoding it
 * (util/utf8.ts), so the check costs the common push nothing.
 */
import type { EventPlan } from '../registry/compile';
import { hashKey, hashKeyAscii } from '../registry/key';
import type { PushFrameWriter } from '../wal/push_record';
import { KEY_BYTES_MAX } from '../limits';
import { stringBytesMax } from '../string_cap';
import { asciiString, sameAscii } from '../util/ascii';

/** What parse() found for a field, at its index. */
const ABSENT = 0;
const STR = 1;
const NUM = 2;
const TRUE = 3;
const FALSE = 4;
const NULL = 5;

/** Field types this reader checks (others make the event ineligible). */
const T_STR = 0;
const T_F64 = 1;
const T_I64 = 2;
const T_BOOL = 3;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const OPEN = 0x7b;
const CLOSE = 0x7d;

/** Powers of ten that are exact doubles (10^22 is the last). */
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);
/** Up to 15 digits an integer mantissa stays below 2^53, so it is exact. */
const EXACT_DIGITS_MAX = 15;

/** One table an event feeds, as the reader writes it. */
class TextFeed {
  constructor(
    readonly table: number,
    /** The key's field (an index into EventText.names). */
    readonly keyField: number,
    /** Field index per TablePlan.columns entry; -1: not a field of the event (absent). */
    readonly columns: Int32Array,
  ) {}
}

/** What the reader needs of one event, built once per EventPlan (the plan is per registry version). */
export class EventText {
  private constructor(
    readonly plan: EventPlan,
    readonly names: readonly string[],
    readonly types: Uint8Array,
    readonly required: Uint8Array,
    readonly feeds: readonly TextFeed[],
  ) {}

  /** The reader's form of `plan`, or null when its rows are not its bodies as pushed. */
  static of(plan: EventPlan): EventText | null {
    const v = plan.validator;
    if (v === null || !v.checkOnly || plan.dedupeField !== null || plan.derivs.length !== 1) return null;
    const names = Object.keys(plan.fields);
    const types = new Uint8Array(names.length);
    for (let f = 0; f < names.length; f++) {
      const t = plan.fields[names[f]];
      // A name Object.prototype has reads differently from a parsed object: leave it to JSON.parse.
      if (names[f] in Object.prototype || names[f] === '__proto__') return null;
      if (t === 'str') types[f] = T_STR;
      else if (t === 'f64') types[f] = T_F64;
      else if (t === 'i64') types[f] = T_I64;
      else if (t === 'bool') types[f] = T_BOOL;
      else return null;
    }
    const optional = new Set(plan.optional);
    const required = Uint8Array.from(names, (n) => (optional.has(n) ? 0 : 1));
    const feeds: TextFeed[] = [];
    for (const feed of plan.feeds) {
      const table = feed.table;
      if (feed.from !== 0 || feed.chain !== null || table.keyFields.length !== 1) return null;
      const keyField = names.indexOf(table.keyFields[0]);
      if (keyField < 0) return null;
      feeds.push(new TextFeed(table.index, keyField, Int32Array.from(table.columns, (c) => names.indexOf(c))));
    }
    return new EventText(plan, names, types, required, feeds);
  }
}

/**
 * The reader, one per front (the front is one thread and a push is read, routed
 * and written in one synchronous step, so the scratch below is reused by every push).
 */
export class PushText {
  /** The event of the last parse() that found one, and its reader's form (null: not eligible). */
  #lastEvents: ReadonlyMap<string, EventPlan> | null = null;
  #lastPlan: EventPlan | null = null;
  #last: EventText | null = null;
  readonly #forms = new WeakMap<EventPlan, EventText | null>();
  /** Per field of the last parse: what was found (ABSENT..NULL), where (STR), its number (NUM). */
  #kind = new Uint8Array(16);
  #from = new Int32Array(16);
  #to = new Int32Array(16);
  #num = new Float64Array(16);
  /** Per feed of the last route(): its shard (-1: none) and, for a non-string key, the key. */
  #shard = new Int32Array(16);
  readonly #keys: Array<string | null> = [];

  /**
   * Reads a push body, the bytes b[start, end). Returns the event it is for, with
   * every field read and checked, or null: then nothing happened, and the JSON.parse
   * path must read it.
   */
  parse(b: Uint8Array, start: number, end: number, events: ReadonlyMap<string, EventPlan>): EventText | null {
    let i = ws(b, start, end);
    if (at(b, i, end) !== OPEN) return null;
    i = ws(b, i + 1, end);
    // "event": the first key.
    if (!isWord(b, i, end, '"event"')) return null;
    i = ws(b, i + 7, end);
    if (at(b, i, end) !== COLON) return null;
    i = ws(b, i + 1, end);
    if (at(b, i, end) !== QUOTE) return null;
    const nameFrom = i + 1;
    const nameTo = asciiEnd(b, nameFrom, end);
    if (nameTo < 0) return null;
    const ev = this.#event(b, nameFrom, nameTo, events);
    if (ev === null) return null;
    i = ws(b, nameTo + 1, end);
    if (at(b, i, end) !== COMMA) return null;
    i = ws(b, i + 1, end);
    // "data" (or its alias "body"), the second and last key.
    if (!isWord(b, i, end, '"data"') && !isWord(b, i, end, '"body"')) return null;
    i = ws(b, i + 6, end);
    if (at(b, i, end) !== COLON) return null;
    i = ws(b, i + 1, end);
    if (at(b, i, end) !== OPEN) return null;
    i = this.#fields(b, ws(b, i + 1, end), end, ev);
    if (i < 0) return null;
    i = ws(b, i, end);
    if (at(b, i, end) !== CLOSE) return null;
    if (ws(b, i + 1, end) !== end) return null;
    return this.#check(ev) ? ev : null;
  }

  /**
   * The shards of the last parse()'s feeds (a mask, bit s: shard s of `shards`; 0 when no
   * feed has a key), or -1 when a key is over KEY_BYTES_MAX (the JSON.parse path answers it).
   * `b` is the body parse() read.
   *
   * This and write() are PushRoute.route() and write() (front/routing.ts) over byte
   * ranges of the body instead of a row, kept apart on purpose: one loop for both would
   * get each feed's key, hash and values through a per-feed call (or build a key string
   * per feed), on every push, which is what this reader exists to avoid.
   */
  route(ev: EventText, b: Uint8Array, shards: number): number {
    const feeds = ev.feeds;
    const shard = this.#shard.length >= feeds.length ? this.#shard : (this.#shard = new Int32Array(feeds.length));
    const keys = this.#keys; // entries past feeds.length are stale and never read
    let mask = 0;
    for (let i = 0; i < feeds.length; i++) {
      const f = feeds[i].keyField;
      const k = this.#kind[f];
      keys[i] = null;
      shard[i] = -1;
      if (k === ABSENT || k === NULL) continue;
      let s = 0;
      if (k === STR) {
        const from = this.#from[f];
        const to = this.#to[f];
        if (to - from > KEY_BYTES_MAX) return -1;
        if (shards > 1) s = hashKeyAscii(b, from, to) % shards;
      } else {
        // A number or a boolean key: its canonical string (registry/key.ts part()).
        const key = k === NUM ? String(this.#num[f]) : k === TRUE ? 'true' : 'false';
        keys[i] = key;
        if (shards > 1) s = hashKey(key) % shards;
      }
      shard[i] = s;
      mask |= 1 << s;
    }
    return mask;
  }

  /** Writes the PUSH record of shard `s` for the last route() (as front/routing.ts PushRoute.write does). Its bytes, or -1. */
  write(w: PushFrameWriter, s: number, ev: EventText, b: Uint8Array, lsn: number, t: number, version: number): number {
    w.begin(lsn, t, version, ev.plan.index, null);
    const feeds = ev.feeds;
    const kind = this.#kind;
    for (let i = 0; i < feeds.length; i++) {
      if (this.#shard[i] !== s) continue;
      const feed = feeds[i];
      const key = this.#keys[i];
      if (key === null) w.feedAscii(feed.table, b, this.#from[feed.keyField], this.#to[feed.keyField]);
      else w.feed(feed.table, key);
      const cols = feed.columns;
      for (let c = 0; c < cols.length; c++) {
        const f = cols[c];
        const k = f < 0 ? ABSENT : kind[f];
        if (k === STR) w.valueAscii(b, this.#from[f], this.#to[f]);
        else if (k === NUM) w.value(this.#num[f]);
        else w.value(k === ABSENT ? undefined : k === NULL ? null : k === TRUE);
      }
    }
    return w.end();
  }

  #event(b: Uint8Array, from: number, to: number, events: ReadonlyMap<string, EventPlan>): EventText | null {
    const last = this.#lastPlan;
    // The same name as the last push, under the same registry: no string, no map lookup.
    if (last !== null && events === this.#lastEvents && sameAscii(last.name, b, from, to - from)) return this.#last;
    const plan = events.get(asciiString(b, from, to));
    if (plan === undefined) return null;
    let ev = this.#forms.get(plan);
    if (ev === undefined) {
      ev = EventText.of(plan);
      this.#forms.set(plan, ev);
    }
    this.#lastEvents = events;
    this.#lastPlan = plan;
    this.#last = ev;
    if (ev !== null && this.#kind.length < ev.names.length) {
      const m = ev.names.length;
      this.#kind = new Uint8Array(m);
      this.#from = new Int32Array(m);
      this.#to = new Int32Array(m);
      this.#num = new Float64Array(m);
    }
    return ev;
  }

  /** Reads the data object's members from `i` (after its '{'); returns the offset after its '}', or -1. */
  #fields(b: Uint8Array, i: number, end: number, ev: EventText): number {
    const names = ev.names;
    const kind = this.#kind;
    // A loop, not fill(): TypedArray#fill is a call into V8's C++ runtime (it showed in the front's profile).
    for (let f = 0; f < names.length; f++) kind[f] = ABSENT;
    if (at(b, i, end) === CLOSE) return i + 1;
    let next = 0;
    for (;;) {
      if (at(b, i, end) !== QUOTE) return -1;
      const keyTo = asciiEnd(b, i + 1, end);
      if (keyTo < 0) return -1;
      // Bodies list fields in declared order: try the next one first.
      const f = next < names.length && sameAscii(names[next], b, i + 1, keyTo - i - 1) ? next : fieldOf(names, b, i + 1, keyTo);
      if (f < 0 || kind[f] !== ABSENT) return -1; // undeclared or repeated: JSON.parse's path says which
      next = f + 1;
      i = ws(b, keyTo + 1, end);
      if (at(b, i, end) !== COLON) return -1;
      i = ws(b, i + 1, end);
      const c = at(b, i, end);
      if (c === QUOTE) {
        const to = asciiEnd(b, i + 1, end);
        if (to < 0) return -1;
        kind[f] = STR;
        this.#from[f] = i + 1;
        this.#to[f] = to;
        i = to + 1;
      } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
        i = this.#number(b, i, end, f);
        if (i < 0) return -1;
      } else if (isWord(b, i, end, 'true')) {
        kind[f] = TRUE;
        i += 4;
      } else if (isWord(b, i, end, 'false')) {
        kind[f] = FALSE;
        i += 5;
      } else if (isWord(b, i, end, 'null')) {
        kind[f] = NULL;
        i += 4;
      } else {
        return -1;
      }
      i = ws(b, i, end);
      const d = at(b, i, end);
      if (d === CLOSE) return i + 1;
      if (d !== COMMA) return -1;
      i = ws(b, i + 1, end);
    }
  }

  /**
   * A JSON number at `i` (grammar checked strictly: JSON.parse must agree that it is
   * one) into field `f`; returns the offset after it, or -1. The value is the double
   * JSON.parse gives: up to 15 digits with at most 22 after the point, mantissa /
   * 10^k is one correctly rounded division of two exact doubles; anything longer,
   * or with an exponent, goes through Number(), which rounds as JSON.parse does.
   */
  #number(b: Uint8Array, i: number, end: number, f: number): number {
    const start = i;
    let neg = false;
    if (at(b, i, end) === MINUS) { neg = true; i++; }
    let c = at(b, i, end);
    let m = 0;
    let digits = 0;
    if (c === ZERO) {
      i++;
    } else if (c > ZERO && c <= NINE) {
      while (c >= ZERO && c <= NINE) { m = m * 10 + (c - ZERO); digits++; c = at(b, ++i, end); }
    } else {
      return -1;
    }
    let scale = 0;
    if (at(b, i, end) === DOT) {
      c = at(b, ++i, end);
      if (!(c >= ZERO && c <= NINE)) return -1;
      while (c >= ZERO && c <= NINE) { m = m * 10 + (c - ZERO); digits++; scale++; c = at(b, ++i, end); }
    }
    let exact = digits <= EXACT_DIGITS_MAX && scale < POW10.length;
    c = at(b, i, end);
    if (c === 0x65 || c === 0x45) { // e, E
      c = at(b, ++i, end);
      if (c === PLUS || c === MINUS) c = at(b, ++i, end);
      if (!(c >= ZERO && c <= NINE)) return -1;
      while (c >= ZERO && c <= NINE) c = at(b, ++i, end);
      exact = false;
    }
    let v: number;
    if (exact) {
      v = scale === 0 ? m : m / POW10[scale];
      if (neg) v = -v;
    } else {
      v = Number(asciiString(b, start, i));
    }
    this.#kind[f] = NUM;
    this.#num[f] = v;
    return i;
  }

  /** The push validator's type check (registry/push_validator.ts) on what #fields read; false: let it answer. */
  #check(ev: EventText): boolean {
    const kind = this.#kind;
    const types = ev.types;
    for (let f = 0; f < types.length; f++) {
      const k = kind[f];
      if (k === ABSENT || k === NULL) {
        if (ev.required[f] === 1) return false;
        continue;
      }
      switch (types[f]) {
        case T_STR:
          // ASCII: its UTF-8 bytes are its length.
          if (k !== STR || this.#to[f] - this.#from[f] > stringBytesMax()) return false;
          break;
        case T_F64: {
          const v = this.#num[f];
          if (k !== NUM || !(v >= -Number.MAX_VALUE && v <= Number.MAX_VALUE)) return false;
          break;
        }
        case T_I64: {
          const v = this.#num[f];
          if (k !== NUM || !Number.isInteger(v) || v < Number.MIN_SAFE_INTEGER || v > Number.MAX_SAFE_INTEGER) return false;
          break;
        }
        default:
          if (k !== TRUE && k !== FALSE) return false;
      }
    }
    return true;
  }
}

/** b[i], or -1 at or past `end` (the body's end: a TCP frame's payload is followed by other frames' bytes). */
function at(b: Uint8Array, i: number, end: number): number {
  return i < end ? b[i] : -1;
}

/** The offset after JSON whitespace from `i`. */
function ws(b: Uint8Array, i: number, end: number): number {
  for (;;) {
    const c = at(b, i, end);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/**
 * The offset of the quote closing a string whose contents start at `i`, or -1 when
 * a byte before it is not printable ASCII (a control character, an escape, a byte of
 * a multi-byte UTF-8 character) or there is no closing quote before `end`, or none
 * within the string cap (string_cap.ts; a longer value is refused: the JSON.parse path
 * says so, and a 4 MiB string is not scanned twice).
 */
function asciiEnd(b: Uint8Array, i: number, end: number): number {
  const last = Math.min(end, i + stringBytesMax() + 1);
  for (; i < last; i++) {
    const c = b[i];
    if (c === QUOTE) return i;
    if (c < 0x20 || c >= 0x80 || c === BACKSLASH) return -1;
  }
  return -1;
}

/** b[i, end) starts with the ASCII string `w`. */
function isWord(b: Uint8Array, i: number, end: number, w: string): boolean {
  if (i + w.length > end) return false;
  for (let j = 0; j < w.length; j++) if (b[i + j] !== w.charCodeAt(j)) return false;
  return true;
}

function fieldOf(names: readonly string[], b: Uint8Array, from: number, to: number): number {
  for (let f = 0; f < names.length; f++) if (sameAscii(names[f], b, from, to - from)) return f;
  return -1;
}
