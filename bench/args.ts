/** Command-line options of `npm run bench -- <scenario> [options]`. */
import { type CommandSpec, EXIT_USAGE, formatHelp, numberArg, numberListArg, oneOfArg, type OptionSpec, parseCommand, UsageError } from '../src/cli_args';
import { ENTITIES_DEFAULT, type KeyDist } from './keys';
import { WORKLOADS } from './workloads';

export type HttpGen = 'wrk' | 'autocannon' | 'sf-http';

export interface Opts {
  workload: string;
  keys: KeyDist;
  entities: number;
  /** Entities pushed before get/batch-get/mixed loads; gets draw keys from them. */
  preload: number;
  /** Unset = the server's defaults (what the targets of `all` are defined on). */
  shards?: number;
  memoryOnly: boolean;
  walSync?: string;
  durationS: number;
  warmupS: number;
  /** Unset = the scenario's default. */
  connections?: number;
  threads: number;
  /** HTTP load generator; unset = wrk when installed, else autocannon. */
  gen?: HttpGen;
  /** push-latency / freshness / ceiling transport. */
  transport: 'http' | 'tcp';
  /** push-latency: fixed rate; unset = half the measured max. */
  rate?: number;
  /** freshness: background push rate (fixed, framed TCP); 0 = none. */
  bgRate: number;
  /** freshness: probe connections. */
  probes: number;
  pushShare: number;
  /** soak: share of bad inputs; unset = the scenario's default (0.05). */
  badShare?: number;
  /** ceiling: per-item busy work of uws_hop's worker thread, microseconds, one run each. */
  workUs: number[];
  /**
   * Rounds of the whole scenario, one after the other (each with fresh processes and
   * its own baseline run, so baseline and streamfeat alternate): the bare baseline
   * alone swings ~20% between runs on this machine, so one ratio is one draw.
   */
  rounds: number;
  out?: string;
  /** Append every result as one JSON line (bench/current_table.ts reads them). */
  json?: string;
  /** Exit 1 when a result had errors, no successful request or unseen pushes (the smoke's check). */
  check: boolean;
  seed: number;
}

export const DEFAULTS: Opts = {
  workload: 'fraud',
  keys: 'zipf',
  entities: ENTITIES_DEFAULT,
  preload: 20_000,
  memoryOnly: false,
  durationS: 10,
  warmupS: 2,
  threads: 1,
  transport: 'http',
  bgRate: 1_000,
  probes: 4,
  pushShare: 0.9,
  workUs: [0, 5, 15, 25],
  rounds: 1,
  check: false,
  seed: 1,
};

/** `all` keeps to ~5 minutes on 2 cores: shorter runs unless told otherwise. */
export const ALL_DURATION_S = 5;
export const ALL_WARMUP_S = 1;

const OPTIONS: OptionSpec[] = [
  { name: 'workload', type: 'string', value: Object.keys(WORKLOADS).join('|'), help: 'registry and event mix', default: DEFAULTS.workload },
  { name: 'keys', type: 'string', value: 'zipf|uniform', help: 'key distribution', default: DEFAULTS.keys },
  { name: 'entities', type: 'string', value: 'N', help: 'key space', default: String(DEFAULTS.entities) },
  { name: 'preload', type: 'string', value: 'N', help: 'rows pushed before get loads', default: String(DEFAULTS.preload) },
  { name: 'shards', type: 'string', value: 'N', help: 'server shards', default: 'server default' },
  { name: 'memory-only', type: 'boolean', help: 'server without WAL' },
  { name: 'wal-sync', type: 'string', value: 'batch|always', help: 'server WAL sync mode', default: 'server default' },
  { name: 'duration', type: 'string', value: 'S', help: 'measured seconds', default: `${DEFAULTS.durationS}; all: ${ALL_DURATION_S}` },
  { name: 'warmup', type: 'string', value: 'S', help: 'warm-up seconds', default: `${DEFAULTS.warmupS}; all: ${ALL_WARMUP_S}` },
  { name: 'connections', type: 'string', value: 'N', help: 'load connections', default: 'per scenario' },
  { name: 'threads', type: 'string', value: 'N', help: 'wrk threads', default: String(DEFAULTS.threads) },
  { name: 'gen', type: 'string', value: 'wrk|autocannon|sf-http', help: 'HTTP load generator', default: 'wrk if installed, else autocannon' },
  { name: 'transport', type: 'string', value: 'http|tcp', help: 'push-latency / freshness / ceiling transport', default: DEFAULTS.transport },
  { name: 'rate', type: 'string', value: 'N', help: 'push-latency fixed rate', default: 'half the measured max' },
  { name: 'bg-rate', type: 'string', value: 'N', help: 'freshness background pushes/s', default: String(DEFAULTS.bgRate) },
  { name: 'probes', type: 'string', value: 'N', help: 'freshness probes', default: String(DEFAULTS.probes) },
  { name: 'push-share', type: 'string', value: 'F', help: 'mixed: share of pushes, 0..1', default: String(DEFAULTS.pushShare) },
  { name: 'bad-share', type: 'string', value: 'F', help: 'soak: share of bad inputs, 0..1 (soak defaults: --duration 60, --connections 1000, --rate 4000 for all conns)', default: '0.05' },
  { name: 'work-us', type: 'string', value: 'LIST', help: 'ceiling: uws_hop worker busy-work per request in us, comma-separated', default: DEFAULTS.workUs.join(',') },
  { name: 'rounds', type: 'string', value: 'N', help: 'run the scenario N times (baseline and streamfeat alternate); prints every ratio and their median', default: String(DEFAULTS.rounds) },
  { name: 'out', type: 'string', value: 'FILE', help: 'append one markdown row per result' },
  { name: 'json', type: 'string', value: 'FILE', help: 'append one JSON line per result (bench/target_table.sh reads them)' },
  { name: 'check', type: 'boolean', help: 'exit 1 when a result had errors or nothing succeeded' },
  { name: 'seed', type: 'string', value: 'N', help: 'key generator seed', default: String(DEFAULTS.seed) },
];

const PROGRAM = 'npm run bench --';
const SPEC: CommandSpec = { name: '', args: ['SCENARIO?'], summary: 'Run a benchmark scenario (npm run bench -- list).', options: OPTIONS };

export const USAGE = formatHelp(PROGRAM, SPEC).trimEnd();

export interface Parsed {
  scenario: string;
  opts: Opts;
  /** Options the user gave (so that `all` and `smoke` only fill in the rest). */
  given: Set<keyof Opts>;
}

/** Flag -> how its value becomes an Opts field. */
const FIELDS: Record<string, [keyof Opts, (flag: string, v: string) => Opts[keyof Opts]]> = {
  workload: ['workload', (f, v) => oneOfArg(f, v, Object.keys(WORKLOADS))],
  keys: ['keys', (f, v) => oneOfArg(f, v, ['zipf', 'uniform'] as const)],
  entities: ['entities', (f, v) => numberArg(f, v, 1)],
  preload: ['preload', (f, v) => numberArg(f, v, 0)],
  shards: ['shards', (f, v) => numberArg(f, v, 1)],
  'wal-sync': ['walSync', (f, v) => oneOfArg(f, v, ['batch', 'always'] as const)],
  duration: ['durationS', (f, v) => numberArg(f, v, 1)],
  warmup: ['warmupS', (f, v) => numberArg(f, v, 0)],
  connections: ['connections', (f, v) => numberArg(f, v, 1)],
  threads: ['threads', (f, v) => numberArg(f, v, 1)],
  gen: ['gen', (f, v) => oneOfArg(f, v, ['wrk', 'autocannon', 'sf-http'] as const)],
  transport: ['transport', (f, v) => oneOfArg(f, v, ['http', 'tcp'] as const)],
  rate: ['rate', (f, v) => numberArg(f, v, 1)],
  'bg-rate': ['bgRate', (f, v) => numberArg(f, v, 0)],
  probes: ['probes', (f, v) => numberArg(f, v, 1)],
  'push-share': ['pushShare', (f, v) => numberArg(f, v, 0, false)],
  'bad-share': ['badShare', (f, v) => numberArg(f, v, 0, false)],
  'work-us': ['workUs', (f, v) => numberListArg(f, v, 0)],
  rounds: ['rounds', (f, v) => numberArg(f, v, 1)],
  out: ['out', (_f, v) => v],
  json: ['json', (_f, v) => v],
  seed: ['seed', (f, v) => numberArg(f, v, 0)],
};

export function parseArgs(argv: string[]): Parsed {
  const p = parseCommand(PROGRAM, SPEC, argv);
  const opts: Opts = { ...DEFAULTS };
  const given = new Set<keyof Opts>();
  const set = <K extends keyof Opts>(k: K, val: Opts[K]): void => {
    opts[k] = val;
    given.add(k);
  };
  for (const [name, [field, convert]] of Object.entries(FIELDS)) {
    const v = p.values[name];
    if (typeof v === 'string') set(field, convert(`--${name}`, v));
  }
  if (p.values['memory-only'] === true) set('memoryOnly', true);
  if (p.values.check === true) set('check', true);
  if (opts.pushShare > 1) throw new UsageError('--push-share must be in [0, 1]');
  if (opts.badShare !== undefined && opts.badShare > 1) throw new UsageError('--bad-share must be in [0, 1]');
  return { scenario: p.help ? 'help' : (p.positionals[0] ?? 'help'), opts, given };
}

/** Command line of a baseline server (bench/baseline/*): where to listen, and uws_hop's per-item busy work. */
export interface BaselineArgs {
  host: string;
  port: number;
  /** Microseconds of busy work per item (uws_hop only; 0 elsewhere). */
  workUs: number;
}

/**
 * Parses `--http-addr|--tcp-addr HOST:PORT [--work-us N]` with the same parser as
 * every other command line here (bench/procs.ts starts the baselines with these
 * flags); a bad one prints one line and exits 2, like every command line here.
 */
export function parseBaselineArgs(program: string, addrFlag: 'http-addr' | 'tcp-addr', argv: readonly string[], workUs = false): BaselineArgs {
  try {
    return baselineArgs(program, addrFlag, argv, workUs);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${program}: ${err.message}\n`);
    process.exit(EXIT_USAGE);
  }
}

function baselineArgs(program: string, addrFlag: 'http-addr' | 'tcp-addr', argv: readonly string[], workUs: boolean): BaselineArgs {
  const options: OptionSpec[] = [{ name: addrFlag, type: 'string', value: 'HOST:PORT', help: 'listen address (port 0 = any free port)' }];
  if (workUs) options.push({ name: 'work-us', type: 'string', value: 'N', help: 'busy work per item, microseconds', default: '0' });
  const p = parseCommand(program, { name: '', args: [], summary: 'A baseline server of the bench.', options }, argv);
  const addr = p.values[addrFlag];
  const m = typeof addr === 'string' ? /^(.+):(\d+)$/.exec(addr) : null;
  if (m === null) throw new UsageError(`--${addrFlag} HOST:PORT is required`);
  const w = p.values['work-us'];
  return {
    host: m[1],
    port: numberArg(`--${addrFlag}`, m[2], 0),
    workUs: typeof w === 'string' ? numberArg('--work-us', w, 0, false) : 0,
  };
}
