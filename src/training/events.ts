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
import { csvValue, LineError, splitCsv, timeValue } from './input';

export interface TimedEvent {
  body: Record<string, unknown>;
  t: number;
  line: number;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export class EventLines {
  /** CSV: the header's column names (null until the header line is read). */
  #columns: string[] | null = null;
  #eventColumn = -1;
  #timeColumn = -1;

  constructor(
    readonly file: string,
    readonly registry: CompiledRegistry,
    readonly timeField: string,
    /** --event: the event of lines that are not envelopes; null: every line must be one. */
    readonly event: string | null,
  ) {}

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
