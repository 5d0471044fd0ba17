/**
 * `streamfeat info` (an INFO-style summary, like Redis INFO) and
 * `streamfeat inspect TABLE KEY` (one entity's row with each feature's op and
 * window). Both read the admin address (/api/stats, /api/inspect), so they see
 * what the dashboard sees; --json prints the endpoint's JSON as is.
 *
 * Exit codes: 0 ok; 1 the admin address could not be reached or answered an
 * error ("error: <code> (<status>): <message>"); 2 bad command line.
 */
import { type CliCommand, type CommandSpec, type OptionSpec, type ParsedCommand, numberArg, stringValue, UsageError } from './cli_args';

export const ADMIN_URL_ENV = 'STREAMFEAT_ADMIN_URL';
export const ADMIN_URL_DEFAULT = 'http://127.0.0.1:8090';
export const ADMIN_TIMEOUT_MS_DEFAULT = 5_000;

export interface AdminCliIo {
  out(line: string): void;
  err(line: string): void;
}

export interface AdminCliOptions {
  adminUrl: string;
  json: boolean;
  timeoutMs: number;
}

/** The admin base URL from --admin / $STREAMFEAT_ADMIN_URL / default; null when it is no http(s) URL. */
export function adminBase(flag: string | undefined, env: NodeJS.ProcessEnv): string | null {
  const raw = flag ?? env[ADMIN_URL_ENV] ?? ADMIN_URL_DEFAULT;
  const withScheme = /^[a-z]+:\/\//i.test(raw) ? raw : `http://${raw}`;
  let u: URL;
  try { u = new URL(withScheme); } catch { return null; }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  return u.origin;
}

type Fetched = { ok: true; json: any } | { ok: false; code: number };

async function fetchJson(base: string, path: string, opts: AdminCliOptions, io: AdminCliIo): Promise<Fetched> {
  let res: Response;
  try {
    res = await fetch(base + path, { signal: AbortSignal.timeout(opts.timeoutMs) });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const why = e.name === 'TimeoutError' ? `no answer within ${opts.timeoutMs} ms` : (e.cause?.code ?? e.message);
    io.err(`error: cannot reach the admin address ${base}: ${why} (is the server running with --admin-addr?)`);
    return { ok: false, code: 1 };
  }
  const text = await res.text();
  let json: any;
  try { json = JSON.parse(text); } catch { json = undefined; }
  if (res.status !== 200 || json === undefined) {
    const e = json?.error;
    io.err(e !== undefined ? `error: ${e.code} (${res.status}): ${e.message}` : `error: ${base}${path} answered ${res.status}: ${text.slice(0, 200)}`);
    return { ok: false, code: 1 };
  }
  return { ok: true, json };
}

// ---- formatting -----------------------------------------------------------------

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${Math.round(v)} B` : `${v.toFixed(v >= 100 ? 0 : 1)} ${units[i]}`;
}

export function formatDuration(s: number | null | undefined): string {
  if (s === null || s === undefined) return '-';
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${Math.floor(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}

function formatSeconds(s: number | null | undefined): string {
  if (s === null || s === undefined) return '-';
  const ms = s * 1000;
  return ms < 1 ? `${Math.round(ms * 1000)}us` : `${ms.toFixed(ms < 10 ? 2 : 1)}ms`;
}

function rate(x: number): string {
  return x >= 100 ? x.toFixed(0) : x.toFixed(2);
}

/** `key:value` lines under `# Section` headers, as Redis INFO prints them. */
export function formatInfo(s: any): string[] {
  const out: string[] = [];
  const section = (name: string, rows: Array<[string, string | number]>): void => {
    if (out.length > 0) out.push('');
    out.push(`# ${name}`);
    for (const [k, v] of rows) out.push(`${k}:${v}`);
  };
  section('Server', [
    ['version', s.version], ['node', s.node], ['uptime', `${formatDuration(s.uptime_s)} (${Math.floor(s.uptime_s)}s)`],
    ['mode', s.mode], ['wal_sync', s.wal_sync ?? '-'], ['data_dir', s.data_dir ?? '-'], ['shards', s.shard_count],
    ['registry_version', s.registry_version], ['registry_nodes', s.registry_nodes], ['tcp_connections', s.tcp_connections],
  ]);
  const c = s.counters;
  const r = s.rates;
  const lat = s.latency_recent;
  section('Traffic', [
    ['pushes', `${c.push_total} (${rate(r.push_per_s)}/s, ${c.push_replay_total} dedupe replays)`],
    ['gets', `${c.get_total} (${rate(r.get_per_s)}/s)`],
    ['batch_gets', `${c.batch_get_total} (${c.batch_get_entries_total} entries, ${rate(r.batch_get_per_s)}/s)`],
    ['registers', c.register_total],
    ['errors', `${c.errors_total}${Object.keys(s.errors).length > 0 ? ` (${Object.entries(s.errors).map(([k, v]) => `${k}=${v}`).join(', ')})` : ''}`],
    ...(['push', 'get', 'batch_get'] as const).map((k): [string, string] => [`${k}_latency`, lat[k].count === 0
      ? `- (none in the last ${Math.round(lat.window_s)}s)`
      : `p50 ${formatSeconds(lat[k].p50)} p90 ${formatSeconds(lat[k].p90)} p99 ${formatSeconds(lat[k].p99)} (last ${Math.round(lat.window_s)}s)`]),
  ]);
  section('Memory', [
    ['rss', formatBytes(s.process.rss_bytes)],
    ['cpu_seconds', s.process.cpu_seconds.toFixed(2)],
    ...s.threads.map((t: any): [string, string] => [`heap_${t.thread}`, `${formatBytes(t.heap_used_bytes)} of ${formatBytes(t.heap_total_bytes)}, busy ${(t.utilization * 100).toFixed(0)}%, loop lag p99 ${formatSeconds(t.lag_p99_s)}`]),
  ]);
  section('Entities', [
    ['total', `${s.entities} (~${formatBytes(s.state_bytes)} of state)`],
    ...s.tables.map((t: any): [string, string] => [`table_${t.table}`, `${t.entities} (${t.cold} cold, ~${formatBytes(t.state_bytes)})`]),
  ]);
  section('Shards', s.shards.map((x: any): [string, string] => [`shard_${x.shard}`,
    `entities ${x.entities}, queue ${x.queued}, in_flight ${x.in_flight}, heap ${formatBytes(x.heap_used_bytes)}, applied_lsn ${x.applied_lsn ?? '-'}`]));
  if (s.wal === null) section('WAL', [['wal', 'off (memory-only mode)']]);
  else {
    section('WAL', [
      ['writes', `${s.wal.appends_total} (${formatBytes(s.wal.bytes_total)})`], ['fsyncs', s.wal.fsyncs_total],
      ['unsynced', formatBytes(s.wal.unsynced_bytes)], ['errors', s.wal.errors_total],
    ]);
    const snap = s.snapshot;
    section('Snapshots', [
      ['oldest_last_success', snap.oldest_last_success_ms === null ? 'none yet' : `${new Date(snap.oldest_last_success_ms).toISOString()} (${formatDuration(snap.age_s)} ago)`],
      ['last_duration', snap.written_total === 0 ? '-' : formatSeconds(snap.last_duration_s)],
      ['written', snap.written_total], ['failed', snap.failures_total], ['running', snap.running ? 'yes' : 'no'],
    ]);
  }
  return out;
}

/** A header line and an aligned table: feature, op, window, value. */
export function formatInspect(x: any): string[] {
  const state = !x.found ? 'no such entity (never pushed, or cleared)' : `${x.cold ? 'cold (thawed by this read)' : 'hot'}, last push ${new Date(x.last_push_ms).toISOString()} (lsn ${x.last_lsn})`;
  const rows = [['feature', 'op', 'window', 'value'], ...x.features.map((f: any) => [f.name, f.op, f.window ?? 'lifetime', JSON.stringify(f.value)])];
  const widths = rows[0].map((_: string, i: number) => Math.max(...rows.map((r: string[]) => r[i].length)));
  return [
    `${x.table} ${x.key}  shard ${x.shard}, ${state}`,
    '',
    ...rows.map((r: string[]) => r.map((v, i) => (i === r.length - 1 ? v : v.padEnd(widths[i]))).join('  ')),
  ];
}

// ---- commands ---------------------------------------------------------------------

export async function runInfo(base: string, opts: AdminCliOptions, io: AdminCliIo): Promise<number> {
  const r = await fetchJson(base, '/api/stats', opts, io);
  if (!r.ok) return r.code;
  if (opts.json) io.out(JSON.stringify(r.json, null, 2));
  else for (const line of formatInfo(r.json)) io.out(line);
  return 0;
}

export async function runInspect(base: string, table: string, key: string, opts: AdminCliOptions, io: AdminCliIo): Promise<number> {
  const r = await fetchJson(base, `/api/inspect?table=${encodeURIComponent(table)}&key=${encodeURIComponent(key)}`, opts, io);
  if (!r.ok) return r.code;
  if (opts.json) io.out(JSON.stringify(r.json, null, 2));
  else for (const line of formatInspect(r.json)) io.out(line);
  return 0;
}

// ---- command-line specs (src/cli_args.ts) ------------------------------------------------

const COMMON_OPTIONS: OptionSpec[] = [
  { name: 'admin', type: 'string', value: 'URL', help: 'admin address of the server (its --admin-addr)', env: ADMIN_URL_ENV, default: ADMIN_URL_DEFAULT },
  { name: 'json', type: 'boolean', help: 'print the endpoint\'s JSON instead of text' },
  { name: 'timeout-ms', type: 'string', value: 'N', help: 'request timeout', default: String(ADMIN_TIMEOUT_MS_DEFAULT) },
];

const EXIT_NOTE = 'exit codes: 0 ok; 1 the admin address is unreachable or answered an error; 2 bad command line.';

function options(p: ParsedCommand): { base: string; opts: AdminCliOptions } {
  const flag = stringValue(p, 'admin');
  const base = adminBase(flag, process.env);
  if (base === null) throw new UsageError(`--admin needs an http:// URL, got ${flag ?? process.env[ADMIN_URL_ENV]}`);
  const timeout = stringValue(p, 'timeout-ms');
  return { base, opts: { adminUrl: base, json: p.values.json === true, timeoutMs: timeout === undefined ? ADMIN_TIMEOUT_MS_DEFAULT : numberArg('--timeout-ms', timeout, 1) } };
}

const INFO_SPEC: CommandSpec = {
  name: 'info',
  summary: 'Print an INFO-style summary of a running server. Version, uptime, traffic, latency, memory, entities, shards, WAL, snapshots and registry version, read from its admin address.',
  args: [],
  options: COMMON_OPTIONS,
  notes: ['Reads GET /api/stats on the admin address (the dashboard\'s data); key:value lines under "# Section" headers.', EXIT_NOTE],
};

const INSPECT_SPEC: CommandSpec = {
  name: 'inspect',
  summary: 'Print one entity\'s row with each feature\'s op and window. Also the owning shard and the entity\'s last push, read from the admin address.',
  args: ['TABLE', 'KEY'],
  options: COMMON_OPTIONS,
  notes: ['KEY: the key value; a composite key as a JSON array, e.g. \'["u1","s0"]\'. Reads GET /api/inspect on the admin address.', EXIT_NOTE],
};

export const INFO_COMMAND: CliCommand = {
  spec: INFO_SPEC,
  run: (p, io) => { const { base, opts } = options(p); return runInfo(base, opts, io); },
};

export const INSPECT_COMMAND: CliCommand = {
  spec: INSPECT_SPEC,
  run: (p, io) => { const { base, opts } = options(p); return runInspect(base, p.positionals[0], p.positionals[1], opts, io); },
};
