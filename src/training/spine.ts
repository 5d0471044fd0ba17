/**
 * Spines (docs/training.md "Spines"): the (entity key, time) pairs a training set
 * asks rows for, one per line, NDJSON or CSV. Columns:
 *
 *   key             the entity key as a get sends it (a scalar, or an array for a
 *                   composite key); or instead one column per key field, by name
 *   time_ms         the time (--spine-time-field): epoch ms or RFC 3339
 *   table           optional; else --table (lines of other tables are counted and skipped)
 *   features        optional: the features of this line's row (an array of names, or
 *                   in CSV names joined by "|"), as the served-row log records a get
 *                   that named some; else --features, else every feature
 *   lsn             optional (export only): the log position to answer at, as the
 *                   served-row log records it; when every line has one, rows are
 *                   read at exactly that position instead of by time
 *   anything else   passed through to the output line unchanged (labels, ids)
 *
 * A served-row log file is a spine as it is: its `row` column is replaced by the
 * answer, its `request_id` and `registry_version` pass through.
 */
import type { TablePlan } from '../registry/compile';
import { parseWireKey } from '../registry/key';
import { SfError } from '../errors';
import { isObj, type Obj } from '../util/plain_object';
import { UsageError } from '../cli_args';
import { csvValue, formatOf, LineError, readLines, splitCsv, timeValue, type BadLines } from './input';

export interface SpineRow {
  /** Position among the spine's rows (the output keeps this order). */
  index: number;
  line: number;
  table: string;
  /** Canonical key (registry/key.ts), and as JSON for the output. */
  key: string;
  keyJson: string;
  t: number;
  /** -1: none. */
  lsn: number;
  /** This line's features; null: the tool's --features (or every feature). */
  features: string[] | null;
  /** The passed-through columns as JSON members, each starting with a comma ('' when none). */
  extra: string;
}

/** Columns the output writes itself: a spine column of one of these names is not passed through. */
const OUTPUT_COLUMNS = new Set(['table', 'key', 'lsn', 'row', 'error', 'features']);

export interface SpineOptions {
  /** --table; null: every line names its table. */
  table: string | null;
  timeField: string;
  /** The plan a table's keys are read against (the newest version that has it), or undefined. */
  tableOf(name: string): TablePlan | undefined;
}

export interface Spine {
  rows: SpineRow[];
  /** Lines naming another table than --table (skipped, counted). */
  otherTables: number;
  /** Every row has an lsn. */
  allLsn: boolean;
}


/** Reads the whole spine (rows are answered out of file order). Bad lines go to `bad` (stop, or skip and count). */
export async function loadSpine(file: string, opts: SpineOptions, bad: BadLines): Promise<Spine> {
  const format = formatOf(file);
  if (format === 'parquet') throw new UsageError(`${file}: a spine is NDJSON or CSV`, false);
  const rows: SpineRow[] = [];
  let otherTables = 0;
  let header: string[] | null = null;
  for await (const { n, text } of readLines(file)) {
    try {
      let obj: Obj;
      if (format === 'csv') {
        const cells = splitCsv(text);
        if (cells === null) throw new LineError(file, n, 'invalid_csv', 'a quoted field does not close on this line');
        if (header === null) { header = cells.map((c) => c.trim()); continue; }
        if (cells.length !== header.length) throw new LineError(file, n, 'invalid_csv', `${cells.length} fields; the header has ${header.length}`);
        obj = {};
        for (let i = 0; i < header.length; i++) { const v = csvValue(cells[i], undefined); if (v !== undefined) obj[header[i]] = v; }
      } else {
        let parsed: unknown;
        try { parsed = JSON.parse(text); } catch (err) { throw new LineError(file, n, 'invalid_json', (err as Error).message); }
        if (!isObj(parsed)) throw new LineError(file, n, 'invalid_line', 'a spine line must be a JSON object');
        obj = parsed;
      }
      const row = spineRow(file, n, obj, rows.length, opts);
      if (row === null) { otherTables++; continue; }
      rows.push(row);
    } catch (err) {
      if (!(err instanceof LineError)) throw err;
      bad.take(err);
    }
  }
  return { rows, otherTables, allLsn: rows.length > 0 && rows.every((r) => r.lsn >= 0) };
}

/** One spine line as a row; null when it names another table than --table. Throws LineError. */
function spineRow(file: string, n: number, obj: Obj, index: number, opts: SpineOptions): SpineRow | null {
  const named = obj.table;
  if (named !== undefined && typeof named !== 'string') throw new LineError(file, n, 'invalid_spine', 'table must be a string');
  if (opts.table !== null && named !== undefined && named !== opts.table) return null;
  const tableName = opts.table ?? named;
  if (tableName === undefined) throw new LineError(file, n, 'invalid_spine', 'the line names no table; give --table or a "table" column');
  const plan = opts.tableOf(tableName);
  if (plan === undefined) throw new LineError(file, n, 'unknown_table', `table ${JSON.stringify(tableName)} is in no registry version of this history`);
  const fromFields = !('key' in obj);
  let wire: unknown;
  if (!fromFields) wire = obj.key;
  else if (plan.keyFields.length === 1) wire = obj[plan.keyFields[0]];
  else wire = plan.keyFields.map((f) => obj[f]);
  if (fromFields && (Array.isArray(wire) ? wire.some((w) => w === undefined) : wire === undefined)) {
    throw new LineError(file, n, 'invalid_spine', `the line has no "key" column and no ${plan.keyFields.map((f) => JSON.stringify(f)).join(', ')} (the key of ${plan.name})`);
  }
  let key: string;
  try {
    key = parseWireKey(wire, plan.keyFields, plan.keyTypes, 'key');
  } catch (err) {
    if (!(err instanceof SfError)) throw err;
    throw new LineError(file, n, err.code, err.message);
  }
  let t: number;
  try {
    t = timeValue(obj[opts.timeField]);
  } catch (err) {
    throw new LineError(file, n, 'invalid_time', `${opts.timeField}: ${(err as Error).message}`);
  }
  let lsn = -1;
  const l = obj.lsn;
  if (l !== undefined && l !== null) {
    const v = typeof l === 'string' && /^\d+$/.test(l) ? Number(l) : l;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new LineError(file, n, 'invalid_spine', `lsn must be a non-negative integer, got ${JSON.stringify(l)}`);
    lsn = v;
  }
  let features: string[] | null = null;
  const fs = obj.features;
  if (fs !== undefined && fs !== null) {
    const list = typeof fs === 'string' ? fs.split('|') : fs;
    if (!Array.isArray(list) || list.some((x) => typeof x !== 'string')) throw new LineError(file, n, 'invalid_spine', 'features must be an array of feature names');
    features = list as string[];
  }
  let extra = '';
  for (const [k, v] of Object.entries(obj)) {
    if (OUTPUT_COLUMNS.has(k) || k === opts.timeField || (fromFields && plan.keyFields.includes(k))) continue;
    extra += `,${JSON.stringify(k)}:${JSON.stringify(v)}`;
  }
  const keyJson = plan.keyFields.length === 1 ? JSON.stringify(key) : key;
  return { index, line: n, table: tableName, key, keyJson, t, lsn, features, extra };
}

/** A row that cannot be answered: a server error code, or history_unavailable (export). */
export interface RowError {
  code: string;
  detail: { message?: string };
}

/**
 * The output line of a spine row: `{"table", "key", "time_ms", ["lsn",] "row" | "error", ...passed through}`.
 * `row` is the row text exactly as a server would send it.
 */
export function answerLine(r: SpineRow, out: string | RowError, withLsn: boolean): string {
  let s = `{"table":${JSON.stringify(r.table)},"key":${r.keyJson},"time_ms":${r.t}`;
  if (withLsn) s += `,"lsn":${r.lsn}`;
  s += typeof out === 'string' ? `,"row":${out}` : `,"error":${JSON.stringify({ code: out.code, message: out.detail.message })}`;
  return `${s}${r.extra}}\n`;
}

/**
 * Answer lines held until every row is answered (they are answered in time order and
 * written in spine order), each as its UTF-8 bytes: a row built by concatenation is
 * a tree of string pieces, and tens of thousands of them kept on the heap made the
 * export spend most of its time in garbage collection.
 */
export class SpineAnswers {
  readonly #lines: Array<Buffer | undefined>;
  count = 0;
  constructor(rows: number) {
    this.#lines = new Array<Buffer | undefined>(rows);
  }

  set(r: SpineRow, line: string): void {
    this.#lines[r.index] = Buffer.from(line, 'utf8');
    this.count++;
  }

  /** Writes every answered line in spine order; returns how many. */
  async writeTo(out: { write(b: Buffer): Promise<void> }): Promise<number> {
    let n = 0;
    for (const b of this.#lines) if (b !== undefined) { await out.write(b); n++; }
    return n;
  }
}

/** Spine rows in the order they are answered: by time (or lsn), file order among equals. */
export function answerOrder(rows: readonly SpineRow[], byLsn: boolean): SpineRow[] {
  return [...rows].sort(byLsn ? (a, b) => a.lsn - b.lsn || a.index - b.index : (a, b) => a.t - b.t || a.index - b.index);
}

/**
 * Answers spine rows as a time-ordered (or log-ordered) stream of events is
 * applied: before() is called ahead of each event with its time and lsn, and
 * answers every row that must not see it (time mode: rows with t < the event's
 * time, so an event at exactly a row's time is in that row; lsn mode: rows with
 * lsn < the event's). finish() answers the rest after the last event.
 */
export class PointInTime {
  #next = 0;
  constructor(readonly order: readonly SpineRow[], readonly byLsn: boolean, readonly answer: (r: SpineRow) => void) {}

  /** Time of the next row to answer (Infinity when none is left). */
  get nextT(): number {
    return this.#next < this.order.length ? this.order[this.#next].t : Number.POSITIVE_INFINITY;
  }

  before(t: number, lsn: number): void {
    const order = this.order;
    if (this.byLsn) {
      while (this.#next < order.length && order[this.#next].lsn < lsn) this.answer(order[this.#next++]);
      return;
    }
    while (this.#next < order.length && order[this.#next].t < t) this.answer(order[this.#next++]);
  }

  finish(): void {
    while (this.#next < this.order.length) this.answer(this.order[this.#next++]);
  }
}
