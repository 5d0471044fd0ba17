/**
 * The `soak` scenario: `--connections` (default 1,000) client
 * connections, half HTTP and half framed TCP, each pushing and reading in a
 * paced closed loop (one request in flight; together about `--rate` requests/s)
 * for `--duration` seconds (default 60), with `--bad-share` (default 5%) bad
 * inputs mixed in: invalid JSON, an unknown event, a wrong type, an unknown
 * field, an unknown table, a bad key shape, a bad batch shape; over TCP also an
 * unknown opcode and the reserved MessagePack content type. Every bad input must
 * get a coded error of src/errors.ts and every good one a success: any error on
 * a good input, any bad input accepted, any dropped connection is a failure.
 * The key space (20,000 entities) is prefilled before the clock starts, so that
 * the measured run adds no entity, and the load runs `--warmup` seconds (default
 * 120, SOAK_WARMUP_DEFAULT_S) before the measured window: RSS growth while V8
 * heaps size up and the first snapshots run is not a leak. Errors count over the
 * whole run; latency, rates and RSS over the measured window. RSS is sampled every second
 * (start, middle, peak, end, RSS at each quarter, and the slope of a
 * least-squares fit over the second half and over each quarter: flat means no
 * leak; judged over windows of RSS_SLOPE_WINDOW_MIN_S or more), with each thread's V8 heap (used / reserved / external, from the admin
 * sidecar's /api/stats) every 10 s, so growth can be placed in a thread or
 * outside the V8 heaps; p99 latency of good requests per kind. Profiling hooks:
 * BENCH_SERVER_NODE_ARGS, BENCH_SERVER_OUT (bench/procs.ts).
 *
 * Needs about 2 × connections + 100 file descriptors in this process and in the
 * server (the server inherits our limit): checked up front; raise it with
 * `ulimit -n 4096` in the shell that runs the bench.
 */
import { readFileSync } from 'node:fs';
import { ERRORS } from '../src/errors';
import { CT_MSGPACK, encodeFrame, OP_PUSH } from '../src/protocol/frame';
import { prng } from '../test/harness/prng';
import { DEFAULTS, type Opts } from './args';
import { Histogram } from './hist';
import { connect, ReqKind, KIND_NAMES, type Conn } from './load/conns';
import { pipelinedPushes } from './load/preload';
import { startServer } from './procs';
import { cpuBetween, cpuTimes, peakRssBytes } from './procstat';
import type { Measured, ScenarioResult, TargetCheck } from './report';

export const SOAK_CONNECTIONS_DEFAULT = 1_000;
export const SOAK_DURATION_DEFAULT_S = 60;
/**
 * Load before the measured window: RSS is judged only after it. In the first minutes
 * RSS grows without any leak: the front thread's V8 heap sizes up to the allocation rate
 * (reserved 20 -> ~50 MiB), the shard's too, and each periodic snapshot (every 60 s)
 * leaves its buffers' high-water mark until ~300 s (bench/journal/2026-11-23-hardening-and-soak.md). 120 s
 * covers the heap sizing and the first snapshots.
 */
export const SOAK_WARMUP_DEFAULT_S = 120;
/** Requests per second of all connections together (paced, so that 2 shared cores keep up and latency means something). */
export const SOAK_RATE_DEFAULT = 4_000;
export const SOAK_BAD_SHARE_DEFAULT = 0.05;
/** RSS slope over the second half above which the run is not "flat". */
const RSS_SLOPE_MAX_MB_PER_MIN = 5;
/**
 * A slope is judged only over a measured window at least this long. Each periodic
 * snapshot (every 60 s) moves RSS by a step of up to ~12 MiB (its buffers' high-water;
 * freed memory that the allocator keeps), so over a 30-s second half one step reads as
 * 20+ MB/min although RSS is bounded (bench/journal/2026-11-23-hardening-and-soak.md).
 */
const RSS_SLOPE_WINDOW_MIN_S = 300;
/** Shorter windows: the measured window's peak may exceed its start by at most one snapshot step. */
const RSS_STEP_ALLOWANCE_MIB = 16;
const ENTITIES = 20_000;
const PREFILL_CONNECTIONS = 4;
const TICK_MS = 5;
const RSS_SAMPLE_MS = 1_000;
/** Descriptors we need beyond one per connection (node, pipes, the server's own files). */
const FD_SLACK = 200;

const NODES = [
  { kind: 'event', name: 'SoakEvt', schema: { fields: { user: 'str', amount: 'f64', merchant: 'str' }, optional_fields: ['merchant'] } },
  {
    kind: 'table', name: 'SoakT', upstreams: ['SoakEvt'], key: ['user'],
    agg: {
      // Lifetime state only: a windowed op's per-entity state grows until its window is full
      // (an hour), which would read as a leak here; lifetime state is constant once every
      // entity has been seen, so any RSS growth after that is the server's own.
      cnt: { op: 'count', params: { window: 'forever' } },
      total: { op: 'sum', params: { field: 'amount', window: 'forever' } },
      mx: { op: 'max', params: { field: 'amount', window: 'forever' } },
      last_m: { op: 'last', params: { field: 'merchant', window: 'forever' } },
    },
  },
];

/** Bad inputs that keep the connection open; each must get a coded 4xx / error frame. */
const BAD_BODIES: Array<{ kind: ReqKind; body: string; name: string }> = [
  { kind: ReqKind.Push, body: '{"event":"SoakEvt","data":{"user":"u1","amount":', name: 'invalid_json' },
  { kind: ReqKind.Push, body: '{"event":"NoSuchEvt","data":{"user":"u1","amount":1}}', name: 'unknown_event' },
  { kind: ReqKind.Push, body: '{"event":"SoakEvt","data":{"user":"u1","amount":"many"}}', name: 'wrong_type' },
  { kind: ReqKind.Push, body: '{"event":"SoakEvt","data":{"user":"u1","amount":1,"junk":true}}', name: 'unknown_field' },
  { kind: ReqKind.Push, body: '{"event":"SoakEvt","data":{"amount":1}}', name: 'missing_field' },
  { kind: ReqKind.Get, body: '{"table":"NoSuchT","key":"u1"}', name: 'unknown_table' },
  { kind: ReqKind.Get, body: '{"table":"SoakT","key":{"__proto__":1}}', name: 'key_shape' },
  { kind: ReqKind.Batch, body: '{"requests":{}}', name: 'batch_shape' },
];
const BAD_TCP_ONLY = ['unknown_op', 'msgpack'];

export interface SoakOptions {
  connections: number;
  durationS: number;
  warmupS: number;
  rate: number;
  badShare: number;
  shards?: number;
  memoryOnly: boolean;
  seed: number;
}

export function soakOptions(o: Opts): SoakOptions {
  return {
    connections: o.connections ?? SOAK_CONNECTIONS_DEFAULT,
    // The bench-wide default duration (10 s) is too short for a soak: unset means 60 s.
    durationS: o.durationS === DEFAULTS.durationS ? SOAK_DURATION_DEFAULT_S : o.durationS,
    warmupS: o.warmupS === DEFAULTS.warmupS ? SOAK_WARMUP_DEFAULT_S : o.warmupS,
    rate: o.rate ?? SOAK_RATE_DEFAULT,
    badShare: o.badShare ?? SOAK_BAD_SHARE_DEFAULT,
    shards: o.shards,
    memoryOnly: o.memoryOnly,
    seed: o.seed,
  };
}

function fdLimit(): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return m === null || m[1] === 'unlimited' ? Infinity : Number(m[1]);
}

function rssBytes(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** V8 heap per thread (front, coordinator, shard-N): used, reserved (total) and external (Buffers), and the stored entities, from the admin sidecar. */
interface ThreadHeaps {
  heap: Record<string, { used: number; total: number; external: number }>;
  entities: number;
}

async function threadHeaps(adminPort: number): Promise<ThreadHeaps | null> {
  try {
    const r = await fetch(`http://127.0.0.1:${adminPort}/api/stats`);
    const j = await r.json() as { threads: Array<{ thread: string; heap_used_bytes: number; heap_total_bytes: number; external_bytes: number }>; entities: number };
    return { heap: Object.fromEntries(j.threads.map((x) => [x.thread, { used: x.heap_used_bytes, total: x.heap_total_bytes, external: x.external_bytes }])), entities: j.entities };
  } catch {
    return null;
  }
}

/** `thread used/total+external` in MiB per thread. */
function formatHeaps(h: ThreadHeaps): string {
  const m = (b: number): string => (b / 1048576).toFixed(1);
  return Object.entries(h.heap).map(([k, v]) => `${k} ${m(v.used)}/${m(v.total)}+${m(v.external)}`).join(', ');
}

/** The sample taken nearest to `at` seconds. */
function nearest<T>(xs: Array<[number, T]>, at: number): T | null {
  let best: [number, T] | null = null;
  for (const x of xs) if (best === null || Math.abs(x[0] - at) < Math.abs(best[0] - at)) best = x;
  return best === null ? null : best[1];
}

/** Least-squares slope of (t seconds, bytes) in MB per minute. */
function slopeMbPerMin(xs: Array<[number, number]>): number {
  const n = xs.length;
  if (n < 2) return 0;
  let sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const [x, y] of xs) { sx += x; sy += y; sxx += x * x; sxy += x * y; }
  const d = n * sxx - sx * sx;
  return d === 0 ? 0 : ((n * sxy - sx * sy) / d) * 60 / 1e6;
}

interface ConnState {
  conn: Conn;
  http: boolean;
  nextAt: number;
  /** Kind of bad input in flight, or null for a good one. */
  bad: string | null;
}

export async function runSoak(s: SoakOptions, log: (line: string) => void): Promise<ScenarioResult> {
  const need = 2 * s.connections + FD_SLACK;
  const limit = fdLimit();
  if (limit < need) throw new Error(`soak: ${s.connections} connections need about ${need} file descriptors here and in the server; the limit is ${limit}. Run \`ulimit -n ${Math.max(4096, need)}\` first.`);
  const t = await startServer({ shards: s.shards, memoryOnly: s.memoryOnly, admin: true });
  try {
    const reg = await fetch(`http://127.0.0.1:${t.httpPort}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ nodes: NODES }) });
    if (reg.status !== 200) throw new Error(`soak: register failed: ${await reg.text()}`);
    // Every key of the key space gets its entity before the clock starts: drawn at random,
    // the last of 20,000 keys is first pushed only after ~200,000 pushes (~70 s at the default
    // rate), and a run that is still adding entities reads as a leak.
    const pf0 = performance.now();
    const pf = await pipelinedPushes(t.tcpPort!, ENTITIES, PREFILL_CONNECTIONS, (i) => JSON.stringify({ event: 'SoakEvt', data: { user: `u${i}`, amount: 1, merchant: `m${i % 500}` } }));
    if (pf.errors > 0) throw new Error(`soak: prefill got ${pf.errors} errors, first: ${pf.firstError}`);
    log(`  soak: prefilled ${ENTITIES} keys in ${((performance.now() - pf0) / 1000).toFixed(1)} s`);
    const r = prng(s.seed);
    const states: ConnState[] = [];
    const hist = new Histogram();
    const kindHist = KIND_NAMES.map(() => new Histogram());
    const kindOk = KIND_NAMES.map(() => 0);
    /** Start of the measured window (after the warm-up): latency and rates count from here, RSS is judged from here. */
    let t0 = Infinity;
    const c = { good: 0, goodOk: 0, goodErr: 0, bad: 0, badCoded: 0, badAccepted: 0, badUncoded: 0, drops: 0, reconnects: 0 };
    const badByName: Record<string, number> = {};
    let firstError: string | null = null;
    const note = (e: string): void => { if (firstError === null) firstError = e; };
    const interval = (s.connections / s.rate) * 1000;

    const onReply = (conn: Conn, ok: boolean, payload: Buffer | null): void => {
      const st = states[conn.id];
      const now = performance.now();
      if (st.bad === null) {
        if (ok) {
          c.goodOk++;
          if (conn.sentAt >= t0) {
            const us = (now - conn.sentAt) * 1000;
            hist.record(us);
            kindHist[conn.kind].record(us);
            kindOk[conn.kind]++;
          }
        } else {
          c.goodErr++;
          note(`good ${KIND_NAMES[conn.kind]} on ${st.http ? 'http' : 'tcp'} got an error: ${payload?.subarray(0, 300).toString()}`);
        }
      } else if (ok) {
        c.badAccepted++;
        note(`bad input ${st.bad} was accepted: ${payload?.subarray(0, 300).toString()}`);
      } else {
        let code: unknown;
        try { code = JSON.parse(payload!.toString('utf8'))?.error?.code; } catch { code = undefined; }
        if (typeof code === 'string' && Object.prototype.hasOwnProperty.call(ERRORS, code)) c.badCoded++;
        else { c.badUncoded++; note(`bad input ${st.bad} got an answer without a known code: ${payload?.subarray(0, 300).toString()}`); }
      }
      st.nextAt = Math.max(now, conn.sentAt + interval);
    };
    const onClose = (conn: Conn, why: string): void => {
      if (stopping) return;
      c.drops++;
      note(`connection ${conn.id} (${states[conn.id].http ? 'http' : 'tcp'}) dropped: ${why}`);
      const st = states[conn.id];
      void connect(st.http ? 'http' : 'tcp', st.http ? t.httpPort! : t.tcpPort!, conn.id, onReply, onClose).then((nc) => {
        st.conn = nc;
        st.nextAt = performance.now();
        c.reconnects++;
      }, () => {});
    };
    let stopping = false;
    for (let i = 0; i < s.connections; i++) {
      const http = i % 2 === 0;
      const conn = await connect(http ? 'http' : 'tcp', http ? t.httpPort! : t.tcpPort!, i, onReply, onClose);
      // Spread the first requests over one interval, so that the connections do not fire in lockstep.
      states.push({ conn, http, nextAt: performance.now() + r() * interval, bad: null });
    }
    log(`  soak: ${s.connections} connections open (${s.connections / 2} HTTP, ${s.connections / 2} TCP), ${s.rate} req/s target, ${(s.badShare * 100).toFixed(1)}% bad, ${s.warmupS} s warm-up + ${s.durationS} s measured`);

    const send = (st: ConnState): void => {
      const conn = st.conn;
      conn.sentAt = performance.now();
      if (r() < s.badShare) {
        c.bad++;
        const tcpOnly = !st.http && r() < 0.25;
        if (tcpOnly) {
          const which = BAD_TCP_ONLY[Math.floor(r() * BAD_TCP_ONLY.length)];
          st.bad = which;
          badByName[which] = (badByName[which] ?? 0) + 1;
          conn.kind = ReqKind.Push;
          conn.busy = true;
          const body = JSON.stringify({ event: 'SoakEvt', data: { user: 'u1', amount: 1 } });
          conn.socket.write(which === 'unknown_op' ? encodeFrame(0x7777, body) : encodeFrame(OP_PUSH, body, CT_MSGPACK));
          return;
        }
        const b = BAD_BODIES[Math.floor(r() * BAD_BODIES.length)];
        st.bad = b.name;
        badByName[b.name] = (badByName[b.name] ?? 0) + 1;
        conn.send(b.kind, b.body);
        return;
      }
      c.good++;
      st.bad = null;
      const user = `u${Math.floor(r() * ENTITIES)}`;
      const x = r();
      if (x < 0.75) {
        const data: Record<string, unknown> = { user, amount: Math.round(r() * 10_000) / 100 };
        if (r() < 0.5) data.merchant = `m${Math.floor(r() * 500)}`;
        conn.send(ReqKind.Push, JSON.stringify({ event: 'SoakEvt', data }));
      } else if (x < 0.95) {
        conn.send(ReqKind.Get, JSON.stringify({ table: 'SoakT', key: user }));
      } else {
        const requests = Array.from({ length: 10 }, () => ({ table: 'SoakT', key: `u${Math.floor(r() * ENTITIES)}` }));
        conn.send(ReqKind.Batch, JSON.stringify({ requests }));
      }
    };

    // Samples are [seconds since the measured window began (negative in the warm-up), value].
    const rss: Array<[number, number]> = [];
    t0 = performance.now() + s.warmupS * 1000;
    let cpu0 = s.warmupS === 0 ? cpuTimes(t.pid) : null;
    const sampleRss = (): void => {
      const b = rssBytes(t.pid);
      if (b !== null) rss.push([(performance.now() - t0) / 1000, b]);
    };
    sampleRss();
    const threads: Array<[number, ThreadHeaps]> = [];
    const sampleThreads = async (): Promise<ThreadHeaps | null> => {
      const at = (performance.now() - t0) / 1000;
      const h = await threadHeaps(t.adminPort!);
      if (h !== null) threads.push([at, h]);
      return h;
    };
    await sampleThreads();
    let ticks = 0;
    const rssTimer = setInterval(() => {
      sampleRss();
      const last = rss[rss.length - 1];
      if (++ticks % 10 === 0 && last !== undefined) {
        void sampleThreads().then((h) => {
          log(`  ${last[0] < 0 ? `warm-up, ${(-last[0]).toFixed(0)} s left` : `${last[0].toFixed(0)} s`}: rss ${(last[1] / 1048576).toFixed(0)} MiB, V8 heap used/total+external MiB ${h === null ? '?' : formatHeaps(h)}, entities ${h?.entities ?? '?'}, good ok ${c.goodOk}, good errors ${c.goodErr}, bad ${c.bad}, drops ${c.drops}`);
        });
      }
    }, RSS_SAMPLE_MS);
    const end = t0 + s.durationS * 1000;
    await new Promise<void>((resolve) => {
      const tick = setInterval(() => {
        const now = performance.now();
        if (now >= end || t.exited()) { clearInterval(tick); resolve(); return; }
        if (cpu0 === null && now >= t0) cpu0 = cpuTimes(t.pid);
        for (const st of states) {
          if (!st.conn.busy && !st.conn.dead && st.nextAt <= now) send(st);
        }
      }, TICK_MS);
    });
    clearInterval(rssTimer);
    sampleRss();
    await sampleThreads();
    // Let the requests in flight finish (their answers still count), then close.
    const drainUntil = performance.now() + 10_000;
    while (states.some((st) => st.conn.busy && !st.conn.dead) && performance.now() < drainUntil) await new Promise((res) => setTimeout(res, 20));
    const stuck = states.filter((st) => st.conn.busy && !st.conn.dead).length;
    const elapsedS = (performance.now() - t0) / 1000;
    const cpu1 = cpuTimes(t.pid);
    cpu0 ??= cpu1;
    stopping = true;
    for (const st of states) st.conn.close();
    const alive = !t.exited();

    const dur = s.durationS;
    const measured = rss.filter(([x]) => x >= 0);
    const second = measured.filter(([x]) => x >= dur / 2);
    const mb = (b: number): number => Math.round((b / 1048576) * 10) / 10;
    const rssBeforeLoad = rss[0]?.[1] ?? 0;
    const rssStart = nearest(rss, 0) ?? 0;
    const rssPeak = Math.max(...measured.map(([, b]) => b));
    const rssEnd = rss[rss.length - 1]?.[1] ?? 0;
    const rssMid = nearest(rss, dur / 2) ?? 0;
    const heapBeforeLoad = threads[0]?.[1] ?? null;
    const heapStart = nearest(threads, 0);
    const heapMid = nearest(threads, dur / 2);
    const heapEnd = threads[threads.length - 1]?.[1] ?? null;
    const slope = slopeMbPerMin(second);
    // RSS at each quarter of the run and the slope within each: growth that is warm-up
    // (V8 heaps sizing up, the first snapshots' buffers) flattens quarter by quarter; a leak does not.
    const quarters = [0, 1, 2, 3].map((q) => slopeMbPerMin(rss.filter(([x]) => x >= (q * dur) / 4 && x <= ((q + 1) * dur) / 4)));
    const rssAtQuarter = [0, 1, 2, 3, 4].map((q) => mb(nearest(rss, (q * dur) / 4) ?? 0));
    const lat = hist.summary();
    const kinds: Measured['kinds'] = {};
    KIND_NAMES.forEach((k, i) => { kinds[k] = { rps: kindOk[i] / dur, lat: kindHist[i].summary() }; });
    const failures = c.goodErr + c.badAccepted + c.badUncoded + c.drops + stuck;
    const subject: Measured = {
      generator: 'sf-soak',
      requests: c.good + c.bad,
      ok: c.goodOk,
      errors: failures,
      firstError,
      elapsedS,
      rps: kindOk.reduce((a, b) => a + b, 0) / dur,
      lat,
      kinds,
      clientCpu: null,
      serverCpu: cpuBetween(cpu0, cpu1, elapsedS),
      serverPeakRssBytes: peakRssBytes(t.pid),
      extra: {
        good_sent: c.good, good_errors: c.goodErr, bad_sent: c.bad, bad_coded: c.badCoded, bad_accepted: c.badAccepted, bad_uncoded: c.badUncoded,
        conn_drops: c.drops, stuck_requests: stuck, rss_before_load_mib: mb(rssBeforeLoad), rss_start_mib: mb(rssStart), rss_mid_mib: mb(rssMid), rss_peak_mib: mb(rssPeak), rss_end_mib: mb(rssEnd),
        rss_slope_mb_per_min_2nd_half: Math.round(slope * 100) / 100, rss_slope_mb_per_min_last_quarter: Math.round(quarters[3] * 100) / 100,
      },
    };
    const rssLine = `measured window: start ${mb(rssStart)} MiB, middle ${mb(rssMid)} MiB, peak ${mb(rssPeak)} MiB, end ${mb(rssEnd)} MiB`;
    const targets: TargetCheck[] = [
      { name: 'server alive', pass: alive, detail: alive ? 'running at the end' : `exited:\n${t.tail()}` },
      { name: 'no error on a good input', pass: c.goodErr === 0, detail: `${c.goodErr} of ${c.good}` },
      { name: 'every bad input coded', pass: c.badAccepted === 0 && c.badUncoded === 0 && c.badCoded > 0, detail: `${c.badCoded} coded, ${c.badAccepted} accepted, ${c.badUncoded} uncoded of ${c.bad}` },
      { name: 'no dropped connection or stuck request', pass: c.drops === 0 && stuck === 0, detail: `${c.drops} drops, ${stuck} stuck` },
      dur >= RSS_SLOPE_WINDOW_MIN_S
        ? { name: 'RSS flat', pass: slope <= RSS_SLOPE_MAX_MB_PER_MIN, detail: `${rssLine}; second-half slope ${slope.toFixed(2)} MB/min (max ${RSS_SLOPE_MAX_MB_PER_MIN})` }
        : {
          name: 'RSS bounded', pass: rssPeak - rssStart <= RSS_STEP_ALLOWANCE_MIB * 1048576,
          detail: `${rssLine}; peak - start ${mb(rssPeak - rssStart)} MiB (max ${RSS_STEP_ALLOWANCE_MIB}: one snapshot step); second-half slope ${slope.toFixed(2)} MB/min, judged only over a window >= ${RSS_SLOPE_WINDOW_MIN_S} s (--duration)`,
        },
    ];
    return {
      scenario: 'soak',
      settings: {
        conns: s.connections, mix: 'http/tcp 50/50, push 75% get 20% batch_get(10) 5%', rate: s.rate, bad: `${(s.badShare * 100).toFixed(1)}%`,
        shards: s.shards ?? 'default', durability: s.memoryOnly ? 'memory-only' : 'default', fd_limit: limit, warmup: `${s.warmupS}s`, duration: `${s.durationS}s`,
      },
      subjectName: 'streamfeat',
      subject,
      baselineName: null,
      baseline: null,
      ratioKind: 'throughput',
      ratio: null,
      targets,
      notes: [
        `before the load ${mb(rssBeforeLoad)} MiB RSS, V8 heaps ${heapBeforeLoad === null ? '?' : formatHeaps(heapBeforeLoad)}; warm-up ${s.warmupS} s (not judged; latency and rates from the measured window only)`,
        `RSS (MiB) at 0/25/50/75/100% of the measured window: ${rssAtQuarter.join(' / ')}; slope per quarter (MB/min): ${quarters.map((q) => q.toFixed(2)).join(' / ')}`,
        `V8 heap per thread, used/total+external MiB, at start / middle / end: ${heapStart === null ? '?' : formatHeaps(heapStart)} / ${heapMid === null ? '?' : formatHeaps(heapMid)} / ${heapEnd === null ? '?' : formatHeaps(heapEnd)}`,
        `entities at start / middle / end: ${heapStart?.entities ?? '?'} / ${heapMid?.entities ?? '?'} / ${heapEnd?.entities ?? '?'} (key space ${ENTITIES})`,
        `bad inputs by kind: ${Object.entries(badByName).map(([k, v]) => `${k}=${v}`).join(' ')}`],
    };
  } finally {
    await t.stop();
  }
}
