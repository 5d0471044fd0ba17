/**
 * The scenarios of `npm run bench -- <scenario>`. Each starts fresh processes
 * (a server with an empty temp data dir, or a bare baseline), measures, stops
 * them, and returns result blocks. Baselines are measured in the same run with
 * the same generator and bodies, and cached within one invocation so that
 * `all` measures each distinct baseline once.
 */
import type { HttpEngine } from '../src/config';
import { SHARD_BATCHES_IN_FLIGHT_MAX } from '../src/limits';
import type { HttpGen, Opts } from './args';
import { bodySpec, freshnessLoad, httpLoad, preloadKeys, registerWorkload, tcpLoad } from './measure';
import type { Mix } from './load/jobs';
import { startServer, startTcpEcho, startTcpHop, startUwsBare, startUwsHop, type Target } from './procs';
import { ratioOf, ms, type Measured, type RatioKind, type ScenarioResult, type TargetCheck } from './report';
import { runSoak, soakOptions } from './soak';
import { wrkAvailable } from './wrk';

/**
 * Default connections per throughput load (one request in flight each). Enough to
 * saturate both servers: streamfeat hands every batch to a shard thread and back,
 * so at low concurrency it is latency-bound while the bare baseline (no hop) is
 * already CPU-bound. Both sides always get the same number; `--connections` overrides.
 */
const CONNECTIONS_DEFAULT = 256;
/** batch_get: few clients, so that p99 shows the cost of a 100-key read, not queueing behind 32 others. */
const BATCH_CONNECTIONS_DEFAULT = 4;

/** The targets of `all` (bench/README.md "Targets of `all`"). */
const TARGET_HTTP_PUSH_RATIO = 0.75;
const TARGET_TCP_PUSH_RATIO = 0.75;
const TARGET_GET_RATIO = 0.8;
const TARGET_BATCH_P99_US = 5_000;
const TARGET_PUSH_P99_US = 2_000;

/** Client CPU above this share of a core: the generator may be the bottleneck. */
const CLIENT_SATURATED_PCT = 90;

export interface Ctx {
  baselines: Map<string, Measured>;
  log: (line: string) => void;
}

export interface Scenario {
  name: string;
  summary: string;
  run(o: Opts, ctx: Ctx): Promise<ScenarioResult[]>;
}

// ------------------------------------------------------------------ helpers

async function withTarget<T>(start: () => Promise<Target>, fn: (t: Target) => Promise<T>): Promise<T> {
  const t = await start();
  try {
    const r = await fn(t);
    if (t.exited()) throw new Error(`${t.kind} exited during the run:\n${t.tail()}`);
    return r;
  } catch (err) {
    if (t.exited()) throw new Error(`${(err as Error).message}\n${t.kind} exited; its last output:\n${t.tail()}`);
    throw err;
  } finally {
    await t.stop();
  }
}

/** `engine`: the server's --http-engine (omitted: its default, uws). */
function startStreamfeat(o: Opts, engine?: HttpEngine): Promise<Target> {
  return startServer({ shards: o.shards, memoryOnly: o.memoryOnly, walSync: o.walSync, extraArgs: engine === undefined ? [] : ['--http-engine', engine] });
}

/** A server with the workload registered (and keys preloaded when `preload`). */
async function withServer<T>(o: Opts, preload: boolean, ctx: Ctx, fn: (t: Target) => Promise<T>, engine?: HttpEngine): Promise<T> {
  return withTarget(() => startStreamfeat(o, engine), async (t) => {
    await registerWorkload(t, o.workload);
    if (preload) {
      const rate = await preloadKeys(t, o);
      ctx.log(`  preloaded ${bodySpec(o).getEntities} entities (${Math.round(rate)} pushes/s)`);
    }
    return fn(t);
  });
}

function httpGen(o: Opts, notes: string[]): HttpGen {
  if (o.gen !== undefined) {
    if (o.gen === 'wrk' && !wrkAvailable()) throw new Error('--gen wrk: wrk is not installed (apt-get install wrk)');
    return o.gen;
  }
  if (wrkAvailable()) return 'wrk';
  notes.push('wrk is not installed (apt-get install wrk): used autocannon instead');
  return 'autocannon';
}

/** The targets of `all` are defined on the fraud workload with the server's default durability and shards. */
function targetsApply(o: Opts): boolean {
  return o.workload === 'fraud' && o.shards === undefined && !o.memoryOnly && o.walSync === undefined;
}

function settings(o: Opts, extra: Record<string, string | number>): Record<string, string | number> {
  const durability = o.memoryOnly ? 'memory-only' : o.walSync === undefined ? 'default' : `wal-sync=${o.walSync}`;
  return {
    workload: o.workload,
    keys: o.keys,
    entities: o.entities,
    shards: o.shards ?? 'default',
    durability,
    ...extra,
    duration: `${o.durationS}s`,
  };
}

async function cachedBaseline(ctx: Ctx, key: string, measure: () => Promise<Measured>): Promise<Measured> {
  const hit = ctx.baselines.get(key);
  if (hit !== undefined) {
    ctx.log('  baseline reused: the same load already ran against it in this invocation');
    return hit;
  }
  const m = await measure();
  ctx.baselines.set(key, m);
  return m;
}

function baseKey(o: Opts, ...parts: Array<string | number>): string {
  return [o.workload, o.keys, o.entities, o.preload, o.durationS, o.warmupS, o.seed, o.pushShare, o.threads, ...parts].join('/');
}

function uwsBaseline(ctx: Ctx, o: Opts, gen: HttpGen, mix: Mix, conns: number, rate = 0): Promise<Measured> {
  return cachedBaseline(ctx, baseKey(o, 'uws', gen, mix, conns, rate), () =>
    withTarget(startUwsBare, (b) => httpLoad(gen, b, mix, o, conns, rate)));
}

function tcpBaseline(ctx: Ctx, o: Opts, mix: Mix, conns: number, rate = 0): Promise<Measured> {
  return cachedBaseline(ctx, baseKey(o, 'tcp', mix, conns, rate), () =>
    withTarget(startTcpEcho, (b) => tcpLoad(b, mix, o, conns, rate)));
}

function saturationNotes(subject: Measured, baseline: Measured | null, notes: string[], subjectRun = 'streamfeat run'): void {
  for (const [who, m] of [[subjectRun, subject], ['baseline run', baseline]] as const) {
    if (m?.clientCpu && m.clientCpu.pctOfCore >= CLIENT_SATURATED_PCT) {
      const hint = m.generator === 'wrk' ? ' (try --threads 2)' : m.generator === 'autocannon' ? ' (wrk or sf-http cost less per request)' : '';
      notes.push(`${m.generator} used ${m.clientCpu.pctOfCore.toFixed(0)}% of a core in the ${who}: the generator may be the bottleneck${hint}`);
    }
  }
}

function result(
  scenario: string, o: Opts, extraSettings: Record<string, string | number>, subject: Measured,
  baselineName: string | null, baseline: Measured | null, ratioKind: RatioKind, targets: TargetCheck[], notes: string[],
): ScenarioResult {
  saturationNotes(subject, baseline, notes);
  return {
    scenario, settings: settings(o, extraSettings), subjectName: 'streamfeat', subject, baselineName, baseline,
    ratioKind, ratio: ratioOf(ratioKind, subject, baseline), targets, notes,
  };
}

function ratioTarget(name: string, ratio: number | null, min: number): TargetCheck {
  return { name, pass: ratio !== null && ratio >= min, detail: ratio === null ? 'no ratio' : `${ratio.toFixed(2)}x, need >= ${min}x` };
}

function p99Target(name: string, m: Measured, maxUs: number): TargetCheck {
  return { name, pass: m.ok > 0 && m.lat.p99 < maxUs, detail: `p99 ${ms(m.lat.p99)} ms, need < ${ms(maxUs)} ms` };
}

/** The fixed rate every latency target is checked at: half the measured closed-loop max. */
function halfRate(maxRps: number): number {
  return Math.max(1, Math.floor(maxRps / 2));
}

// ------------------------------------------------------------------ scenarios

async function httpScenario(name: string, mix: Mix, o: Opts, ctx: Ctx): Promise<ScenarioResult[]> {
  const notes: string[] = [];
  const gen = httpGen(o, notes);
  const conns = o.connections ?? (mix === 'batch' ? BATCH_CONNECTIONS_DEFAULT : CONNECTIONS_DEFAULT);
  const preload = mix !== 'push';
  ctx.log(`  baseline: uws_bare under ${gen}`);
  const baseline = await uwsBaseline(ctx, o, gen, mix, conns);
  ctx.log(`  streamfeat under ${gen}`);
  // batch_get's p99 target is a latency target: like push p99 it is checked at half the
  // measured max rate (a closed loop at saturation measures queue depth: with 4
  // connections each request waits for the other three). Both runs are reported.
  let atHalf: Measured | null = null;
  const subject = await withServer(o, preload, ctx, async (t) => {
    const closed = await httpLoad(gen, t, mix, o, conns);
    if (mix === 'batch') {
      const rate = o.rate ?? halfRate(closed.rps);
      ctx.log(`  fixed rate ${rate}/s (sf-http)`);
      atHalf = await httpLoad('sf-http', t, mix, o, conns, rate);
    }
    return closed;
  });
  const extra: Record<string, string | number> = { gen, conns };
  if (preload) extra.preload = bodySpec(o).getEntities;
  if (mix === 'mixed') extra.push_share = o.pushShare;
  const targets: TargetCheck[] = [];
  const ratio = ratioOf('throughput', subject, baseline);
  if (targetsApply(o)) {
    const how = `(${o.keys}, ${gen})`;
    if (mix === 'push') targets.push(ratioTarget(`HTTP push fraud ${how} >= 0.75x bare uWS`, ratio, TARGET_HTTP_PUSH_RATIO));
    if (mix === 'get') targets.push(ratioTarget(`/get of a 30-feature row ${how} >= 0.8x bare uWS`, ratio, TARGET_GET_RATIO));
  } else if (mix !== 'mixed') {
    notes.push('targets are defined for --workload fraud with default shards and durability: none checked');
  }
  if (mix === 'get' && o.workload !== 'fraud') notes.push(`rows of ${o.workload} have fewer than 30 features`);
  const out = [result(name, o, extra, subject, 'uws_bare', baseline, 'throughput', targets, notes)];
  const half = atHalf as Measured | null;
  if (half !== null) {
    const rate = half.extra.target_rate;
    const latTargets = targetsApply(o) ? [p99Target(`/batch_get of 100 keys (${o.keys}, sf-http, ${conns} conns) p99 < 5 ms at half the max rate`, half, TARGET_BATCH_P99_US)] : [];
    notes.push(`closed loop at saturation: p99 ${ms(subject.lat.p99)} ms (each request queues behind the other ${conns - 1}); the p99 target is checked in the fixed-rate run below`);
    ctx.log(`  baseline at the same fixed rate: uws_bare`);
    const base = await uwsBaseline(ctx, o, 'sf-http', mix, conns, rate);
    out.push(result(`${name}-latency`, o, { gen: 'sf-http', conns, rate }, half, 'uws_bare', base, 'latency-p99', latTargets, []));
  }
  return out;
}

async function tcpPush(o: Opts, ctx: Ctx): Promise<ScenarioResult[]> {
  const conns = o.connections ?? CONNECTIONS_DEFAULT;
  ctx.log('  baseline: tcp_echo under sf-tcp');
  const baseline = await tcpBaseline(ctx, o, 'push', conns);
  ctx.log('  streamfeat under sf-tcp');
  const subject = await withServer(o, false, ctx, (t) => tcpLoad(t, 'push', o, conns));
  const ratio = ratioOf('throughput', subject, baseline);
  const notes: string[] = [];
  const targets = targetsApply(o) ? [ratioTarget(`TCP push fraud (${o.keys}, sf-tcp) >= 0.75x bare TCP echo`, ratio, TARGET_TCP_PUSH_RATIO)] : [];
  if (!targetsApply(o)) notes.push('targets are defined for --workload fraud with default shards and durability: none checked');
  return [result('tcp-push', o, { gen: 'sf-tcp', conns }, subject, 'tcp_echo', baseline, 'throughput', targets, notes)];
}

/** Max closed-loop push rate, then a fixed-rate run at half of it (or --rate); latency from due time. */
async function pushLatency(o: Opts, ctx: Ctx): Promise<ScenarioResult[]> {
  const conns = o.connections ?? CONNECTIONS_DEFAULT;
  const tcp = o.transport === 'tcp';
  const load = (t: Target, rate: number): Promise<Measured> => (tcp ? tcpLoad(t, 'push', o, conns, rate) : httpLoad('sf-http', t, 'push', o, conns, rate));
  let maxRate = 0;
  const subject = await withServer(o, false, ctx, async (t) => {
    let rate = o.rate ?? 0;
    if (rate === 0) {
      ctx.log(`  measuring the max push rate (closed loop, ${o.transport})`);
      maxRate = (await load(t, 0)).rps;
      rate = halfRate(maxRate);
    }
    ctx.log(`  fixed rate ${rate}/s`);
    return load(t, rate);
  });
  const rate = subject.extra.target_rate;
  ctx.log(`  baseline at the same fixed rate: ${tcp ? 'tcp_echo' : 'uws_bare'}`);
  const baseline = tcp ? await tcpBaseline(ctx, o, 'push', conns, rate) : await uwsBaseline(ctx, o, 'sf-http', 'push', conns, rate);
  if (maxRate > 0) subject.extra.max_rate = Math.round(maxRate);
  const notes: string[] = [];
  if (subject.rps < rate * 0.95) notes.push(`achieved ${Math.round(subject.rps)}/s of the ${rate}/s asked: the server fell behind (queue_peak ${subject.extra.queue_peak})`);
  else if (subject.extra.queue_peak > conns) {
    notes.push(`up to ${subject.extra.queue_peak} due requests waited for a free connection: the server fell behind the rate for a while (latency counts the wait)`);
  }
  const targets: TargetCheck[] = [];
  if (targetsApply(o)) {
    const what = o.rate === undefined ? 'half of the measured max rate' : `${rate}/s (--rate)`;
    targets.push(p99Target(`${o.transport.toUpperCase()} push fraud (${o.keys}, sf-${o.transport}) p99 < 2 ms at ${what}`, subject, TARGET_PUSH_P99_US));
  } else {
    notes.push('targets are defined for --workload fraud with default shards and durability: none checked');
  }
  return [result('push-latency', o, { gen: `sf-${o.transport}`, conns, rate }, subject, tcp ? 'tcp_echo' : 'uws_bare', baseline, 'latency-p99', targets, notes)];
}

async function freshnessScenario(o: Opts, ctx: Ctx): Promise<ScenarioResult[]> {
  ctx.log(`  baseline: probes against ${o.transport === 'tcp' ? 'tcp_echo' : 'uws_bare'} (any reply counts as fresh: one bare round trip)`);
  const baseline = await cachedBaseline(ctx, baseKey(o, 'fresh', o.transport, o.probes, o.bgRate), () =>
    withTarget(startTcpEcho, (echo) => (o.transport === 'tcp'
      ? freshnessLoad(echo, echo, o)
      : withTarget(startUwsBare, (uws) => freshnessLoad(uws, echo, o)))));
  ctx.log('  streamfeat');
  const subject = await withServer(o, false, ctx, (t) => freshnessLoad(t, t, o));
  const notes = ['latency columns are freshness: ack of a push -> reply of the first get that shows it (includes one get round trip)'];
  if (subject.extra.never_fresh > 0) notes.push(`${subject.extra.never_fresh} pushes were not visible within 5 s`);
  return [result('freshness', o, { gen: `sf-${o.transport}`, probes: o.probes, bg_rate: o.bgRate }, subject,
    o.transport === 'tcp' ? 'tcp_echo' : 'uws_bare', baseline, 'latency-p50', [], notes)];
}

/** What `ceiling` shows, on its first block (bench/CURRENT.md reads streamfeat's rows against it). */
const CEILING_NOTE = "uws_hop = uws_bare + streamfeat's hand-off: each turn's requests go as one batch to ONE worker thread "
  + `(<= ${SHARD_BATCHES_IN_FLIGHT_MAX} batches in flight), which parses each body and busy-spins work_us per request; answers are corked. `
  + "Its ratio is the most this architecture keeps of uws_bare on this machine at that per-request cost: "
  + "read streamfeat's http-push ratio against it, not against 1.0";

const TCP_CEILING_NOTE = "tcp_hop = tcp_echo + streamfeat's hand-off: each turn's frames go as one batch to ONE worker thread "
  + `(<= ${SHARD_BATCHES_IN_FLIGHT_MAX} batches in flight), which parses each payload and busy-spins work_us per frame; each answer frame `
  + "is written to its socket when the batch returns. Its ratio is the most this architecture keeps of tcp_echo on this machine at that "
  + "per-frame cost: read streamfeat's tcp-push ratio against it, not against 1.0";

/**
 * The architecture's ceiling on this machine: the bare baseline (uws_bare, or
 * tcp_echo with --transport tcp), then the same server plus streamfeat's hop to
 * one worker thread (uws_hop / tcp_hop) at each --work-us, same generator and
 * bodies as http-push / tcp-push. On 2 cores shared with the load generator,
 * the hop to a worker thread bounds the ratio before any of streamfeat's code
 * runs; this makes that bound a measured number.
 */
async function ceiling(o: Opts, ctx: Ctx): Promise<ScenarioResult[]> {
  const tcp = o.transport === 'tcp';
  const notes: string[] = [];
  const gen = tcp ? 'sf-tcp' : httpGen(o, notes);
  const conns = o.connections ?? CONNECTIONS_DEFAULT;
  const bare = tcp ? 'tcp_echo' : 'uws_bare';
  const hop = tcp ? 'tcp_hop' : 'uws_hop';
  ctx.log(`  baseline: ${bare} under ${gen}`);
  const baseline = tcp ? await tcpBaseline(ctx, o, 'push', conns) : await uwsBaseline(ctx, o, gen as HttpGen, 'push', conns);
  const load = (t: Target, rate = 0): Promise<Measured> => (tcp ? tcpLoad(t, 'push', o, conns, rate) : httpLoad(rate === 0 ? gen as HttpGen : 'sf-http', t, 'push', o, conns, rate));
  const out: ScenarioResult[] = [];
  for (const us of o.workUs) {
    ctx.log(`  ${hop} --work-us ${us} under ${gen}`);
    // Also the push-latency measurement (sf-http / sf-tcp at half the closed-loop max):
    // the p99 this architecture can reach here at that per-request cost.
    let half: Measured | null = null;
    const m = await withTarget(() => (tcp ? startTcpHop(us) : startUwsHop(us)), async (t) => {
      const closed = await load(t);
      half = await load(t, halfRate(closed.rps));
      return closed;
    });
    const n = out.length === 0 ? [...notes, tcp ? TCP_CEILING_NOTE : CEILING_NOTE] : [...notes];
    saturationNotes(m, baseline, n, `${hop} run`);
    const h = half as Measured | null;
    if (h !== null) {
      n.push(`at half its max (${h.extra.target_rate}/s, sf-${tcp ? 'tcp' : 'http'}, ${conns} conns): p50 ${ms(h.lat.p50)} ms, p99 ${ms(h.lat.p99)} ms`);
      // The p99 rows of the target table are read against these (bench/current_table.ts).
      m.extra.half_rate = h.extra.target_rate;
      m.extra.half_rate_p99_us = h.lat.p99;
    }
    out.push({
      scenario: 'ceiling', settings: settings(o, { gen, conns, work_us: us }), subjectName: `${hop} ${us}us`, subject: m,
      baselineName: bare, baseline, ratioKind: 'throughput', ratio: ratioOf('throughput', m, baseline), targets: [], notes: n,
    });
  }
  if (out.length > 1) {
    const last = out[out.length - 1];
    const series = out.map((r) => `${r.settings.work_us}us ${r.ratio === null ? 'n/a' : `${r.ratio.toFixed(2)}x`}`).join(', ');
    last.notes.push(`series: ${bare} ${Math.round(baseline.rps)} req/s; ${hop} / ${bare} by work_us: ${series}`);
  }
  return out;
}

/** http-engines: autocannon's pipelining depths (its README's example uses -p 10). */
const ENGINE_PIPELINING = [1, 10];
/** http-engines: connections (the report that asked for the net engine ran autocannon -c 32). */
const ENGINE_CONNECTIONS_DEFAULT = 32;
const ENGINES: readonly HttpEngine[] = ['uws', 'net'];

/** Failed requests: non-2xx and request errors seen by our response hook, or autocannon's own error count (connection errors, timeouts). */
function loadErrors(m: Measured): number {
  return Math.max(m.errors, m.extra.autocannon_errors ?? 0);
}

/** Requests sent but never answered beyond those in flight when the run stopped: lost on connections the server closed. */
function lostRequests(m: Measured, conns: number, pipelining: number): number {
  return Math.max(0, (m.extra.unanswered ?? 0) - conns * pipelining);
}

/**
 * Both HTTP engines under autocannon at -p 1 and -p 10 (HTTP /push), each next to
 * uws_bare at the same depth, all in one invocation. uWS closes a connection on
 * a pipelined request behind an unanswered one, so `uws` at -p 10 shows that wall;
 * the target is that `net` at -p 10 has 0 errors and at least its -p 1 throughput.
 */
async function httpEngines(o: Opts, ctx: Ctx): Promise<ScenarioResult[]> {
  const conns = o.connections ?? ENGINE_CONNECTIONS_DEFAULT;
  const out: ScenarioResult[] = [];
  const netAt = new Map<number, Measured>();
  for (const p of ENGINE_PIPELINING) {
    ctx.log(`  baseline: uws_bare under autocannon -p ${p}`);
    const base = await cachedBaseline(ctx, baseKey(o, 'uws', 'autocannon', 'push', conns, 0, `p${p}`), () =>
      withTarget(startUwsBare, (b) => httpLoad('autocannon', b, 'push', o, conns, 0, p)));
    for (const engine of ENGINES) {
      ctx.log(`  streamfeat --http-engine ${engine} under autocannon -p ${p}`);
      const m = await withServer(o, false, ctx, (t) => httpLoad('autocannon', t, 'push', o, conns, 0, p), engine);
      const notes: string[] = [];
      const targets: TargetCheck[] = [];
      const errors = loadErrors(m);
      const lost = lostRequests(m, conns, p);
      if (errors > 0) notes.push(`${errors} failed requests (non-2xx, connection errors, timeouts)`);
      if (lost > 0) notes.push(`${lost} requests sent were never answered: lost on connections the server closed (autocannon reconnects without counting an error)`);
      if (engine === 'uws' && p > 1) notes.push('uWS closes a connection when a pipelined request arrives while an earlier answer is pending (uWebSockets.js#277); use --http-engine net');
      if (engine === 'net') netAt.set(p, m);
      const p1 = netAt.get(1);
      if (engine === 'net' && p > 1 && p1 !== undefined) {
        targets.push({
          name: `--http-engine net: autocannon -p ${p} completes with 0 errors at >= its -p 1 throughput`,
          pass: errors === 0 && lost === 0 && m.rps >= p1.rps,
          detail: `${errors} errors, ${lost} lost, ${Math.round(m.rps)} req/s vs ${Math.round(p1.rps)} req/s at -p 1`,
        });
      }
      const r = result('http-engines', o, { gen: 'autocannon', conns, pipelining: p, engine }, m, 'uws_bare', base, 'throughput', targets, notes);
      r.subjectName = `streamfeat ${engine}`;
      if (engine === 'uws' && p > 1) r.errorsExpected = true;
      out.push(r);
    }
  }
  return out;
}

/** The bare servers alone: each generator's ceiling on this machine, for reading the ratios. */
async function baselines(o: Opts, ctx: Ctx): Promise<ScenarioResult[]> {
  const out: ScenarioResult[] = [];
  const conns = o.connections ?? CONNECTIONS_DEFAULT;
  const gens: HttpGen[] = [];
  const notes: string[] = [];
  if (o.gen !== undefined) gens.push(httpGen(o, notes));
  else {
    if (wrkAvailable()) gens.push('wrk');
    else notes.push('wrk is not installed (apt-get install wrk): skipped');
    gens.push('autocannon', 'sf-http');
  }
  const one = (name: string, extra: Record<string, string | number>, m: Measured): ScenarioResult => {
    const n = [...notes];
    saturationNotes(m, null, n, 'run');
    return { scenario: 'baselines', settings: settings(o, extra), subjectName: name, subject: m, baselineName: null, baseline: null,
      ratioKind: 'throughput', ratio: null, targets: [], notes: n };
  };
  for (const gen of gens) {
    ctx.log(`  uws_bare under ${gen}`);
    out.push(one('uws_bare', { gen, conns, mix: 'push' }, await uwsBaseline(ctx, o, gen, 'push', conns)));
  }
  ctx.log('  tcp_echo under sf-tcp');
  out.push(one('tcp_echo', { gen: 'sf-tcp', conns, mix: 'push' }, await tcpBaseline(ctx, o, 'push', conns)));
  return out;
}

export const SCENARIOS: readonly Scenario[] = [
  { name: 'baselines', summary: 'the bare baselines alone (uws_bare under each HTTP generator, tcp_echo under sf-tcp)', run: baselines },
  { name: 'http-push', summary: 'HTTP /push, closed loop (wrk; --gen autocannon|sf-http) vs uws_bare', run: (o, c) => httpScenario('http-push', 'push', o, c) },
  { name: 'tcp-push', summary: 'framed TCP push, closed loop, our client (fork) vs tcp_echo', run: tcpPush },
  { name: 'get', summary: '/get of preloaded rows (fraud: the 30-feature user row) vs uws_bare', run: (o, c) => httpScenario('get', 'get', o, c) },
  { name: 'batch-get', summary: '/batch_get of 100 preloaded keys, 4 conns, closed loop + fixed rate at half max (p99 target)', run: (o, c) => httpScenario('batch-get', 'batch', o, c) },
  { name: 'mixed', summary: '90% /push + 10% /get (--push-share) on preloaded rows vs uws_bare', run: (o, c) => httpScenario('mixed', 'mixed', o, c) },
  { name: 'push-latency', summary: 'push p99 at a fixed rate (half the measured max, or --rate), wrk2-style; --transport http|tcp', run: pushLatency },
  { name: 'freshness', summary: 'push ack -> first /get that shows it (p50/p99/max), under background pushes', run: freshnessScenario },
  { name: 'http-engines', summary: 'HTTP /push under autocannon -p 1 and -p 10: --http-engine uws and net, each vs uws_bare at the same depth', run: httpEngines },
  { name: 'soak', summary: '1000 conns (HTTP+TCP) push/get/batch_get at --rate for --duration (60 s), 5% bad inputs: errors only on bad ones, RSS flat, p99', run: async (o, c) => [await runSoak(soakOptions(o), c.log)] },
  { name: 'ceiling', summary: 'uws_hop (uws_bare + a hop to one worker thread, --work-us per request) vs uws_bare, or with --transport tcp tcp_hop vs tcp_echo: the architecture\'s ceiling here', run: ceiling },
];

export function scenarioNamed(name: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.name === name);
}

/** What `all` and `smoke` run: [scenario, option overrides]. */
export const PLAN: ReadonlyArray<[string, Partial<Opts>]> = [
  ['baselines', {}],
  ['http-push', { workload: 'small' }],
  ['http-push', { workload: 'medium' }],
  ['http-push', { workload: 'fraud' }],
  ['http-push', { workload: 'fraud', keys: 'uniform' }],
  ['http-push', { workload: 'fraud', gen: 'autocannon' }],
  ['tcp-push', { workload: 'fraud' }],
  ['get', { workload: 'fraud' }],
  ['batch-get', { workload: 'fraud' }],
  ['mixed', { workload: 'fraud' }],
  ['push-latency', { workload: 'fraud', transport: 'http' }],
  ['push-latency', { workload: 'fraud', transport: 'tcp' }],
  ['freshness', { workload: 'fraud' }],
  // Two short runs (uws_bare is reused from `baselines`); `ceiling` alone runs the full --work-us list.
  ['ceiling', { workload: 'fraud', workUs: [0, 15] }],
];
