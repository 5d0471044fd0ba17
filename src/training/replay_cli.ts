/**
 * `streamfeat replay --registry FILE --events FILE --time-field NAME [--spine FILE]
 * [--out FILE]` (docs/training.md "Offline replay"): historical events through the
 * offline engine (engine.ts: the server's compile, push path and op code, in this
 * process), each at its own time. Output, NDJSON: with --spine, the row of each
 * spine line as of its time, in spine order; without, the final row of every
 * entity (read at the last event's time), by table then key.
 *
 * Events must come in time order: the first one earlier than the line before it
 * stops the run and names both lines, unless --sort, which reads every event into
 * memory and sorts them (stably: equal times keep file order).
 */
import { readFileSync } from 'node:fs';
import { type CliCommand, type CliIo, EXIT_OK, stringValue, UsageError } from '../cli_args';
import { EXIT_CODES_NOTE, featureList, required, sharedOptions, skipsBadLines, spineTimeField } from './cli_options';
import { register } from '../coordinator/register';
import type { RegistryState } from '../registry/model';
import { SfError } from '../errors';
import type { ErrorPayload } from '../protocol/messages';
import { BAD_LINES_REPORTED_MAX } from '../limits';
import { DEDUPE_REPLAY, OfflineEngine } from './engine';
import { EventLines, type TimedEvent } from './events';
import { BadLines, formatOf, LineError, readLineBytes, readLines, type InputFormat } from './input';
import { readParquetRows } from './parquet';
import { answerLine, answerOrder, loadSpine, PointInTime, SpineAnswers, type SpineRow } from './spine';
import { OutputFile } from './output';
import { stderrProgress } from './progress';
import { FeatureResolver } from './resolver';

export const REPLAY_COMMAND: CliCommand = {
  spec: {
    name: 'replay',
    args: [],
    summary: 'Replay historical events offline through the server\'s own engine: final rows per entity, or point-in-time rows for a spine.',
    options: [
      { name: 'registry', type: 'string', value: 'FILE', help: 'register body ({"nodes": [...]}) or a GET /registry answer' },
      { name: 'events', type: 'string', value: 'FILE', help: 'events: .ndjson/.jsonl/.json or .csv (optionally gzipped), or .parquet' },
      { name: 'time-field', type: 'string', value: 'NAME', help: 'the field holding each event\'s time (epoch ms or RFC 3339): its processing time' },
      { name: 'event', type: 'string', value: 'NAME', help: 'the event of lines that are its fields alone (not {"event","data"} envelopes)' },
      { name: 'spine', type: 'string', value: 'FILE', help: 'key + time lines: answer each as of its time (docs/training.md "Spines")' },
      { name: 'table', type: 'string', value: 'T', help: 'the table of the spine (or of the final rows; default every table)' },
      { name: 'sort', type: 'boolean', help: 'sort events by time in memory instead of refusing the first one out of order' },
      ...sharedOptions('a line that cannot be used stops the run, or is reported and skipped (counted)'),
    ],
    notes: [
      'Output (NDJSON): {"table","key","time_ms","row"} per line, plus the spine line\'s other columns; a row that cannot be answered has "error" instead of "row".',
      EXIT_CODES_NOTE,
    ],
  },
  run: (p, io) => runReplay(p.values, io),
};

/** A registry file: a register body or a GET /registry answer, registered on an empty registry (the register rules apply). */
export function loadRegistryFile(path: string): RegistryState {
  let payload: unknown;
  try {
    payload = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new UsageError(`${path}: ${(err as Error).message}`, false);
  }
  try {
    const out = register({ version: 0, nodes: [] }, payload, { memoryGovEnforce: true });
    return out.next ?? { version: 1, nodes: [] };
  } catch (err) {
    if (!(err instanceof SfError)) throw err;
    throw new UsageError(`${path}: ${err.code}${err.detail.path ? ` at ${err.detail.path}` : ''}: ${err.message}`, false);
  }
}

function refusalText(e: ErrorPayload): string {
  return `${e.detail.message ?? e.code}${e.detail.path ? ` (at ${e.detail.path})` : ''}`;
}

async function runReplay(values: Record<string, string | boolean | undefined>, io: CliIo): Promise<number> {
  const t0 = performance.now();
  const registryFile = required(values, 'registry');
  const eventsFile = required(values, 'events');
  const timeField = required(values, 'time-field');
  const spineFile = stringValue({ values, positionals: [], help: false }, 'spine') ?? null;
  const table = typeof values.table === 'string' ? values.table : null;
  const features = featureList(values);
  const skip = skipsBadLines(values);
  const format = formatOf(eventsFile);
  const engine = new OfflineEngine(loadRegistryFile(registryFile));
  const reg = engine.state.registry!;
  if (table !== null && !reg.tables.has(table)) throw new UsageError(`--table ${table}: the registry has no such table`, false);
  const bad = new BadLines(skip, (m) => io.err(m), BAD_LINES_REPORTED_MAX);
  const out = OutputFile.open(typeof values.out === 'string' ? values.out : null);
  const progress = stderrProgress();
  const resolver = new FeatureResolver();
  const rowOf = (tableName: string, key: string, at: number, asked: string[] | null): string | ErrorPayload => {
    const r = resolver.resolve(reg, tableName, asked ?? features);
    if ('code' in r) return r;
    return engine.read(engine.table(tableName)!, key, r.f, at);
  };

  let spine: { order: SpineRow[]; lines: SpineAnswers } | null = null;
  let pit: PointInTime | null = null;
  if (spineFile !== null) {
    const loaded = await loadSpine(spineFile, { table, timeField: spineTimeField(values), tableOf: (n) => reg.tables.get(n) }, bad);
    if (loaded.otherTables > 0) io.err(`replay: ${loaded.otherTables} spine lines name other tables than ${table} and were skipped`);
    const lines = new SpineAnswers(loaded.rows.length);
    spine = { order: answerOrder(loaded.rows, false), lines };
    pit = new PointInTime(spine.order, false, (r) => { lines.set(r, answerLine(r, rowOf(r.table, r.key, r.t, r.features), false)); });
  }

  const reader = new EventLines(eventsFile, engine.registry, timeField, typeof values.event === 'string' ? values.event : null);
  let lines = 0;
  const apply = (ev: TimedEvent): void => {
    pit?.before(ev.t, 0);
    const r = engine.push(ev.body, ev.t);
    if (r !== null && r !== DEDUPE_REPLAY) bad.take(new LineError(eventsFile, ev.line, r.code, refusalText(r)));
    progress.tick(() => `replay: ${engine.applied.toLocaleString()} events applied`);
  };
  const sorted: TimedEvent[] | null = values.sort === true ? [] : null;
  let last: TimedEvent | null = null;
  const inOrder = (t: number, n: number): void => {
    if (last !== null && t < last.t) {
      throw new UsageError(`${eventsFile}:${n}: out_of_order: time ${t} is before line ${last.line}'s ${last.t}; events must be in time order (or pass --sort)`, false);
    }
  };
  const slow = (ev: TimedEvent | null): void => {
    if (ev === null) return;
    if (sorted !== null) { sorted.push(ev); return; }
    inOrder(ev.t, ev.line);
    last = ev;
    apply(ev);
  };
  /** The last line taken from its bytes, as `last` for the order check (one object, reused). */
  const fastLast: TimedEvent = { body: {}, t: 0, line: 0 };
  if (format === 'ndjson' && sorted === null) {
    // The front's fast path: a common envelope with its time as the last member is
    // pushed from its bytes; anything else is decoded and parsed (the same rows).
    for await (const { n, buf, start, end } of readLineBytes(eventsFile)) {
      lines++;
      const comma = reader.timeTail(buf, start, end);
      if (comma >= 0) {
        const t = reader.tailT;
        inOrder(t, n);
        pit?.before(t, 0);
        buf[comma] = 0x7d; // the envelope without the time member: [start, comma] ends with its brace
        const taken = engine.pushBytes(buf, start, comma + 1, t);
        buf[comma] = 0x2c;
        if (taken) {
          fastLast.t = t;
          fastLast.line = n;
          last = fastLast;
          progress.tick(() => `replay: ${engine.applied.toLocaleString()} events applied`);
          continue;
        }
      }
      try {
        slow(reader.ndjson(buf.toString('utf8', start, end), n));
      } catch (err) {
        if (!(err instanceof LineError)) throw err;
        bad.take(err);
      }
    }
  } else {
    for await (const { n, text, obj } of eventRecords(eventsFile, format)) {
      lines++;
      let ev: TimedEvent | null;
      try {
        ev = obj !== null ? reader.object(obj, n) : format === 'csv' ? reader.csv(text, n) : reader.ndjson(text, n);
      } catch (err) {
        if (!(err instanceof LineError)) throw err;
        bad.take(err);
        continue;
      }
      slow(ev);
    }
  }
  if (sorted !== null) {
    sorted.sort((a, b) => a.t - b.t || a.line - b.line);
    for (const ev of sorted) apply(ev);
  }
  progress.done();

  let rows = 0;
  if (spine !== null) {
    pit!.finish();
    rows = await spine.lines.writeTo(out);
  } else {
    rows = await writeFinalRows(engine, table, rowOf, out);
  }
  await out.close();
  const s = (performance.now() - t0) / 1000;
  io.err(`replay: ${engine.applied} events applied (${engine.deduplicated} deduplicated, ${bad.count} bad lines skipped, ${lines} lines read), ${rows} rows written to ${out.name} in ${s.toFixed(2)} s (${Math.round(engine.applied / s)} events/s)`);
  return EXIT_OK;
}

/** The records of an events file: text lines (NDJSON, CSV), or Parquet rows as objects (`obj`). */
async function* eventRecords(file: string, format: InputFormat): AsyncGenerator<{ n: number; text: string; obj: Record<string, unknown> | null }> {
  if (format === 'parquet') {
    for await (const { n, obj } of readParquetRows(file)) yield { n, text: '', obj };
    return;
  }
  for await (const { n, text } of readLines(file)) yield { n, text, obj: null };
}

/** Every entity's row at the last event's time, by table (registry order) then canonical key. */
async function writeFinalRows(engine: OfflineEngine, table: string | null, rowOf: (t: string, k: string, at: number, f: null) => string | ErrorPayload, out: OutputFile): Promise<number> {
  const at = engine.lastT === Number.NEGATIVE_INFINITY ? 0 : engine.lastT;
  let rows = 0;
  for (const ts of engine.state.tables) {
    if (table !== null && ts.plan.name !== table) continue;
    const keys = [...ts.cols.index.liveSlots()].map((slot) => ts.cols.index.keyOf(slot));
    for (const k of ts.cold.keys()) keys.push(k);
    keys.sort();
    const composite = ts.plan.keyFields.length > 1;
    for (const key of keys) {
      const r: SpineRow = { index: rows, line: 0, table: ts.plan.name, key, keyJson: composite ? key : JSON.stringify(key), t: at, lsn: -1, features: null, extra: '' };
      await out.write(answerLine(r, rowOf(ts.plan.name, key, at, null), false));
      rows++;
    }
  }
  return rows;
}
