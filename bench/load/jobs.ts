/**
 * What the bench parent sends to a load child (one job per child process) and
 * what comes back. Children run in their own process so that load generation
 * never shares an event loop (or a CPU account) with anything else.
 */
import type { HistJson } from '../hist';
import type { KeyDist } from '../keys';

/** Request kinds a load mixes. */
export type Mix = 'push' | 'get' | 'batch' | 'mixed';

export interface BodySpec {
  workload: string;
  dist: KeyDist;
  entities: number;
  /** Gets draw keys from [0, getEntities): the preloaded prefix. */
  getEntities: number;
  seed: number;
}

/** Our own client: closed loop (rate 0) or fixed rate, one request in flight per connection. */
export interface LoadJob extends BodySpec {
  kind: 'load';
  transport: 'tcp' | 'http';
  port: number;
  mix: Mix;
  /** Share of pushes in 'mixed' (the plan of `all`: 0.9). */
  pushShare: number;
  connections: number;
  warmupMs: number;
  durationMs: number;
  /** Requests per second over all connections; 0 = closed loop (as fast as replies come). */
  rate: number;
}

/** autocannon's programmatic API, closed loop, bodies varied per request by setupRequest. */
export interface AutocannonJob extends BodySpec {
  kind: 'autocannon';
  port: number;
  mix: Mix;
  pushShare: number;
  connections: number;
  /** Requests in flight per connection (autocannon -p); 1 = no pipelining. */
  pipelining: number;
  warmupMs: number;
  durationMs: number;
}

/** Pushes one event for each entity 0..count-1 (pipelined TCP) so that gets hit rows. */
export interface PreloadJob extends BodySpec {
  kind: 'preload';
  port: number;
  count: number;
  connections: number;
}

/** Push to a fresh key, then poll /get until the row shows; optional background push load. */
export interface FreshnessJob extends BodySpec {
  kind: 'freshness';
  transport: 'tcp' | 'http';
  port: number;
  /** TCP port of the background load (fixed-rate pushes); unused when bgRate is 0. */
  bgPort: number;
  bgRate: number;
  probes: number;
  warmupMs: number;
  durationMs: number;
}

export type Job = LoadJob | AutocannonJob | PreloadJob | FreshnessJob;

/** Latency and outcome of one request kind. */
export interface KindResult {
  ok: number;
  errors: number;
  hist: HistJson;
}

export interface JobResult {
  /** Completed requests in the measured window (ok + errors). */
  requests: number;
  ok: number;
  /** Error replies (non-2xx, error frames) and failed connections. */
  errors: number;
  firstError: string | null;
  elapsedS: number;
  hist: HistJson;
  /** Per request kind, for mixes. */
  kinds: Partial<Record<'push' | 'get' | 'batch', KindResult>>;
  /** The child's own CPU in the measured window (all its threads), seconds. */
  cpuUser: number;
  cpuSys: number;
  /** Job-specific numbers (freshness polls, preload rate...). */
  extra: Record<string, number>;
}

/** Child -> parent messages. */
export type ChildMsg =
  | { t: 'measure_start' }
  | { t: 'measure_end' }
  | { t: 'result'; result: JobResult }
  | { t: 'error'; message: string };
