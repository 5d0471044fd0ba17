/**
 * Lines up a fixed-rate run's slowest requests with what the server's threads
 * were doing (the debug timeline of src/timeline.ts). Usage:
 *
 *   STREAMFEAT_DEBUG_TIMELINE=/tmp/x BENCH_LOAD_TRACE=/tmp/x \
 *     node dist/bench/run.js push-latency --workload fraud --duration 5 --warmup 1
 *   node dist/bench/timeline.js /tmp/x [--slow-pct 1] [--clusters 8]
 *
 * Reads <dir>/*.tl (one per server thread) and the load client's <dir>/*.lat
 * (due and reply times per measured request); the .lat that overlaps the
 * server's shard timeline is the streamfeat run (a baseline run's is ignored).
 * Prints, over the fixed-rate window: each thread's batches, GCs and growth
 * events; how many of the slowest requests overlapped each kind of event; and
 * the worst clusters of slow requests with the events around them.
 *
 * Without a .lat inside the server's life (a closed loop such as `http-push` under
 * wrk, which records no request times) it summarizes the pipeline instead: each
 * thread's events by kind over the middle 60% of the shard's loaded batches, the
 * share of that window the shard spent applying batches, waiting for a core, or
 * with nothing to do, and how many batches were in flight at each dispatch.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

interface Ev { t: number; d: number; kind: string; a: number; b: number; thread: string }

const GC_KIND: Record<number, string> = { 1: 'scavenge', 2: 'mark-compact', 4: 'incremental', 8: 'weak-cb' };

function readTl(path: string, thread: string): Ev[] {
  const out: Ev[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    const [t, d, kind, a, b] = line.split(' ');
    const ev: Ev = { t: Number(t), d: Number(d), kind, a: Number(a), b: Number(b), thread };
    if (kind === 'gc') ev.kind = `gc:${GC_KIND[ev.a] ?? ev.a}`;
    out.push(ev);
  }
  return out;
}

/** The client's own stalls (ticker gaps) of a .lat file, as events of thread 'client'. */
function readLags(path: string): Ev[] {
  return readFileSync(path, 'utf8').split('\n').filter((l) => l.startsWith('lag ')).map((l) => {
    const [, a, b] = l.split(' ');
    return { t: Number(a), d: Number(b) - Number(a), kind: 'lag', a: 0, b: 0, thread: 'client' };
  });
}

function readLat(path: string): Float64Array {
  const lines = readFileSync(path, 'utf8').split('\n').filter((l) => l !== '' && !l.startsWith('lag '));
  const out = new Float64Array(lines.length * 2);
  lines.forEach((l, i) => {
    const sp = l.indexOf(' ');
    out[2 * i] = Number(l.slice(0, sp));
    out[2 * i + 1] = Number(l.slice(sp + 1));
  });
  return out;
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

const f = (x: number, digits = 2): string => x.toFixed(digits);

/** Per thread and kind over [w0, w1]: count, total and longest duration; batches also by size. */
function printThreads(inWin: Ev[], w0: number, w1: number, unlisted: readonly string[] = []): void {
  const threads = [...new Set(inWin.map((e) => e.thread))].sort();
  for (const th of threads) {
    const mine = inWin.filter((e) => e.thread === th);
    console.log(`\n${th}:`);
    const kinds = [...new Set(mine.map((e) => e.kind))].sort();
    for (const k of kinds) {
      const ks = mine.filter((e) => e.kind === k);
      const ds = ks.map((e) => e.d).sort((x, y) => x - y);
      const sum = ds.reduce((s, x) => s + x, 0);
      let line = `  ${k.padEnd(18)} ${String(ks.length).padStart(6)}  total ${f(sum, 1).padStart(7)} ms (${f((100 * sum) / (w1 - w0), 1)}%)  p50 ${f(pct(ds, 50), 3)}  p99 ${f(pct(ds, 99), 3)}  max ${f(ds[ds.length - 1], 3)} ms`;
      if (k === 'batch' || k === 'dispatch' || k === 'answer') {
        const sizes = ks.map((e) => (k === 'batch' ? e.b : e.a)).sort((x, y) => x - y);
        line += `  | size p50 ${pct(sizes, 50)} p99 ${pct(sizes, 99)} max ${sizes[sizes.length - 1]}`;
      }
      if (k === 'answer') {
        const trips = ks.map((e) => e.b).sort((x, y) => x - y);
        line += `  | round trip p50 ${f(pct(trips, 50), 3)} p99 ${f(pct(trips, 99), 3)} max ${f(trips[trips.length - 1], 3)} ms`;
      }
      console.log(line);
    }
    const rare = mine.filter((e) => !['batch', 'dispatch', 'answer', 'flush', ...unlisted].includes(e.kind) && !e.kind.startsWith('gc:'));
    for (const e of rare) console.log(`    +${f(e.t - w0, 1)} ms  ${e.kind} ${f(e.d, 3)} ms  a=${e.a} b=${e.b}`);
  }
}

/**
 * A run without a load trace (a closed loop: wrk, `http-push`): no request times to
 * line up, so the window is the middle 60% of the shard's loaded batches, and the
 * summary says where the pipeline's time went: how much of it the shard was applying,
 * waiting for a core after a batch arrived or while it ran, or had nothing to do, and
 * how many batches were in flight when the front dispatched one.
 */
function closedLoop(evs: Ev[], shardEvs: Ev[]): void {
  const loaded = shardEvs.filter((e) => e.kind === 'batch' && e.b > 0).sort((x, y) => x.t - y.t);
  if (loaded.length < 10) throw new Error('no load trace and fewer than 10 shard batches with pushes: nothing to summarize');
  const w0 = loaded[Math.floor(loaded.length / 5)].t;
  const w1 = loaded[loaded.length - 1 - Math.floor(loaded.length / 5)].t;
  const span = w1 - w0;
  const inWin = evs.filter((e) => e.t + e.d >= w0 && e.t <= w1);
  const batches = loaded.filter((e) => e.t >= w0 && e.t < w1);
  const pushes = batches.reduce((s, e) => s + e.b, 0);
  console.log(`closed loop (no load trace): window ${f(span / 1000)} s, middle 60% of the shard's batches with pushes: ${batches.length} batches, ${pushes} pushes (${Math.round(pushes / (span / 1000))}/s)`);
  // A closed loop's late turns and run-queue waits are hundreds a second: totals only.
  printThreads(inWin, w0, w1, ['lag', 'runq_wake', 'runq_batch', 'cold_sweep']);
  for (const th of [...new Set(batches.map((e) => e.thread))].sort()) {
    const mine = inWin.filter((e) => e.thread === th);
    const share = (kind: string): number => (100 * mine.filter((e) => e.kind === kind).reduce((s, e) => s + e.d, 0)) / span;
    const applying = share('batch');
    const wake = share('runq_wake');
    const during = share('runq_batch');
    console.log(`\n${th} pipeline: applying batches ${f(applying, 1)}% of the window (of which waiting for a core ${f(during, 1)}%), waiting for a core after a batch arrived ${f(wake, 1)}%, nothing to do ${f(100 - applying - wake, 1)}%`);
  }
  const inFlight = new Map<number, number>();
  for (const e of inWin) if (e.thread === 'front' && e.kind === 'dispatch') inFlight.set(e.b, (inFlight.get(e.b) ?? 0) + 1);
  const total = [...inFlight.values()].reduce((s, x) => s + x, 0);
  console.log(`front dispatches by batches in flight after them: ${[...inFlight].sort((x, y) => x[0] - y[0]).map(([k, v]) => `${k}: ${f((100 * v) / total, 0)}%`).join(', ')}`);
}

function main(): void {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { 'slow-pct': { type: 'string', default: '1' }, clusters: { type: 'string', default: '8' }, at: { type: 'string' }, span: { type: 'string', default: '100' } } });
  const dir = positionals[0];
  if (dir === undefined) throw new Error('usage: timeline <dir> [--slow-pct 1] [--clusters 8]');
  const files = readdirSync(dir);
  const evs: Ev[] = [];
  for (const name of files.filter((n) => n.endsWith('.tl'))) evs.push(...readTl(join(dir, name), name.split('-').slice(0, -2).join('-')));
  const shardEvs = evs.filter((e) => e.thread.startsWith('shard'));
  if (shardEvs.length === 0) throw new Error(`no shard timeline in ${dir}`);
  const sMin = Math.min(...shardEvs.map((e) => e.t));
  const sMax = Math.max(...shardEvs.map((e) => e.t));
  // The streamfeat run's trace: the one inside the shard timeline's life.
  const latFiles = files.filter((n) => n.endsWith('.lat')).map((n) => join(dir, n));
  const lats = latFiles.map((p) => readLat(p));
  const which = lats.findIndex((l) => l.length > 0 && l[0] >= sMin && l[0] <= sMax);
  if (lats.filter((l) => l.length > 0 && l[0] >= sMin && l[0] <= sMax).length > 1) throw new Error(`expected at most one load trace inside the server's life in ${dir}`);
  if (which < 0) {
    closedLoop(evs, shardEvs);
    return;
  }
  const lat = lats[which];
  evs.push(...readLags(latFiles[which]));
  const n = lat.length / 2;
  let w0 = Infinity;
  let w1 = -Infinity;
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    w0 = Math.min(w0, lat[2 * i]);
    w1 = Math.max(w1, lat[2 * i + 1]);
    ms.push(lat[2 * i + 1] - lat[2 * i]);
  }
  const sorted = [...ms].sort((x, y) => x - y);
  const windowS = (w1 - w0) / 1000;
  console.log(`window ${f(windowS)} s, ${n} requests (${Math.round(n / windowS)}/s): latency p50 ${f(pct(sorted, 50))} p99 ${f(pct(sorted, 99))} p99.9 ${f(pct(sorted, 99.9))} max ${f(sorted[n - 1])} ms`);
  const inWin = evs.filter((e) => e.t + e.d >= w0 && e.t <= w1);
  if (values.at !== undefined) {
    // Every event and every request due or answered in [at, at + span) ms from the window start.
    const a = w0 + Number(values.at);
    const b = a + Number(values.span);
    const rows: Array<[number, string]> = [];
    for (const e of inWin) if (e.t + e.d >= a && e.t < b && e.kind !== 'flush' || (e.kind === 'flush' && e.t >= a && e.t < b)) rows.push([e.t, `${e.thread} ${e.kind} ${f(e.d, 3)} ms a=${e.a} b=${f(e.b, 3)}`]);
    const perMs = new Map<number, [number, number]>();
    for (let i = 0; i < n; i++) {
      for (const [j, t] of [[0, lat[2 * i]], [1, lat[2 * i + 1]]] as const) {
        if (t < a || t >= b) continue;
        const k = Math.floor(t - w0);
        const r = perMs.get(k) ?? [0, 0];
        r[j]++;
        perMs.set(k, r);
      }
    }
    for (const [k, r] of perMs) rows.push([w0 + k, `client: ${r[0]} due, ${r[1]} replies`]);
    rows.sort((x, y) => x[0] - y[0]);
    for (const [t, line] of rows) console.log(`+${f(t - w0, 3)} ${line}`);
    return;
  }

  printThreads(inWin, w0, w1);

  // The slowest requests: which kinds of event overlapped their wait.
  const slowPct = Number(values['slow-pct']);
  const cut = pct(sorted, 100 - slowPct);
  const slow: number[] = [];
  for (let i = 0; i < n; i++) if (ms[i] >= cut) slow.push(i);
  console.log(`\nslowest ${slowPct}% (${slow.length} requests, >= ${f(cut)} ms): requests whose wait overlapped an event of each kind, and the mean share of the wait it covered`);
  const byKind = new Map<string, { hits: number; share: number }>();
  const sortedEvs = [...inWin].sort((x, y) => x.t - y.t);
  for (const i of slow) {
    const a = lat[2 * i];
    const b = lat[2 * i + 1];
    const cover = new Map<string, number>();
    for (const e of sortedEvs) {
      if (e.t > b) break;
      if (e.t + e.d < a) continue;
      const key = `${e.thread} ${e.kind}`;
      const o = Math.min(b, e.t + e.d) - Math.max(a, e.t);
      cover.set(key, (cover.get(key) ?? 0) + Math.max(0, o));
    }
    for (const [k, o] of cover) {
      const r = byKind.get(k) ?? { hits: 0, share: 0 };
      r.hits++;
      r.share += o / (b - a);
      byKind.set(k, r);
    }
  }
  for (const [k, r] of [...byKind].sort((x, y) => y[1].share - x[1].share)) {
    console.log(`  ${k.padEnd(28)} ${String(r.hits).padStart(6)} (${f((100 * r.hits) / slow.length, 0)}%)  covered ${f((100 * r.share) / slow.length, 1)}% of their wait`);
  }

  // Clusters: 20 ms buckets by due time, the worst ones with what the threads did from 30 ms before.
  const bucketMs = 20;
  const buckets = new Map<number, number>();
  for (const i of slow) {
    const k = Math.floor((lat[2 * i] - w0) / bucketMs);
    buckets.set(k, (buckets.get(k) ?? 0) + 1);
  }
  const top = [...buckets].sort((x, y) => y[1] - x[1]).slice(0, Number(values.clusters)).sort((x, y) => x[0] - y[0]);
  console.log(`\nworst ${top.length} ${bucketMs} ms buckets of slow requests (by due time, ms from the window start): events from 30 ms before to the bucket's last reply`);
  for (const [k, cnt] of top) {
    const a = w0 + k * bucketMs;
    let end = a + bucketMs;
    let worst = 0;
    for (const i of slow) if (lat[2 * i] >= a && lat[2 * i] < a + bucketMs) { end = Math.max(end, lat[2 * i + 1]); worst = Math.max(worst, ms[i]); }
    const near = sortedEvs.filter((e) => e.t + e.d >= a - 30 && e.t <= end && e.thread.startsWith('shard'));
    const busy = near.filter((e) => e.kind === 'batch' || e.kind.startsWith('gc:')).reduce((s, e) => s + e.d, 0);
    const bs = near.filter((e) => e.kind === 'batch');
    const big = near.filter((e) => e.d >= 1).map((e) => `${e.kind}@+${f(e.t - w0, 0)}:${f(e.d, 1)}ms${e.kind === 'batch' ? `(${e.b})` : ''}`);
    const front = sortedEvs.filter((e) => e.t + e.d >= a - 30 && e.t <= end && e.thread === 'front' && e.kind.startsWith('gc:') && e.d >= 1).map((e) => `${e.kind}@+${f(e.t - w0, 0)}:${f(e.d, 1)}ms`);
    console.log(`  +${k * bucketMs} ms: ${cnt} slow, worst ${f(worst, 1)} ms; shard in ${f(end - a + 30, 0)} ms: ${bs.length} batches (${bs.reduce((s, e) => s + e.b, 0)} pushes), busy ${f(busy, 1)} ms; >= 1 ms: ${big.join(' ') || '-'}${front.length > 0 ? `; front: ${front.join(' ')}` : ''}`);
  }
}

main();
