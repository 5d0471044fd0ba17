/**
 * `streamfeat export --data-dir DIR --spine FILE --table T [--features a,b] [--out
 * FILE]` (docs/training.md "Point-in-time export"): for each spine line, the row the
 * server would have answered for its key at its time, from the history the data dir
 * holds (history.ts). Shard by shard: a fresh ShardState starts where the shard's
 * history starts, every WAL record after it is applied with the server's recovery
 * step (shard/persist/store.ts replay: the record's registry version, its time, the
 * shard's own PUSH record bytes), and each spine row of the shard's keys is read
 * just before the first record it must not see (spine.ts PointInTime). Rows go out
 * in spine order.
 *
 * Read-only, and without the data dir's lock: on a stopped server's data dir or a
 * copy of a live one (a live one works too, as of what its files hold when read).
 */
import { type CliCommand, type CliIo, EXIT_OK, UsageError, oneOfArg } from '../cli_args';
import { EXIT_CODES_NOTE, featureList, required, sharedOptions, skipsBadLines, spineTimeField } from './cli_options';
import type { ErrorPayload } from '../protocol/messages';
import type { TablePlan } from '../registry/compile';
import { compileRegistry } from '../registry/compile';
import { shardOf } from '../registry/key';
import type { RegistryState } from '../registry/model';
import { ShardState } from '../shard/state/state';
import { DedupeLog } from '../shard/state/dedupe_log';
import { PushApplier } from '../shard/state/push_apply';
import { replay, type BadRecords } from '../shard/persist/store';
import { RECORD_TYPE_PUSH } from '../wal/constants';
import type { WalRecord } from '../wal/record';
import { BAD_LINES_REPORTED_MAX } from '../limits';
import { readServed } from './engine';
import { openDataDirHistory, type History } from './history';
import { BadLines } from './input';
import { OutputFile } from './output';
import { stderrProgress } from './progress';
import { FeatureResolver } from './resolver';
import { ForgottenKeys } from './forgotten';
import { answerLine, answerOrder, loadSpine, PointInTime, SpineAnswers, type SpineRow } from './spine';

export const EXPORT_COMMAND: CliCommand = {
  spec: {
    name: 'export',
    args: [],
    summary: 'Point-in-time rows from a data dir\'s history: for each spine line (key + time) the row the server would have answered then.',
    options: [
      { name: 'data-dir', type: 'string', value: 'DIR', help: 'the data dir (of a stopped server, or a copy of a live one); not locked, not written' },
      { name: 'spine', type: 'string', value: 'FILE', help: 'key + time lines (docs/training.md "Spines"); a served-row log file is one' },
      { name: 'table', type: 'string', value: 'T', help: 'the table to answer' },
      { name: 'at', type: 'string', value: 'auto|time|lsn', help: 'read each row as of its time, or of its lsn column (auto: lsn when every spine line has one)', default: 'auto' },
      ...sharedOptions('a spine line that cannot be used stops the run, or is reported and skipped (counted)'),
    ],
    notes: [
      'Output (NDJSON): {"table","key","time_ms",["lsn",]"row"} per spine line, plus its other columns; a line the data dir cannot answer has "error" instead (history_unavailable: its time is before what the data dir still holds).',
      EXIT_CODES_NOTE,
    ],
  },
  run: (p, io) => runExport(p.values, io),
};

/** The newest registry version of `history` that has table `name` (spine keys are read against it). */
function newestTable(history: History, name: string): TablePlan | undefined {
  for (let i = history.registry.length - 1; i >= 0; i--) {
    const state = history.registry[i];
    if (!state.nodes.some((n) => n.name === name)) continue;
    return compileRegistry(state, { memoryGovEnforce: false, pushValidators: false, features: false }).tables.get(name);
  }
  return undefined;
}

async function runExport(values: Record<string, string | boolean | undefined>, io: CliIo): Promise<number> {
  const t0 = performance.now();
  const history = openDataDirHistory(required(values, 'data-dir'));
  const spineFile = required(values, 'spine');
  const table = required(values, 'table');
  const features = featureList(values);
  const skip = skipsBadLines(values);
  const at = oneOfArg('--at', typeof values.at === 'string' ? values.at : 'auto', ['auto', 'time', 'lsn']);
  const plan = newestTable(history, table);
  if (plan === undefined) throw new UsageError(`--table ${table}: no registry version of ${history.dir} has such a table`, false);
  const bad = new BadLines(skip, (m) => io.err(m), BAD_LINES_REPORTED_MAX);
  const spine = await loadSpine(spineFile, { table, timeField: spineTimeField(values), tableOf: (n) => (n === table ? plan : undefined) }, bad);
  if (spine.otherTables > 0) io.err(`export: ${spine.otherTables} spine lines name other tables than ${table} and were skipped`);
  if (at === 'lsn' && !spine.allLsn) throw new UsageError('--at lsn: not every spine line has an lsn', false);
  const byLsn = at === 'lsn' || (at === 'auto' && spine.allLsn);
  const lines = new SpineAnswers(spine.rows.length);
  const perShard: SpineRow[][] = Array.from({ length: history.shards }, () => []);
  for (const r of spine.rows) perShard[shardOf(r.key, history.shards)].push(r);
  const progress = stderrProgress();
  let answered = 0;
  let records = 0;
  const unavailable: string[] = [];
  for (let s = 0; s < history.shards; s++) {
    if (perShard[s].length === 0) continue;
    const out = exportShard(history, s, perShard[s], byLsn, features, (r, line) => { lines.set(r, line); answered++; }, () => {
      records++;
      progress.tick(() => `export: shard ${s + 1}/${history.shards}, ${records.toLocaleString()} records, ${answered.toLocaleString()}/${spine.rows.length.toLocaleString()} spine rows`);
    });
    for (const w of out.warnings) io.err(`export: ${w}`);
    if (out.unavailable > 0) unavailable.push(`${out.unavailable} rows of shard ${s} (its history starts at ${out.origin}${Number.isFinite(out.fromMs) ? `, ${new Date(out.fromMs).toISOString()}` : ''})`);
  }
  progress.done();
  const outFile = OutputFile.open(typeof values.out === 'string' ? values.out : null);
  await lines.writeTo(outFile);
  await outFile.close();
  const s = (performance.now() - t0) / 1000;
  if (unavailable.length > 0) io.err(`export: history_unavailable for ${unavailable.join('; ')}`);
  io.err(`export: ${spine.rows.length} spine rows (${byLsn ? 'by lsn' : 'by time'}) from ${records} WAL records of ${history.shards} shards, ${bad.count} bad spine lines skipped, written to ${outFile.name} in ${s.toFixed(2)} s (${Math.round(spine.rows.length / s)} rows/s)`);
  return EXIT_OK;
}

interface ShardExport {
  unavailable: number;
  fromMs: number;
  origin: string;
  warnings: string[];
}

/** Replays shard `s` of `history` and answers its spine rows; `emit` gets each answered line. */
function exportShard(
  history: History, s: number, rows: SpineRow[], byLsn: boolean, features: string[] | null,
  emit: (r: SpineRow, line: string) => void, tick: () => void,
): ShardExport {
  const state = new ShardState({ shardId: s, shardCount: history.shards, memoryGovEnforce: false });
  const sh = history.shard(s);
  const start = sh.begin(state);
  // Forgotten entities are never served: a first pass finds the forgets (forgotten.ts).
  const forgotten = ForgottenKeys.scan(sh, history.registry);
  let applied = -1;
  let unavailable = 0;
  const resolver = new FeatureResolver();
  const answer = (r: SpineRow): void => {
    const early = byLsn ? r.lsn < start.fromLsn : r.t < start.fromMs;
    if (early) {
      unavailable++;
      const since = Number.isFinite(start.fromMs) ? ` from ${new Date(start.fromMs).toISOString()} (${start.origin})` : `: ${start.origin}`;
      emit(r, answerLine(r, { code: 'history_unavailable', detail: { message: `the data dir holds shard ${s}'s history only${since}` } }, byLsn));
      return;
    }
    const row = rowAt(state, r, r.features ?? features, resolver);
    emit(r, answerLine(r, typeof row === 'string' && forgotten.later(r.table, r.key, applied) ? NOT_HELD_ROW : row, byLsn));
  };
  const pit = new PointInTime(answerOrder(rows, byLsn), byLsn, answer);
  const pushes = new PushApplier(state);
  const dedupe = new DedupeLog();
  const versions = new Map(history.registry.map((v): [number, RegistryState] => [v.version, v]));
  const bad: BadRecords = { count: 0, firstLsn: 0, lastLsn: 0 };
  const warnings = sh.forEach((rec: WalRecord) => {
    if (rec.type === RECORD_TYPE_PUSH) pit.before(rec.timeMs, rec.lsn);
    else if (byLsn) pit.before(Number.NEGATIVE_INFINITY, rec.lsn);
    replay(state, pushes, dedupe, versions, rec, bad);
    applied = rec.lsn;
    tick();
  });
  pit.finish();
  if (bad.count > 0) warnings.push(`shard ${s}: ${bad.count} WAL records could not be applied (lsn ${bad.firstLsn} to ${bad.lastLsn})`);
  return { unavailable, fromMs: start.fromMs, origin: start.origin, warnings };
}

/** The row of an entity the table does not hold (a get of a key never pushed answers it too). */
const NOT_HELD_ROW = '{}';

/** One spine row read from the shard's state now, under the registry version installed now. */
function rowAt(state: ShardState, r: SpineRow, features: string[] | null, resolver: FeatureResolver): string | ErrorPayload {
  const reg = state.registry;
  if (reg === null) return { code: 'unknown_table', detail: { message: `table ${r.table} is not registered at this time` } };
  const f = resolver.resolve(reg, r.table, features);
  if ('code' in f) return f;
  return readServed(state, state.tableByName(r.table)!, r.key, f.f, r.t);
}
