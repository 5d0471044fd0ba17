/**
 * Server configuration: ONE table of settings (SETTINGS below). Each entry is a
 * command-line flag, an environment variable and a config-file key at once, with
 * its JSON Schema, default and help line. From the table come: the ajv schema that
 * validates every source, the `serve --help` table, and the ServerConfig type.
 * Adding a setting is adding one entry here (and reading it where it is used).
 *
 * Precedence: flags > environment > config file (--config FILE / SERVICE_CONFIG)
 * > defaults. An empty environment variable counts as unset. The config file is
 * JSON (YAML would need a parser dependency; see docs/operations.md); unknown keys
 * are rejected. Parsed once at boot; the result is frozen and passed to every thread.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import Ajv, { type ErrorObject } from 'ajv';
import { type CommandSpec, type OptionSpec, parseCommand, UsageError } from './cli_args';
import {
  BATCH_GET_ENTRIES_MAX_DEFAULT, CLUSTER_CHECKPOINT_INTERVAL_MS_DEFAULT, CLUSTER_PARTITIONS_DEFAULT, CLUSTER_PARTITIONS_MAX, DEDUPE_ENTRIES_MAX, SHARDS_MAX,
  HTTP_CONNECTIONS_MAX_DEFAULT, SHUTDOWN_DEADLINE_MS, STRING_VALUE_BYTES_MAX_DEFAULT, STRING_VALUE_BYTES_MAX_LIMIT, TCP_AUTH_TIMEOUT_MS_DEFAULT, TCP_CONNECTIONS_MAX_DEFAULT, TCP_FRAME_BYTES_MAX_DEFAULT, TCP_FRAME_TIMEOUT_MS_DEFAULT, TCP_IDLE_TIMEOUT_MS_DEFAULT,
  WAL_SEGMENT_BYTES_MAX_DEFAULT, WAL_SEGMENT_BYTES_MIN, WAL_SYNC_INTERVAL_MS_DEFAULT, WAL_SYNC_TIMEOUT_MS_DEFAULT,
  SERVED_LOG_FILE_BYTES_DEFAULT, SERVED_LOG_FILE_BYTES_MIN, SERVED_LOG_FILES_DEFAULT,
} from './limits';
import { DURATION_UNIT_MS } from './ops/duration';

export type WalSyncMode = 'batch' | 'always';
/** HTTP data plane: uWebSockets.js (default) or node:net (for pipelining clients; docs/wire.md). */
export type HttpEngine = 'uws' | 'net';
export const HTTP_ENGINES: readonly HttpEngine[] = ['uws', 'net'];
export type HostPort = { host: string; port: number };

interface Setting<T> {
  /** Flag name (without --) and config-file key. */
  key: string;
  env: string;
  /** False: environment and config file only (test hooks, knobs not for everyday use). */
  flag: boolean;
  /** Help placeholder of the value. */
  value: string;
  help: string;
  /** JSON Schema of the value as written in a config file. */
  schema: Record<string, unknown>;
  /** What a valid value looks like, for the one-line error. */
  expect: string;
  /** Default in config-file form (a function when it depends on the machine). */
  default: unknown | (() => unknown);
  defaultText: string;
  /** Flags and env are strings: turn one into its config-file form before validation. */
  fromString(raw: string): unknown;
  /** Validated config-file form -> the value the server uses. */
  convert(v: unknown): T;
}

type Base = Pick<Setting<unknown>, 'key' | 'env' | 'help'> & { flag?: boolean };

const PORT = '(?:6553[0-5]|655[0-2]\\d|65[0-4]\\d\\d|6[0-4]\\d{3}|[1-5]\\d{4}|\\d{1,4})';
/** "host:port", "[v6]:port", ":port" or "port"; port 0 = any free port. */
const ADDR_RE = new RegExp(`^(?:\\[?([^\\]]*?)\\]?:)?(${PORT})$`);
const DURATION_RE = /^(\d+)(ms|s|m|h|d)?$/;
/** DURATION_RE without zero (leading zeros allowed: "030s" is 30 s). */
const POSITIVE_DURATION_RE = /^0*([1-9]\d*)(ms|s|m|h|d)?$/;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const same = (s: string): unknown => s;
const toInt = (s: string): unknown => (/^-?\d+$/.test(s.trim()) ? Number(s) : s);
const toBool = (s: string): unknown => (s === '1' || s === 'true' ? true : s === '0' || s === 'false' ? false : s);

function parseAddr(s: string): HostPort {
  const m = ADDR_RE.exec(s.trim())!;
  return { host: m[1] === undefined || m[1] === '' ? '127.0.0.1' : m[1], port: Number(m[2]) };
}

function addr<D extends string | null>(b: Base, def: D): Setting<D extends string ? HostPort : HostPort | null> {
  return {
    flag: true, ...b, value: 'HOST:PORT', schema: { type: 'string', pattern: ADDR_RE.source }, expect: 'HOST:PORT (port 0-65535)',
    default: def, defaultText: def ?? 'off', fromString: same,
    convert: (v) => (v === null ? null : parseAddr(v as string)) as D extends string ? HostPort : HostPort | null,
  };
}

function int(b: Base, min: number, max: number | null, def: number | (() => number), defaultText = String(def)): Setting<number> {
  return {
    flag: true, ...b, value: 'N', schema: { type: 'integer', minimum: min, ...(max === null ? {} : { maximum: max }) },
    expect: max === null ? `an integer >= ${min}` : `an integer from ${min} to ${max}`,
    default: def, defaultText, fromString: toInt, convert: (v) => v as number,
  };
}

function bool(b: Base, def: boolean): Setting<boolean> {
  return {
    flag: true, ...b, value: '', schema: { type: 'boolean' }, expect: 'true, false, 1 or 0',
    default: def, defaultText: def ? 'on' : 'off', fromString: toBool, convert: (v) => v as boolean,
  };
}

function oneOf<T extends string>(b: Base, values: readonly T[], def: T, value = values.join('|')): Setting<T> {
  return {
    flag: true, ...b, value, schema: { type: 'string', enum: values }, expect: `one of ${values.join(', ')}`,
    default: def, defaultText: def, fromString: same, convert: (v) => v as T,
  };
}

/**
 * Milliseconds as an integer, or the window grammar: 500ms, 30s, 5m, 1h, 1d.
 * `zero` says what 0 means; null = 0 makes no sense for this setting (a frame
 * timeout of 0 would close every connection at its first byte, a shutdown
 * deadline of 0 would fail every stop), so 0 is refused like any bad value.
 */
function duration(b: Base, def: string, zero: string | null): Setting<number> {
  return {
    flag: true, ...b, value: 'DUR',
    schema: zero === null
      ? { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'string', pattern: POSITIVE_DURATION_RE.source }] }
      : { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'string', pattern: DURATION_RE.source }] },
    expect: zero === null ? 'a positive duration like 30s, 5m or 60000 (ms)' : `a duration like 30s, 5m or 60000 (ms); 0 ${zero}`,
    default: def, defaultText: def, fromString: same,
    convert: (v) => {
      if (typeof v === 'number') return v;
      const m = DURATION_RE.exec(v as string)!;
      return Number(m[1]) * DURATION_UNIT_MS[m[2] ?? 'ms'];
    },
  };
}

/** No `i` flag: the pattern also goes into the JSON Schema (ajv), which has no flags. */
const SIZE_RE = /^(\d+)\s*(?:([kKmMgGtT])(?:[iI]?[bB])?|[bB])?$/;
const SIZE_SHIFT: Record<string, number> = { k: 10, m: 20, g: 30, t: 40 };

/**
 * Bytes as an integer, or with a unit: 512MB, 2GiB, 1g (K/M/G/T are powers of 1024 either way).
 * With `range`, a value outside [min, max] is refused (a unit form is checked once converted).
 */
function size(b: Base, def: number, range?: { min: number; max: number; defaultText: string }): Setting<number> {
  const toBytes = (v: string): number => {
    const m = SIZE_RE.exec(v)!;
    return Number(m[1]) * 2 ** (m[2] === undefined ? 0 : SIZE_SHIFT[m[2].toLowerCase()]);
  };
  return {
    flag: true, ...b, value: 'BYTES',
    schema: { anyOf: [{ type: 'integer', minimum: range?.min ?? 0, ...(range === undefined ? {} : { maximum: range.max }) }, { type: 'string', pattern: SIZE_RE.source }] },
    expect: range === undefined ? 'a size like 512MB, 2GiB or 1073741824 (bytes)' : `a size from ${range.min} to ${range.max} bytes, like 64KiB or 1MiB`,
    default: def, defaultText: range?.defaultText ?? (def === 0 ? 'off' : String(def)),
    fromString: (raw) => (/^\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw.trim()),
    convert: (v) => {
      if (typeof v === 'number') return v;
      const n = toBytes(v as string);
      if (range !== undefined && (n < range.min || n > range.max)) throw new UsageError(`--${b.key} (${b.env}) must be ${range.min} to ${range.max} bytes, got ${JSON.stringify(v)} (${n} bytes)`);
      return n;
    },
  };
}

/** Free text matching `pattern`; unset (null) unless given. */
function text(b: Base & { value: string }, pattern: RegExp, expect: string): Setting<string | null> {
  return {
    flag: true, ...b, schema: { type: 'string', pattern: pattern.source }, expect,
    default: null, defaultText: 'none', fromString: same, convert: (v) => (v === null ? null : (v as string).trim()),
  };
}

/** A fraction in (0, 1] (a sample rate). */
function fraction(b: Base, def: number): Setting<number> {
  return {
    flag: true, ...b, value: 'RATE', schema: { type: 'number', exclusiveMinimum: 0, maximum: 1 }, expect: 'a number in (0, 1], like 0.1',
    default: def, defaultText: String(def),
    fromString: (raw) => (/^\s*(?:\d+\.?\d*|\.\d+)\s*$/.test(raw) ? Number(raw) : raw), convert: (v) => v as number,
  };
}

/** `Table` or `Table:rate`, comma-separated (--served-log-tables). */
const TABLE_RATES_RE = /^\s*[A-Za-z_][A-Za-z0-9_]*(?::(?:1(?:\.0*)?|0?\.\d*[1-9]\d*))?\s*(?:,\s*[A-Za-z_][A-Za-z0-9_]*(?::(?:1(?:\.0*)?|0?\.\d*[1-9]\d*))?\s*)*$/;

/** A path, resolved against the working directory at boot. */
function path<D extends string | null>(b: Base, def: D): Setting<D extends string ? string : string | null> {
  return {
    flag: true, ...b, value: b.key === 'data-dir' ? 'DIR' : 'FILE', schema: { type: 'string', minLength: 1 }, expect: 'a path',
    default: def, defaultText: def ?? 'none', fromString: same,
    convert: (v) => (v === null ? null : resolve(v as string)) as D extends string ? string : string | null,
  };
}

export const DEFAULTS = {
  httpAddr: '127.0.0.1:8080',
  tcpAddr: '127.0.0.1:8081',
  dataDir: './data',
  walSyncTimeoutMs: WAL_SYNC_TIMEOUT_MS_DEFAULT,
  walSyncIntervalMs: WAL_SYNC_INTERVAL_MS_DEFAULT,
  walSegmentBytesMax: WAL_SEGMENT_BYTES_MAX_DEFAULT,
  snapshotInterval: '60s',
  checkpointInterval: `${CLUSTER_CHECKPOINT_INTERVAL_MS_DEFAULT / 1000}s`,
};

/** Every server setting. The ServerConfig field is the property name. */
const SETTINGS = {
  httpAddr: addr({ key: 'http-addr', env: 'SERVICE_HTTP_ADDR', help: 'HTTP data plane (port 0 = any free port)' }, DEFAULTS.httpAddr),
  httpEngine: oneOf<HttpEngine>({ key: 'http-engine', env: 'SERVICE_HTTP_ENGINE', help: 'HTTP engine: uWebSockets.js, or node:net which also answers pipelined requests (docs/wire.md)' }, HTTP_ENGINES, 'uws'),
  tcpAddr: addr({ key: 'tcp-addr', env: 'SERVICE_TCP_ADDR', help: 'framed TCP fast path' }, DEFAULTS.tcpAddr),
  adminAddr: addr({ key: 'admin-addr', env: 'SERVICE_ADMIN_ADDR', help: 'admin sidecar: /health /ready /metrics /registry' }, null),
  dataDir: path({ key: 'data-dir', env: 'SERVICE_DATA_DIR', help: 'WAL segments, snapshots, registry log' }, DEFAULTS.dataDir),
  memoryOnly: bool({ key: 'memory-only', env: 'SERVICE_MEMORY_ONLY', help: 'no WAL, no snapshots, no recovery' }, false),
  acceptDataLoss: bool({ key: 'accept-data-loss', env: 'SERVICE_ACCEPT_DATA_LOSS', help: 'start even when recovery proves acknowledged data lost, and log what was lost (docs/durability.md "When boot refuses")' }, false),
  memoryLimitBytes: size({ key: 'memory-limit', env: 'SERVICE_MEMORY_LIMIT', help: 'entity memory of all shards (split evenly); past it the least recently pushed go to the cold store, or with --memory-only new entities are refused (docs/operations.md)' }, 0),
  testMode: bool({ key: 'test-mode', env: 'SERVICE_TEST_MODE', help: 'enable /reset (decided at boot)' }, false),
  shards: int({ key: 'shards', env: 'SERVICE_SHARDS', help: 'shard worker threads (a data dir keeps its count)' }, 1, SHARDS_MAX,
    () => Math.max(1, availableParallelism() - 1), 'cores-1 (min 1)'),
  logLevel: oneOf({ key: 'log-level', env: 'SERVICE_LOG_LEVEL', help: `pino log level: ${LOG_LEVELS.join(', ')}` }, LOG_LEVELS, 'info', 'LEVEL') as Setting<string>,
  walSync: oneOf<WalSyncMode>({ key: 'wal-sync', env: 'SERVICE_WAL_SYNC', help: 'ack after the WAL write (batch) or after fdatasync (always)' }, ['batch', 'always'], 'batch'),
  walSyncTimeoutMs: int({ key: 'wal-sync-timeout-ms', env: 'SERVICE_WAL_SYNC_TIMEOUT_MS', help: 'always mode: wal_sync_timeout past this' }, 1, null, DEFAULTS.walSyncTimeoutMs),
  walSyncIntervalMs: int({ key: 'wal-sync-interval-ms', env: 'SERVICE_WAL_SYNC_INTERVAL_MS', help: 'batch mode: fdatasync cadence' }, 1, null, DEFAULTS.walSyncIntervalMs),
  walSegmentBytesMax: int({ key: 'wal-segment-bytes', env: 'SERVICE_WAL_SEGMENT_BYTES', help: 'WAL segment size before rolling to the next' }, WAL_SEGMENT_BYTES_MIN, null, DEFAULTS.walSegmentBytesMax),
  shutdownTimeoutMs: duration({ key: 'shutdown-timeout', env: 'SERVICE_SHUTDOWN_TIMEOUT', help: 'graceful stop deadline; past it: log server.stop_deadline, exit 1' }, `${SHUTDOWN_DEADLINE_MS / 1000}s`, null),
  snapshotIntervalMs: duration({ key: 'snapshot-interval', env: 'SERVICE_SNAPSHOT_INTERVAL', help: 'periodic snapshots (0 disables)' }, DEFAULTS.snapshotInterval, 'disables'),
  batchGetEntriesMax: int({ key: 'max-batch-get', env: 'SERVICE_MAX_BATCH_GET', help: 'entries per /batch_get' }, 1, null, BATCH_GET_ENTRIES_MAX_DEFAULT),
  dedupeEntriesMax: int({ key: 'dedupe-entries-max', env: 'SERVICE_DEDUPE_ENTRIES_MAX', help: 'live dedupe entries; past it dedupe_capacity_exceeded (docs/limits.md)' }, 1, null, DEDUPE_ENTRIES_MAX),
  stringBytesMax: size({ key: 'max-string-bytes', env: 'SERVICE_MAX_STRING_BYTES', help: 'a pushed str or bytes value; longer is invalid_event (docs/limits.md)' }, STRING_VALUE_BYTES_MAX_DEFAULT,
    { min: 1, max: STRING_VALUE_BYTES_MAX_LIMIT, defaultText: '1MiB' }),
  tcpFrameBytesMax: int({ key: 'tcp-max-frame-bytes', env: 'SERVICE_TCP_MAX_FRAME_BYTES', help: 'TCP frame payload bytes' }, 1, null, TCP_FRAME_BYTES_MAX_DEFAULT),
  tcpFrameTimeoutMs: duration({ key: 'tcp-frame-timeout', env: 'SERVICE_TCP_FRAME_TIMEOUT', help: 'a TCP frame must arrive whole within this, else frame_error and close' }, `${TCP_FRAME_TIMEOUT_MS_DEFAULT / 1000}s`, null),
  tcpIdleTimeoutMs: duration({ key: 'tcp-idle-timeout', env: 'SERVICE_TCP_IDLE_TIMEOUT', help: 'close TCP connections idle this long (0 = never)' }, String(TCP_IDLE_TIMEOUT_MS_DEFAULT), 'means never'),
  tcpConnectionsMax: int({ key: 'tcp-connections-max', env: 'SERVICE_TCP_CONNECTIONS_MAX', help: 'open TCP connections; one more gets too_many_connections (lowered at start to fit the descriptor limit)' }, 1, null, TCP_CONNECTIONS_MAX_DEFAULT),
  tcpAuthTimeoutMs: duration({ key: 'tcp-auth-timeout', env: 'SERVICE_TCP_AUTH_TIMEOUT', help: 'with --auth-token-file: a TCP connection must send its AUTH frame within this, else unauthorized and close' }, `${TCP_AUTH_TIMEOUT_MS_DEFAULT / 1000}s`, null),
  httpConnectionsMax: int({ key: 'http-connections-max', env: 'SERVICE_HTTP_CONNECTIONS_MAX', help: 'open HTTP connections; one more gets 503 too_many_connections (lowered at start to fit the descriptor limit)' }, 1, null, HTTP_CONNECTIONS_MAX_DEFAULT),
  authTokenFile: path({ key: 'auth-token-file', env: 'SERVICE_AUTH_TOKEN_FILE', help: 'require this shared token: HTTP Authorization: Bearer, TCP AUTH frame (docs/security.md)' }, null),
  memoryGovEnforce: bool({ key: 'memory-gov-enforce', env: 'SERVICE_MEMORY_GOV_ENFORCE', flag: false, help: 'false skips the lifetime-memory check of register (not for production)' }, true),
  // Cluster mode (docs/cluster.md): --cluster-url turns it on and then needs --node-id; see clusterOf().
  clusterUrl: text({ key: 'cluster-url', env: 'SERVICE_CLUSTER_URL', value: 'nats://H:P', help: 'cluster mode: NATS JetStream server(s), comma-separated' },
    /^(?:nats|tls|wss?):\/\/[^\s,]+(?:\s*,\s*(?:nats|tls|wss?):\/\/[^\s,]+)*$/, 'nats://HOST:PORT[,nats://HOST:PORT...]'),
  nodeId: text({ key: 'node-id', env: 'SERVICE_NODE_ID', value: 'ID', help: "cluster mode: this node's unique name" }, /^[A-Za-z0-9_-]{1,64}$/, '1-64 of [A-Za-z0-9_-]'),
  partitions: int({ key: 'partitions', env: 'SERVICE_PARTITIONS', help: 'cluster mode: partitions of the cluster (fixed per cluster)' }, 1, CLUSTER_PARTITIONS_MAX, CLUSTER_PARTITIONS_DEFAULT),
  peerAddr: addr({ key: 'peer-addr', env: 'SERVICE_PEER_ADDR', help: 'cluster mode: listener for reads forwarded by other nodes' }, '127.0.0.1:0'),
  checkpointIntervalMs: duration({ key: 'checkpoint-interval', env: 'SERVICE_CHECKPOINT_INTERVAL', help: 'cluster mode: partition checkpoints into the object store (0 disables)' }, DEFAULTS.checkpointInterval, 'disables'),
  // The served-row log (docs/training.md): on when --served-log-dir is given.
  servedLogDir: path({ key: 'served-log-dir', env: 'SERVICE_SERVED_LOG_DIR', help: 'served-row log: every sampled /get and /batch_get row as NDJSON in rotated files here (docs/training.md)' }, null),
  servedLogSample: fraction({ key: 'served-log-sample', env: 'SERVICE_SERVED_LOG_SAMPLE', help: 'served-row log: fraction of answers logged, per answer (tables without their own rate)' }, 1),
  servedLogTables: text({ key: 'served-log-tables', env: 'SERVICE_SERVED_LOG_TABLES', value: 'T[:RATE],...', help: 'served-row log: only these tables, each at its own rate or --served-log-sample (default: every table)' },
    TABLE_RATES_RE, 'table names, each optionally :RATE in (0, 1], comma-separated'),
  servedLogFileBytes: int({ key: 'served-log-file-bytes', env: 'SERVICE_SERVED_LOG_FILE_BYTES', help: 'served-row log: start the next file past this many bytes' }, SERVED_LOG_FILE_BYTES_MIN, null, SERVED_LOG_FILE_BYTES_DEFAULT),
  servedLogFiles: int({ key: 'served-log-files', env: 'SERVICE_SERVED_LOG_FILES', help: 'served-row log: files kept; older ones are deleted' }, 1, null, SERVED_LOG_FILES_DEFAULT),
  /** Test hook: while this file exists, its content (ENOSPC, EIO, TRUNCATE, CRASH) is injected as a WAL fault. */
  faultFile: path({ key: 'fault-wal-file', env: 'SERVICE_FAULT_WAL_FILE', flag: false, help: 'test hook: WAL fault injected while this file exists' }, null),
  /** Test hook: the server's wall clock is shifted by the ms written in this file (re-read every 100 ms; docs/time.md). */
  clockFaultFile: path({ key: 'fault-clock-file', env: 'SERVICE_FAULT_CLOCK_FILE', flag: false, help: 'test hook: the wall clock shifted by the ms in this file' }, null),
} satisfies Record<string, Setting<unknown>>;

type Settings = typeof SETTINGS;
type SettingValues = { readonly [K in keyof Settings]: ReturnType<Settings[K]['convert']> };

export interface ClusterConfig {
  /** NATS server URL(s), comma-separated. */
  url: string;
  nodeId: string;
  partitions: number;
  /** Internal listener for reads forwarded by other nodes (advertised to them). */
  peerHost: string;
  peerPort: number;
  /** Cadence of partition checkpoints (cluster/checkpoint.ts); 0 = none. */
  checkpointIntervalMs: number;
}

/** The served-row log's settings together (null: off, the default). */
export interface ServedLogConfig {
  dir: string;
  sample: number;
  /** Table -> rate; null = every table at `sample`. */
  tables: ReadonlyMap<string, number> | null;
  fileBytesMax: number;
  filesKept: number;
}

/** The settings plus what is derived from several of them. */
export type ServerConfig = SettingValues & {
  /** Cluster mode (docs/cluster.md): null = single node (the default). */
  readonly cluster: ClusterConfig | null;
  readonly servedLog: ServedLogConfig | null;
};

const SERVED_LOG_ONLY = ['served-log-sample', 'served-log-tables', 'served-log-file-bytes', 'served-log-files'];

/** Served-row log settings: on with --served-log-dir; its other settings need it. */
function servedLogOf(v: SettingValues, given: Set<string>): ServedLogConfig | null {
  if (v.servedLogDir === null) {
    const stray = SERVED_LOG_ONLY.filter((k) => given.has(k));
    if (stray.length > 0) throw new UsageError(`${stray.map((k) => `--${k}`).join(', ')} ${stray.length === 1 ? 'needs' : 'need'} --served-log-dir (the served-row log)`);
    return null;
  }
  let tables: Map<string, number> | null = null;
  if (v.servedLogTables !== null) {
    tables = new Map();
    for (const part of v.servedLogTables.split(',')) {
      const [name, rate] = part.trim().split(':');
      tables.set(name, rate === undefined ? v.servedLogSample : Number(rate));
    }
  }
  return { dir: v.servedLogDir, sample: v.servedLogSample, tables, fileBytesMax: v.servedLogFileBytes, filesKept: v.servedLogFiles };
}

const CLUSTER_ONLY = ['node-id', 'partitions', 'peer-addr', 'checkpoint-interval'];

/** Cluster settings: all or nothing; `given` holds the keys set by some source. */
function clusterOf(v: SettingValues, given: Set<string>): ClusterConfig | null {
  if (v.clusterUrl === null) {
    const stray = CLUSTER_ONLY.filter((k) => given.has(k));
    if (stray.length > 0) throw new UsageError(`${stray.map((k) => `--${k}`).join(', ')} ${stray.length === 1 ? 'needs' : 'need'} --cluster-url (cluster mode)`);
    return null;
  }
  if (v.nodeId === null) throw new UsageError('cluster mode needs --node-id (or SERVICE_NODE_ID)');
  return { url: v.clusterUrl, nodeId: v.nodeId, partitions: v.partitions, peerHost: v.peerAddr.host, peerPort: v.peerAddr.port, checkpointIntervalMs: v.checkpointIntervalMs };
}

const ENTRIES = Object.entries(SETTINGS) as Array<[keyof Settings, Setting<unknown>]>;
const BY_KEY = new Map(ENTRIES.map(([field, s]) => [s.key, { field, s }]));

/** The config-file schema (also what flags and env are validated against). */
export const CONFIG_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(ENTRIES.map(([, s]) => [s.key, { ...s.schema, description: s.help }])),
};

const validate = new Ajv({ allErrors: false, strict: true }).compile(CONFIG_SCHEMA);

export const CONFIG_OPTION: OptionSpec = { name: 'config', type: 'string', value: 'FILE', help: 'JSON config file (keys = flag names)', env: 'SERVICE_CONFIG' };

export const SERVE_COMMAND: CommandSpec = {
  name: 'serve',
  summary: 'Start the server (the default command). Precedence: flags > environment > config file > defaults.',
  args: [],
  options: [
    CONFIG_OPTION,
    ...ENTRIES.filter(([, s]) => s.flag).map(([, s]): OptionSpec => ({
      name: s.key, type: s.schema.type === 'boolean' ? 'boolean' : 'string', value: s.value, help: s.help, env: s.env, default: s.defaultText,
    })),
  ],
  notes: [
    ['environment / config file only:', ...ENTRIES.filter(([, s]) => !s.flag).map(([, s]) => `  ${s.env} (${s.key}): ${s.help} (default ${s.defaultText})`)].join('\n'),
    'Config file: {"http-addr": "0.0.0.0:8080", "shards": 4, ...}; unknown keys are errors. See docs/operations.md.',
  ],
};

/** Every environment variable the server reads (README documents each). */
export const SERVER_ENV = [CONFIG_OPTION.env!, ...ENTRIES.map(([, s]) => s.env)];

type Source = { label: (key: string) => string; values: Record<string, unknown> };

function check(src: Source): void {
  if (validate(src.values)) return;
  const e = validate.errors![0] as ErrorObject;
  if (e.keyword === 'additionalProperties') {
    throw new UsageError(`${src.label('')}unknown key ${JSON.stringify((e.params as { additionalProperty: string }).additionalProperty)}`);
  }
  const key = e.instancePath.split('/')[1];
  const entry = BY_KEY.get(key);
  if (entry === undefined) throw new UsageError(`${src.label('')}must be a JSON object of settings`);
  throw new UsageError(`${src.label(key)} must be ${entry.s.expect}, got ${JSON.stringify(src.values[key])}`);
}

function readConfigFile(file: string): Record<string, unknown> {
  if (/\.ya?ml$/i.test(file)) throw new UsageError(`${file}: YAML config files are not supported; write the same keys as JSON`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read config file ${file}: ${(e as Error).message}`);
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new UsageError(`${file} is not valid JSON: ${(e as Error).message}`);
  }
}

/**
 * Resolves the config from parsed `serve` flags (parseCommand values), the
 * environment and the config file they name. Throws UsageError (one line).
 */
export function resolveServerConfig(flagValues: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): ServerConfig {
  const envOf = (name: string): string | undefined => (env[name] === undefined || env[name] === '' ? undefined : env[name]);
  const configPath = (flagValues.config as string | undefined) ?? envOf(CONFIG_OPTION.env!);
  const flags: Record<string, unknown> = {};
  const fromEnv: Record<string, unknown> = {};
  for (const [, s] of ENTRIES) {
    const f = flagValues[s.key];
    if (s.flag && f !== undefined) flags[s.key] = typeof f === 'string' ? s.fromString(f) : f;
    const e = envOf(s.env);
    if (e !== undefined) fromEnv[s.key] = s.fromString(e);
  }
  const file = configPath === undefined ? {} : readConfigFile(configPath);
  check({ label: (k) => (k === '' ? '' : `--${k}`), values: flags });
  check({ label: (k) => (k === '' ? '' : BY_KEY.get(k)!.s.env), values: fromEnv });
  check({ label: (k) => `${configPath}: ${k === '' ? '' : k}`, values: file });
  const out: Record<string, unknown> = {};
  for (const [field, s] of ENTRIES) {
    const def = typeof s.default === 'function' ? (s.default as () => unknown)() : s.default;
    out[field] = s.convert(flags[s.key] ?? fromEnv[s.key] ?? file[s.key] ?? def);
  }
  const given = new Set([...Object.keys(flags), ...Object.keys(fromEnv), ...Object.keys(file)]);
  out.cluster = clusterOf(out as SettingValues, given);
  out.servedLog = servedLogOf(out as SettingValues, given);
  return Object.freeze(out) as ServerConfig;
}

/** Flags as typed after `serve` (tests and embedders): parse + resolve. Throws UsageError. */
export function parseServeArgs(argv: readonly string[], env: NodeJS.ProcessEnv): ServerConfig {
  return resolveServerConfig(parseCommand('streamfeat', SERVE_COMMAND, argv).values, env);
}

/** A bad setting (the same class as any command-line error: one line, exit 2). */
export { UsageError as ConfigError };
