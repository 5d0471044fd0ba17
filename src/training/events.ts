/**
 * Event lines of `streamfeat replay --events FILE` (docs/training.md "Input files")
 * into push envelopes and their times. A line is either the push envelope
 * `{"event": E, "data": {...}}` with the time field beside `event` (or inside
 * `data`), or, with --event E (or an `event` column), the event's fields alone
 * (NDJSON object, CSV row, Parquet row) with the time field among them. The time field is taken out of the data unless
 * the event's schema declares a field of that name (then it is both).
 */
import type { CompiledRegistry } from '../registry/compile';
import type { FieldType } from '../types';
import { isObj, type Obj } from '../util/plain_object';
import { csvValue, LineError, splitCsv, timeValue } from './input';

export interface TimedEvent {
  body: Record<string, unknown>;
  t: number;
  line: number;
}


export class EventLines {
  /** CSV: the header's column names (null until the header line is read). */
  #columns: string[] | null = null;
  #eventColumn = -1;
  #timeColumn = -1;

  /** `,"<time field>":` as bytes: the tail the byte fast path looks for (timeTail). */
  readonly #tail: Buffer;
  /** The time timeTail() read. */
  tailT = 0;

  constructor(
    readonly file: string,
    readonly registry: CompiledRegistry,
    readonly timeField: string,
    /** --event: the event of lines that are not envelopes; null: every line must be one. */
    readonly event: string | null,
  ) {
    this.#tail = Buffer.from(`,${JSON.stringify(timeField)}:`);
  }

  /**
   * For a line b[start, end) that ends in `,"<time field>":<digits>}` (the time as the
   * envelope's last member, as JSON.stringify({...envelope, t}) writes it): the offset
   * of that comma, with the time in `tailT`; else -1. The bytes before the comma plus a
   * closing brace are then the push envelope itself, which the engine may read from its
   * bytes (OfflineEngine.pushBytes) without parsing the line.
   */
  timeTail(b: Uint8Array, start: number, end: number): number {
    let i = end - 1;
    while (i > start && (b[i] === 0x20 || b[i] === 0x09)) i--;
    if (b[i] !== 0x7d) return -1;
    let t = 0;
    let scale = 1;
    let j = i - 1;
    for (; j > start && b[j] >= 0x30 && b[j] <= 0x39; j--) { t += (b[j] - 0x30) * scale; scale *= 10; }
    if (j === i - 1 || i - 1 - j > 15) return -1;
    const tail = this.#tail;
    const at = j + 1 - tail.length;
    if (at <= start) return -1;
    for (let k = 0; k < tail.length; k++) if (b[at + k] !== tail[k]) return -1;
    this.tailT = t;
    return at;
  }

  #keepsTime(event: string): boolean {
    const plan = this.registry.events.get(event);
    return plan !== undefined && plan.fields[this.timeField] !== undefined;
  }

  #time(v: unknown, n: number): number {
    try {
      return timeValue(v);
    } catch (err) {
      throw new LineError(this.file, n, 'invalid_time', `${this.timeField}: ${(err as Error).message}`);
    }
  }

  /** One NDJSON line. Throws LineError. */
  ndjson(text: string, n: number): TimedEvent {
    let obj: unknown;
    try {
      obj = JSON.parse(text);
    } catch (err) {
      throw new LineError(this.file, n, 'invalid_json', (err as Error).message);
    }
    if (!isObj(obj)) throw new LineError(this.file, n, 'invalid_line', 'a line must be a JSON object');
    return this.object(obj, n);
  }

  /** One parsed line or Parquet row (the caller's own object: edited in place). Throws LineError. */
  object(obj: Obj, n: number): TimedEvent {
    const tf = this.timeField;
    // The parsed object is this line's own: the time field is taken out of it in place.
    if (typeof obj.event === 'string' && (isObj(obj.data) || isObj(obj.body))) {
      const data = (isObj(obj.data) ? obj.data : obj.body) as Obj;
      let t: number;
      if (tf in obj) {
        t = this.#time(obj[tf], n);
        delete obj[tf];
      } else {
        t = this.#time(data[tf], n);
        if (!this.#keepsTime(obj.event)) delete data[tf];
      }
      return { body: obj, t, line: n };
    }
    let event = this.event;
    if (event === null && typeof obj.event === 'string' && !isObj(obj.data)) {
      // An `event` column beside the fields (CSV and Parquet files may carry one).
      event = obj.event;
      delete obj.event;
    }
    if (event === null) throw new LineError(this.file, n, 'invalid_line', 'the line is not a push envelope {"event": ..., "data": {...}}; pass --event NAME for lines of one event\'s fields');
    const t = this.#time(obj[tf], n);
    if (!this.#keepsTime(event)) delete obj[tf];
    return { body: { event, data: obj }, t, line: n };
  }

  /** A CSV line: the header (returns null) or a row. Throws LineError. */
  csv(text: string, n: number): TimedEvent | null {
    const cells = splitCsv(text);
    if (cells === null) throw new LineError(this.file, n, 'invalid_csv', 'a quoted field does not close on this line');
    if (this.#columns === null) {
      this.#columns = cells.map((c) => c.trim());
      this.#eventColumn = this.#columns.indexOf('event');
      this.#timeColumn = this.#columns.indexOf(this.timeField);
      if (this.#timeColumn < 0) throw new LineError(this.file, n, 'invalid_csv', `the header has no ${JSON.stringify(this.timeField)} column (--time-field)`);
      if (this.event === null && this.#eventColumn < 0) throw new LineError(this.file, n, 'invalid_csv', 'the header has no "event" column; pass --event NAME');
      return null;
    }
    const cols = this.#columns;
    if (cells.length !== cols.length) throw new LineError(this.file, n, 'invalid_csv', `${cells.length} fields; the header has ${cols.length}`);
    const event = this.event ?? cells[this.#eventColumn];
    const fields = this.registry.events.get(event)?.fields ?? {};
    const keepsTime = fields[this.timeField] !== undefined;
    const data: Obj = {};
    for (let i = 0; i < cols.length; i++) {
      if (i === this.#eventColumn && this.event === null) continue;
      if (i === this.#timeColumn && !keepsTime) continue;
      let v: unknown;
      try {
        v = csvValue(cells[i], fields[cols[i]] as FieldType | undefined);
      } catch (err) {
        throw new LineError(this.file, n, 'invalid_event', `${cols[i]}: ${(err as Error).message}`);
      }
      if (v !== undefined) data[cols[i]] = v;
    }
    return { body: { event, data }, t: this.#time(cells[this.#timeColumn], n), line: n };
  }
}
