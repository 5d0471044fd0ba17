/** Command-line options of `npm run bench -- <scenario> [options]`. */
import { ENTITIES_DEFAULT, type KeyDist } from './keys';
import { WORKLOADS } from './workloads';

export type HttpGen = 'wrk' | 'autocannon' | 'sf-http';

export interface Opts {
  workload: string;
  keys: KeyDist;
  entities: number;
  /** Entities pushed before get/batch-get/mixed loads; gets draw keys from them. */
  preload: number;
  /** Unset = the server's defaults (what the issue-6 targets are defined on). */
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
  /** push-latency / freshness transport. */
  transport: 'http' | 'tcp';
  /** push-latency: fixed rate; unset = half the measured max. */
  rate?: number;
  /** freshness: background push rate (fixed, framed TCP); 0 = none. */
  bgRate: number;
  /** freshness: probe connections. */
  probes: number;
  pushShare: number;
  /** ceiling: per-item busy work of uws_hop's worker thread, microseconds, one run each. */
  workUs: number[];
  out?: string;
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
  seed: 1,
};

/** `all` keeps to ~5 minutes on 2 cores: shorter runs unless told otherwise. */
export const ALL_DURATION_S = 5;
export const ALL_WARMUP_S = 1;

export const USAGE = `usage: npm run bench -- <scenario> [options]     (npm run bench -- list)
options:
  --workload small|medium|fraud   (fraud)       --keys zipf|uniform (zipf)
  --entities N   key space (1000000)            --preload N   rows pushed before get loads (20000)
  --shards N     server shards (server default) --memory-only  --wal-sync batch|always
  --duration S   measured seconds (10; all: 5)  --warmup S   (2; all: 1)
  --connections N  (per scenario)               --threads N  wrk threads (1)
  --gen wrk|autocannon|sf-http  HTTP generator (wrk if installed, else autocannon)
  --transport http|tcp   push-latency / freshness (http)
  --rate N       push-latency fixed rate (half the measured max)
  --bg-rate N    freshness background pushes/s (1000)   --probes N  freshness probes (4)
  --push-share F mixed: share of pushes (0.9)
  --work-us LIST ceiling: uws_hop worker busy-work per request in us, comma-separated (0,5,15,25)
  --out FILE     append one markdown row per result  --seed N (1)`;

export interface Parsed {
  scenario: string;
  opts: Opts;
  /** Options the user gave (so that `all` and `smoke` only fill in the rest). */
  given: Set<keyof Opts>;
}

function num(flag: string, v: string | undefined, min: number, integer = true): number {
  const n = Number(v);
  if (v === undefined || !Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
    throw new Error(`${flag} needs ${integer ? 'an integer' : 'a number'} >= ${min}, got ${v ?? '(nothing)'}`);
  }
  return n;
}

/** A comma-separated list of numbers >= min (e.g. `0,5,15,25`). */
function numList(flag: string, v: string | undefined, min: number): number[] {
  if (v === undefined || v === '') throw new Error(`${flag} needs a comma-separated list of numbers >= ${min}, got (nothing)`);
  return v.split(',').map((x) => num(flag, x.trim() === '' ? undefined : x.trim(), min, false));
}

function oneOf<T extends string>(flag: string, v: string | undefined, allowed: readonly T[]): T {
  if (v === undefined || !(allowed as readonly string[]).includes(v)) {
    throw new Error(`${flag} must be one of ${allowed.join(', ')}, got ${v ?? '(nothing)'}`);
  }
  return v as T;
}

export function parseArgs(argv: string[]): Parsed {
  const opts: Opts = { ...DEFAULTS };
  const given = new Set<keyof Opts>();
  let scenario = '';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = (): string | undefined => argv[++i];
    const set = <K extends keyof Opts>(k: K, val: Opts[K]): void => {
      opts[k] = val;
      given.add(k);
    };
    switch (a) {
      case '--workload': set('workload', oneOf(a, v(), Object.keys(WORKLOADS))); break;
      case '--keys': set('keys', oneOf(a, v(), ['zipf', 'uniform'] as const)); break;
      case '--entities': set('entities', num(a, v(), 1)); break;
      case '--preload': set('preload', num(a, v(), 0)); break;
      case '--shards': set('shards', num(a, v(), 1)); break;
      case '--memory-only': set('memoryOnly', true); break;
      case '--wal-sync': set('walSync', oneOf(a, v(), ['batch', 'always'] as const)); break;
      case '--duration': set('durationS', num(a, v(), 1)); break;
      case '--warmup': set('warmupS', num(a, v(), 0)); break;
      case '--connections': set('connections', num(a, v(), 1)); break;
      case '--threads': set('threads', num(a, v(), 1)); break;
      case '--gen': set('gen', oneOf(a, v(), ['wrk', 'autocannon', 'sf-http'] as const)); break;
      case '--transport': set('transport', oneOf(a, v(), ['http', 'tcp'] as const)); break;
      case '--rate': set('rate', num(a, v(), 1)); break;
      case '--bg-rate': set('bgRate', num(a, v(), 0)); break;
      case '--probes': set('probes', num(a, v(), 1)); break;
      case '--push-share': set('pushShare', num(a, v(), 0, false)); break;
      case '--work-us': set('workUs', numList(a, v(), 0)); break;
      case '--out': { const f = v(); if (!f) throw new Error('--out needs a file'); set('out', f); break; }
      case '--seed': set('seed', num(a, v(), 0)); break;
      case '-h': case '--help': scenario = 'help'; break;
      default:
        if (a.startsWith('-')) throw new Error(`unknown option ${a}\n${USAGE}`);
        if (scenario !== '') throw new Error(`one scenario at a time (got ${scenario} and ${a})`);
        scenario = a;
    }
  }
  if (opts.pushShare > 1) throw new Error('--push-share must be in [0, 1]');
  return { scenario: scenario || 'help', opts, given };
}
