/**
 * Input files of the offline tools (docs/training.md "Input files"): NDJSON
 * (`.ndjson`, `.jsonl`, `.json`) and CSV (`.csv`), each optionally gzipped (read by
 * its magic bytes, whatever the name). Lines are numbered from 1 as an editor shows
 * them (a CSV header is line 1). A line that cannot be read is a LineError naming
 * its file and line; the caller either stops at it or skips and counts it
 * (--bad-lines), so no line is ever dropped without a word.
 *
 * CSV: RFC 4180 fields (comma-separated, `"` quotes a field, `""` inside quotes is
 * one quote); a quoted field cannot span lines. An empty field is an absent value.
 */
import { createReadStream, openSync, readSync, closeSync } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { INPUT_CHUNK_BYTES } from '../limits';
import { extname } from 'node:path';
import { UsageError } from '../cli_args';
import type { FieldType } from '../types';

export type InputFormat = 'ndjson' | 'csv' | 'parquet';

/**
 * A line that cannot be used: its file, number (from 1), a code and what is wrong.
 * A bad input is a usage error (one line, exit 2) that carries its own fix.
 */
export class LineError extends UsageError {
  constructor(readonly file: string, readonly line: number, readonly code: string, message: string) {
    super(`${file}:${line}: ${code}: ${message}`, false);
  }
}

/** The format of `path`: `.csv` (or `.csv.gz`) is CSV, `.ndjson`/`.jsonl`/`.json` (or gzipped) NDJSON, `.parquet` Parquet. */
export function formatOf(path: string): InputFormat {
  const name = path.toLowerCase().replace(/\.gz$/, '');
  const ext = extname(name);
  if (ext === '.csv') return 'csv';
  if (ext === '.ndjson' || ext === '.jsonl' || ext === '.json') return 'ndjson';
  if (ext === '.parquet') return 'parquet';
  throw new UsageError(`${path}: unknown input format ${JSON.stringify(ext)}; use .ndjson, .jsonl, .json or .csv (optionally .gz), or .parquet`);
}

function gzipped(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const b = Buffer.alloc(2);
    return readSync(fd, b, 0, 2, 0) === 2 && b[0] === 0x1f && b[1] === 0x8b;
  } finally {
    closeSync(fd);
  }
}

/** Lines of `path` (gunzipped when it is gzip) as text, numbered from 1; blank lines are skipped (numbers keep counting). */
export async function* readLines(path: string): AsyncGenerator<{ n: number; text: string }> {
  const out = { n: 0, text: '' };
  for await (const { n, buf, start, end } of readLineBytes(path)) {
    out.n = n;
    out.text = buf.toString('utf8', start, end);
    yield out;
  }
}

/**
 * Lines of an uncompressed or gzipped file as byte ranges (for readers that take a
 * line from its bytes: replay's NDJSON fast path): `buf[start, end)` is line `n`
 * without its newline, a trailing CR or a first line's BOM, valid until the next line
 * is asked for. Blank lines are skipped (numbers keep counting). Split here from large
 * chunks rather than by node:readline, which cost an await per line (a third of a
 * replay's wall time).
 */
export async function* readLineBytes(path: string): AsyncGenerator<{ n: number; buf: Buffer; start: number; end: number }> {
  let isGz: boolean;
  try {
    isGz = gzipped(path);
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as Error).message}`);
  }
  const raw = createReadStream(path, { highWaterMark: INPUT_CHUNK_BYTES });
  const stream = isGz ? raw.pipe(createGunzip()) : raw;
  if (isGz) raw.on('error', (err) => stream.destroy(err));
  let n = 0;
  let rest: Buffer | null = null;
  const out: { n: number; buf: Buffer; start: number; end: number } = { n: 0, buf: Buffer.alloc(0), start: 0, end: 0 };
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const buf: Buffer = rest === null ? chunk : Buffer.concat([rest, chunk]);
      let from = 0;
      for (let nl = buf.indexOf(0x0a); nl >= 0; nl = buf.indexOf(0x0a, from)) {
        n++;
        let end = nl;
        if (end > from && buf[end - 1] === 0x0d) end--;
        const start = n === 1 && buf[from] === 0xef && buf[from + 1] === 0xbb && buf[from + 2] === 0xbf ? from + 3 : from;
        from = nl + 1;
        if (blank(buf, start, end)) continue;
        out.n = n; out.buf = buf; out.start = start; out.end = end;
        yield out;
      }
      rest = from < buf.length ? buf.subarray(from) : null;
    }
  } catch (err) {
    throw new UsageError(`cannot read ${path} past line ${n}: ${(err as Error).message}`);
  }
  if (rest !== null) {
    n++;
    let end = rest.length;
    if (end > 0 && rest[end - 1] === 0x0d) end--;
    if (!blank(rest, 0, end)) { out.n = n; out.buf = rest; out.start = 0; out.end = end; yield out; }
  }
}

function blank(b: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

/** The fields of one CSV line, or null when its quotes do not close. */
export function splitCsv(text: string): string[] | null {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    if (text.charCodeAt(i) === 0x22) {
      let v = '';
      i++;
      for (;;) {
        const q = text.indexOf('"', i);
        if (q < 0) return null;
        v += text.slice(i, q);
        if (text.charCodeAt(q + 1) === 0x22) { v += '"'; i = q + 2; continue; }
        i = q + 1;
        break;
      }
      out.push(v);
      if (i === text.length) return out;
      if (text.charCodeAt(i) !== 0x2c) return null;
      i++;
      continue;
    }
    const c = text.indexOf(',', i);
    if (c < 0) { out.push(text.slice(i)); return out; }
    out.push(text.slice(i, c));
    i = c + 1;
  }
}

/**
 * One CSV cell as a value of declared type `t`: numbers for i64/f64, booleans for
 * bool (true/false/1/0), strings otherwise; undefined for an empty cell (absent).
 * Throws a message when the cell is not of the type (the caller names the line).
 */
export function csvValue(cell: string, t: FieldType | undefined): unknown {
  if (cell === '') return undefined;
  switch (t) {
    case 'i64':
    case 'f64': {
      const v = Number(cell.trim());
      if (cell.trim() === '' || !Number.isFinite(v)) throw new Error(`${JSON.stringify(cell)} is not a number`);
      return v;
    }
    case 'bool':
      if (cell === 'true' || cell === '1') return true;
      if (cell === 'false' || cell === '0') return false;
      throw new Error(`${JSON.stringify(cell)} is not a bool (true, false, 1 or 0)`);
    default:
      return cell;
  }
}

/**
 * A time value (an event's time field, a spine's time): integer epoch ms (a number
 * or a string of digits) or an RFC 3339 string; throws a message otherwise.
 */
export function timeValue(v: unknown): number {
  if (typeof v === 'number') {
    if (Number.isSafeInteger(v)) return v;
    throw new Error(`time ${v} is not an integer of epoch milliseconds`);
  }
  if (typeof v === 'string') {
    const s = v.trim();
    if (/^-?\d+$/.test(s) && Number.isSafeInteger(Number(s))) return Number(s);
    if (/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/.test(s)) {
      const ms = Date.parse(s);
      if (!Number.isNaN(ms)) return ms;
    }
    throw new Error(`time ${JSON.stringify(v)} is neither epoch milliseconds nor an RFC 3339 date-time`);
  }
  throw new Error(v === undefined ? 'the time field is missing' : `time ${JSON.stringify(v)} is neither epoch milliseconds nor an RFC 3339 date-time`);
}

/** Lines skipped under --bad-lines skip: counted, the first few reported on stderr. */
export class BadLines {
  count = 0;
  constructor(readonly skip: boolean, readonly report: (message: string) => void, readonly reportMax: number) {}

  /** A bad line: thrown again under --bad-lines fail, else reported (the first reportMax) and counted. */
  take(err: LineError): void {
    if (!this.skip) throw err;
    this.count++;
    if (this.count <= this.reportMax) this.report(`skipped ${err.message}`);
    else if (this.count === this.reportMax + 1) this.report('further bad lines are counted, not shown');
  }
}
