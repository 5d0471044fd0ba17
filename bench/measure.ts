/**
 * One measured load against one target process: picks the generator, samples
 * the target's CPU (/proc/<pid>/stat) exactly over the generator's measured
 * window, reads its peak RSS afterwards, and normalizes everything to a
 * `Measured`. Also registers workloads and preloads keys.
 */
import type { HttpGen, Opts } from './args';
import { runChild } from './children';
import { Histogram } from './hist';
import type { BodySpec, JobResult, Mix } from './load/jobs';
import { cpuBetween, cpuTimes, peakRssBytes, type CpuTimes } from './procstat';
import type { Target } from './procs';
import type { Measured } from './report';
import { runWrk } from './wrk';
import { workloadNamed } from './workloads';

/** Pause after a preload so that every preloaded row has been applied before gets start. */
const PRELOAD_SETTLE_MS = 200;
/** Connections the preload uses (each pipelines 32 pushes). */
const PRELOAD_CONNECTIONS = 8;

export function bodySpec(o: Opts): BodySpec {
  return { workload: o.workload, dist: o.keys, entities: o.entities, getEntities: Math.max(1, Math.min(o.preload, o.entities)), seed: o.seed };
}

/** Samples a target's CPU between two markers. */
class Sampler {
  #c0: CpuTimes | null = null;
  #c1: CpuTimes | null = null;
  #t0 = 0;
  #t1 = 0;
  constructor(readonly pid: number) {}
  start = (): void => {
    this.#c0 = cpuTimes(this.pid);
    this.#t0 = performance.now();
  };
  end = (): void => {
    this.#c1 = cpuTimes(this.pid);
    this.#t1 = performance.now();
  };
  cpu() {
    return cpuBetween(this.#c0, this.#c1, (this.#t1 - this.#t0) / 1000);
  }
}

function fromJob(generator: string, r: JobResult, s: Sampler): Measured {
  const kinds: Measured['kinds'] = {};
  for (const [k, v] of Object.entries(r.kinds)) {
    kinds[k] = { rps: r.elapsedS > 0 ? v.ok / r.elapsedS : 0, lat: Histogram.from(v.hist).summary() };
  }
  // A single-kind load says the same thing twice: keep per-kind lines for mixes only.
  if (Object.keys(kinds).length < 2) for (const k of Object.keys(kinds)) delete kinds[k];
  const wall = r.elapsedS;
  return {
    generator,
    requests: r.requests,
    ok: r.ok,
    errors: r.errors,
    firstError: r.firstError,
    elapsedS: r.elapsedS,
    rps: wall > 0 ? r.ok / wall : 0,
    lat: Histogram.from(r.hist).summary(),
    kinds,
    clientCpu: wall > 0 ? { user: r.cpuUser, sys: r.cpuSys, pctOfCore: ((r.cpuUser + r.cpuSys) / wall) * 100 } : null,
    serverCpu: s.cpu(),
    serverPeakRssBytes: peakRssBytes(s.pid),
    extra: r.extra,
  };
}

function expectedMs(o: Opts): number {
  return (o.durationS + o.warmupS) * 1000;
}

/** An HTTP load with the chosen generator against target's HTTP port; `pipelining` > 1 only with autocannon. */
export async function httpLoad(gen: HttpGen, t: Target, mix: Mix, o: Opts, connections: number, rate = 0, pipelining = 1): Promise<Measured> {
  if (t.httpPort === null) throw new Error(`${t.kind} has no HTTP port`);
  if (pipelining > 1 && gen !== 'autocannon') throw new Error(`pipelining ${pipelining}: only the autocannon generator pipelines`);
  const s = new Sampler(t.pid);
  const spec = bodySpec(o);
  if (gen === 'wrk') {
    if (rate > 0) throw new Error('wrk has no fixed-rate mode (that is wrk2): use --gen sf-http');
    const r = await runWrk({ ...spec, port: t.httpPort, mix, pushShare: o.pushShare, threads: o.threads, connections,
      durationS: o.durationS, warmupS: o.warmupS }, s.start, s.end);
    return {
      generator: 'wrk', requests: r.requests, ok: r.ok, errors: r.errors, firstError: r.firstError, elapsedS: r.elapsedS,
      rps: r.elapsedS > 0 ? r.ok / r.elapsedS : 0, lat: r.lat, kinds: {}, clientCpu: r.cpu, serverCpu: s.cpu(),
      serverPeakRssBytes: peakRssBytes(t.pid), extra: { connections, threads: Math.min(o.threads, connections) },
    };
  }
  if (gen === 'autocannon') {
    if (rate > 0) throw new Error("autocannon's overallRate sends in bursts each second: use --gen sf-http for fixed rate");
    const r = await runChild({ ...spec, kind: 'autocannon', port: t.httpPort, mix, pushShare: o.pushShare, connections, pipelining,
      warmupMs: o.warmupS * 1000, durationMs: o.durationS * 1000 }, { onStart: s.start, onEnd: s.end }, expectedMs(o));
    return fromJob('autocannon', r, s);
  }
  const r = await runChild({ ...spec, kind: 'load', transport: 'http', port: t.httpPort, mix, pushShare: o.pushShare, connections,
    warmupMs: o.warmupS * 1000, durationMs: o.durationS * 1000, rate }, { onStart: s.start, onEnd: s.end }, expectedMs(o));
  return fromJob('sf-http', r, s);
}

/** Our framed-TCP client against target's TCP port. */
export async function tcpLoad(t: Target, mix: Mix, o: Opts, connections: number, rate = 0): Promise<Measured> {
  if (t.tcpPort === null) throw new Error(`${t.kind} has no TCP port`);
  const s = new Sampler(t.pid);
  const r = await runChild({ ...bodySpec(o), kind: 'load', transport: 'tcp', port: t.tcpPort, mix, pushShare: o.pushShare, connections,
    warmupMs: o.warmupS * 1000, durationMs: o.durationS * 1000, rate }, { onStart: s.start, onEnd: s.end }, expectedMs(o));
  return fromJob('sf-tcp', r, s);
}

/** Freshness probes against `probeTarget`, background pushes against `bgTarget`'s TCP port. */
export async function freshnessLoad(probeTarget: Target, bgTarget: Target, o: Opts): Promise<Measured> {
  const port = o.transport === 'tcp' ? probeTarget.tcpPort : probeTarget.httpPort;
  if (port === null) throw new Error(`${probeTarget.kind} has no ${o.transport} port`);
  const s = new Sampler(probeTarget.pid);
  const r = await runChild({ ...bodySpec(o), kind: 'freshness', transport: o.transport, port, bgPort: bgTarget.tcpPort ?? 0,
    bgRate: bgTarget.tcpPort === null ? 0 : o.bgRate, probes: o.probes, warmupMs: o.warmupS * 1000, durationMs: o.durationS * 1000 },
  { onStart: s.start, onEnd: s.end }, expectedMs(o));
  return fromJob(`sf-${o.transport}`, r, s);
}

export async function registerWorkload(t: Target, workload: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${t.httpPort}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(workloadNamed(workload).register),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`register ${workload} failed: HTTP ${res.status} ${text.slice(0, 500)}`);
}

/** Pushes one event per entity of [0, preload) so that get loads read real rows; returns pushes/s. */
export async function preloadKeys(t: Target, o: Opts): Promise<number> {
  const spec = bodySpec(o);
  const count = spec.getEntities;
  const r = await runChild({ ...spec, kind: 'preload', port: t.tcpPort!, count, connections: PRELOAD_CONNECTIONS }, {}, count /* at least 1000 pushes/s */);
  if (r.errors > 0) throw new Error(`preload: ${r.errors} of ${count} pushes failed; first: ${r.firstError}`);
  await new Promise((res) => setTimeout(res, PRELOAD_SETTLE_MS));
  return r.extra.rate ?? 0;
}
