/**
 * The served-row log (docs/training.md "Served-row log"): the rows /get and
 * /batch_get answered, one NDJSON line each, in rotated files under
 * --served-log-dir. Opt-in, per table and sampled (--served-log-tables,
 * --served-log-sample).
 *
 *   front thread                          libuv threadpool
 *   answer written ─► line(...) ─► pending lines ─(one turn)─► fs.write of the
 *                     (a string)   (bounded:                   whole chunk, then
 *                                  SERVED_LOG_PENDING_BYTES_MAX) the next one
 *
 * The front never waits for the disk: a line is built after the answer is written
 * (training rows cost the read nothing until then), appended to the pending list,
 * and the pending lines of a turn go out as one asynchronous write. While a write
 * is in flight lines keep accumulating; past the bound they are dropped and
 * counted (streamfeat_served_log_dropped_total), never waited for. A failed write
 * drops its chunk (counted, logged once a second) and the next chunk tries again.
 *
 * Files: served-<seq>.ndjson, seq 10 digits, growing across restarts (a restart
 * opens a new file: a line torn by a crash stays at the end of the old one). A
 * file that reaches --served-log-file-bytes is closed and the next one opened;
 * past --served-log-files files the oldest are deleted.
 */
import { closeSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import fs from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log';
import { SERVED_LOG_ERROR_LOG_INTERVAL_MS, SERVED_LOG_PENDING_BYTES_MAX } from '../limits';

/** What the served-row log is configured with (config.ts --served-log-*). */
export interface ServedLogOptions {
  dir: string;
  /** Fraction of answers logged for a table without its own rate, (0, 1]. */
  sample: number;
  /** Tables logged and their rates (null: every table, at `sample`). */
  tables: ReadonlyMap<string, number> | null;
  /** A file is closed and the next one opened past this many bytes. */
  fileBytesMax: number;
  /** Files kept; older ones are deleted. */
  filesKept: number;
  /** Lines waiting for the writer, in UTF-16 units; past it lines are dropped. */
  pendingBytesMax?: number;
}

const FILE_RE = /^served-(\d{10})\.ndjson$/;

export function servedFileName(seq: number): string {
  return `served-${String(seq).padStart(10, '0')}.ndjson`;
}

/**
 * One answer as a line: `time_ms` (the server time the row was read at), `table`,
 * `key` (canonical: a string, or an array of strings for a composite key),
 * `registry_version`, `lsn` (null for a read answered by another cluster node),
 * `features` when the get named some (as JSON), `row` (the bytes the client got),
 * then `request_id` and `batch_index` when there is one. Built by concatenation:
 * JSON.stringify of an object would re-serialize the row.
 */
export function servedLine(timeMs: number, tableJson: string, keyJson: string, version: number, lsn: number, featuresJson: string | null, row: string, requestIdJson: string | null, batchIndex: number): string {
  let s = '{"time_ms":' + timeMs + ',"table":' + tableJson + ',"key":' + keyJson + ',"registry_version":' + version
    + ',"lsn":' + (lsn < 0 ? 'null' : lsn);
  if (featuresJson !== null) s += ',"features":' + featuresJson;
  s += ',"row":' + row;
  if (requestIdJson !== null) s += ',"request_id":' + requestIdJson;
  if (batchIndex >= 0) s += ',"batch_index":' + batchIndex;
  return s + '}\n';
}

export class ServedRowLog {
  /** Lines written to a file. */
  lines = 0;
  /** Lines dropped: the writer was behind (pending bound) or a write failed. */
  dropped = 0;
  /** Bytes written. */
  bytes = 0;
  writeErrors = 0;
  readonly #opts: Required<ServedLogOptions>;
  readonly #log: Logger;
  #pending: string[] = [];
  #pendingUnits = 0;
  #scheduled = false;
  #writing = false;
  #fd = -1;
  #seq: number;
  #fileBytes = 0;
  #closing: Array<() => void> | null = null;
  #errorLoggedMs = 0;
  readonly #flush = (): void => { this.#scheduled = false; this.#write(); };

  private constructor(opts: Required<ServedLogOptions>, log: Logger, seq: number, fd: number) {
    this.#opts = opts;
    this.#log = log;
    this.#seq = seq;
    this.#fd = fd;
  }

  /** Opens the log at boot (synchronously: a directory that cannot be used stops the boot). */
  static open(opts: ServedLogOptions, log: Logger): ServedRowLog {
    const full = { pendingBytesMax: SERVED_LOG_PENDING_BYTES_MAX, ...opts };
    mkdirSync(full.dir, { recursive: true });
    let seq = 0;
    for (const name of readdirSync(full.dir)) {
      const m = FILE_RE.exec(name);
      if (m !== null) seq = Math.max(seq, Number(m[1]));
    }
    seq++;
    const fd = openSync(join(full.dir, servedFileName(seq)), 'wx');
    const out = new ServedRowLog(full, log, seq, fd);
    out.#prune();
    log.info({ kind: 'served_log.opened', dir: full.dir, file: servedFileName(seq), sample: full.sample, tables: full.tables === null ? null : Object.fromEntries(full.tables) });
    return out;
  }

  /**
   * The fraction of `table`'s answers to log: 0 when it is not logged. Called per
   * get on the front; a sampled answer is then asked of the shard with its position.
   */
  rateOf(table: string): number {
    const tables = this.#opts.tables;
    if (tables === null) return this.#opts.sample;
    return tables.get(table) ?? 0;
  }

  /** Whether this answer of `table` is logged (a coin per answer at the table's rate). */
  sampled(table: string): boolean {
    const r = this.rateOf(table);
    return r >= 1 || (r > 0 && Math.random() < r);
  }

  /** Appends one line (servedLine); dropped and counted when the writer is behind. */
  append(line: string): void {
    if (this.#closing !== null || this.#pendingUnits + line.length > this.#opts.pendingBytesMax) {
      this.dropped++;
      return;
    }
    this.#pending.push(line);
    this.#pendingUnits += line.length;
    if (!this.#scheduled && !this.#writing) {
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
  }

  /** Writes what is pending, then closes the file (shutdown). Lines appended after this are dropped. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        if (this.#fd >= 0) { try { closeSync(this.#fd); } catch { /* closing anyway */ } this.#fd = -1; }
        resolve();
      };
      this.#closing = [done];
      if (!this.#writing) this.#write();
    });
  }

  #write(): void {
    if (this.#writing) return;
    if (this.#pending.length === 0 || this.#fd < 0) {
      if (this.#closing !== null && this.#pending.length === 0) this.#finishClose();
      return;
    }
    const count = this.#pending.length;
    const chunk = Buffer.from(this.#pending.join(''), 'utf8');
    this.#pending = [];
    this.#pendingUnits = 0;
    this.#writing = true;
    this.#writeFrom(chunk, 0, count);
  }

  /** fs.write until the chunk is out (a short write goes on with the rest). */
  #writeFrom(chunk: Buffer, at: number, count: number): void {
    fs.write(this.#fd, chunk, at, chunk.length - at, null, (err, n) => {
      if (err !== null) {
        this.#failed(err, count);
        this.#afterWrite();
        return;
      }
      this.bytes += n;
      this.#fileBytes += n;
      if (at + n < chunk.length) { this.#writeFrom(chunk, at + n, count); return; }
      this.lines += count;
      this.#afterWrite();
    });
  }

  #afterWrite(): void {
    if (this.#fileBytes >= this.#opts.fileBytesMax) { this.#rotate(); return; }
    this.#writing = false;
    this.#write();
  }

  /** The next file (asynchronously: the front keeps appending meanwhile), then the oldest beyond the count go. */
  #rotate(): void {
    const old = this.#fd;
    const seq = this.#seq + 1;
    fs.close(old, () => {
      fs.open(join(this.#opts.dir, servedFileName(seq)), 'wx', (err, fd) => {
        if (err !== null) {
          // No file to write to: lines are dropped until the next attempt (at the next write).
          this.#fd = -1;
          this.#failed(err, 0);
          this.#reopenLater(seq);
          return;
        }
        this.#fd = fd;
        this.#seq = seq;
        this.#fileBytes = 0;
        this.#prune();
        this.#writing = false;
        this.#write();
      });
    });
  }

  /** After a failed open: the pending lines are dropped, and the open is tried again a second later. */
  #reopenLater(seq: number): void {
    this.dropped += this.#pending.length;
    this.#pending = [];
    this.#pendingUnits = 0;
    if (this.#closing !== null) { this.#writing = false; this.#finishClose(); return; }
    setTimeout(() => {
      fs.open(join(this.#opts.dir, servedFileName(seq)), 'wx', (err, fd) => {
        if (err !== null) { this.#failed(err, 0); this.#reopenLater(seq + 1); return; }
        this.#fd = fd;
        this.#seq = seq;
        this.#fileBytes = 0;
        this.#writing = false;
        this.#write();
      });
    }, SERVED_LOG_ERROR_LOG_INTERVAL_MS).unref();
  }

  /** Deletes the oldest files past the retention count (asynchronously, errors ignored: the next rotation tries again). */
  #prune(): void {
    const dir = this.#opts.dir;
    this.#pruning++;
    fs.readdir(dir, (err, all) => {
      const names = err !== null ? [] : all.filter((n) => FILE_RE.test(n)).sort();
      let left = Math.max(0, names.length - this.#opts.filesKept);
      if (left === 0) { this.#pruned(); return; }
      for (let i = 0; i + this.#opts.filesKept < names.length; i++) fs.unlink(join(dir, names[i]), () => { if (--left === 0) this.#pruned(); });
    });
  }

  /** Deletions in flight: close() waits for them (the count of files is what the settings say once it returns). */
  #pruning = 0;

  #pruned(): void {
    if (--this.#pruning === 0 && this.#closing !== null && !this.#writing && this.#pending.length === 0) this.#finishClose();
  }

  #failed(err: NodeJS.ErrnoException, lines: number): void {
    this.writeErrors++;
    this.dropped += lines;
    const now = Date.now();
    if (now - this.#errorLoggedMs < SERVED_LOG_ERROR_LOG_INTERVAL_MS) return;
    this.#errorLoggedMs = now;
    this.#log.error({ kind: 'served_log.write_failed', dir: this.#opts.dir, err: String(err.message ?? err), dropped: this.dropped });
  }

  #finishClose(): void {
    if (this.#pruning > 0) return; // the last deletion finishes the close (#pruned)
    const waiters = this.#closing ?? [];
    this.#closing = [];
    for (const w of waiters) w();
  }
}
