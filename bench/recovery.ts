/**
 * Recovery benchmark: how fast a shard replays its WAL, how long a
 * restart takes with N events in the WAL, and how long a snapshot pauses a
 * shard holding M entities.
 *
 *   node dist/bench/recovery.js [--events 10000000] [--entities 1000000] [--shards 1] [--load-rate 0]
 *
 * The WAL is generated directly with the code the server uses (the front's
 * PushRoute writing PUSH records, sealed as the shard seals them), so building
 * 10M events takes seconds instead of a long push run; then the real server is
 * started on it and its own log lines give the timings.
 * `--load-rate R` pushes R/s over HTTP (64 keep-alive connections, latency from
 * the time each push was due) while the periodic snapshot of the third start
 * runs, and compares the push latency inside the snapshot's window with the
 * latency before it, in the same run: what the front sees of a snapshot.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { buildRecoveryDataDir } from './recovery_wal';
import { connectAll, ReqKind, type Conn } from './load/conns';
import { flagPairs } from './flags';

const args = flagPairs();
const EVENTS = Number(args.get('events') ?? 10_000_000);
const ENTITIES = Number(args.get('entities') ?? 1_000_000);
const SHARDS = Number(args.get('shards') ?? 1);
const LOAD_RATE = Number(args.get('load-rate') ?? 0);
const LOAD_CONNECTIONS = 64;

interface LogLine { kind?: string; [k: string]: unknown }

function runServer(dir: string, extra: string[]): Promise<{ lines: LogLine[]; boundMs: number; stop: () => Promise<LogLine[]> }> {
  const t0 = Date.now();
  const proc = spawn(process.execPath, [join(__dirname, '..', 'src', 'cli.js'), 'serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0',
    '--data-dir', dir, '--shards', String(SHARDS), '--snapshot-interval', '0', ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: LogLine[] = [];
  let buf = '';
  let onBound: (() => void) | null = null;
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      try { lines.push(JSON.parse(buf.slice(0, nl))); } catch { /* not JSON */ }
      buf = buf.slice(nl + 1);
      if (lines[lines.length - 1]?.kind === 'server.tcp_bound' && onBound) onBound();
    }
  });
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  return new Promise((resolve) => {
    onBound = () => resolve({
      lines, boundMs: Date.now() - t0,
      stop: async () => { proc.kill('SIGTERM'); await exited; return lines; },
    });
  });
}

async function main(): Promise<void> {
  console.log(`recovery benchmark: ${EVENTS.toLocaleString()} events over ${ENTITIES.toLocaleString()} entities, ${SHARDS} shard(s)`);
  let t = Date.now();
  const dir = buildRecoveryDataDir({ events: EVENTS, entities: ENTITIES, shards: SHARDS });
  console.log(`  WAL generated in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  try {
    t = Date.now();
    const first = await runServer(dir, []);
    const rec = first.lines.filter((l) => l.kind === 'shard.recovered');
    for (const r of rec) {
      const ms = Number(r.ms);
      console.log(`  shard ${r.shard}: replayed ${Number(r.records).toLocaleString()} records in ${(ms / 1000).toFixed(2)} s = ${Math.round(Number(r.records) / (ms / 1000)).toLocaleString()} events/s`);
    }
    console.log(`  restart (spawn to listening) with the WAL: ${(first.boundMs / 1000).toFixed(2)} s`);
    const stopped = await first.stop();
    for (const s of stopped.filter((l) => l.kind === 'shard.snapshot')) {
      console.log(`  snapshot of shard ${s.shard} (${Number(s.entities).toLocaleString()} entities): encode ${Number(s.encodeMs).toFixed(0)} ms + compress/write ${Number(s.writeMs).toFixed(0)} ms = pause ${(Number(s.encodeMs) + Number(s.writeMs)).toFixed(0)} ms; ${(Number(s.bytes) / 1e6).toFixed(1)} MB on disk (${(Number(s.raw_bytes) / 1e6).toFixed(1)} MB raw)`);
    }
    const second = await runServer(dir, []);
    const rec2 = second.lines.filter((l) => l.kind === 'shard.recovered');
    for (const r of rec2) console.log(`  shard ${r.shard} from its snapshot: ${(Number(r.ms) / 1000).toFixed(2)} s (${Number(r.records)} WAL records after it)`);
    console.log(`  restart from snapshot (spawn to listening): ${(second.boundMs / 1000).toFixed(2)} s`);
    await second.stop();
    // Periodic snapshots are incremental (slices between batches): measure the longest slice.
    const third = await runServer(dir, ['--snapshot-interval', '1s']);
    const port = Number(String(third.lines.find((l) => l.kind === 'server.http_bound')?.addr).split(':').pop());
    const load = LOAD_RATE > 0 ? await startLoad(port) : null;
    await fetch(`http://127.0.0.1:${port}/push`, { method: 'POST', body: '{"event":"Txn","data":{"user":"user1","amount":1}}' });
    const deadline = Date.now() + 120_000;
    while (!third.lines.some((l) => l.kind === 'shard.snapshot') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const seenAt = performance.now();
    for (const s of third.lines.filter((l) => l.kind === 'shard.snapshot')) {
      console.log(`  periodic (incremental) snapshot of ${Number(s.entities).toLocaleString()} entities: ${Number(s.encodeMs)} ms of encoding in slices, longest slice ${s.maxSliceMs} ms, shard event-loop delay max ${s.loopDelayMaxMs ?? '-'} ms (p99 ${s.loopDelayP99Ms ?? '-'}); lz4 + write off-thread ${Number(s.compressMs) + Number(s.writeMs)} ms; ${s.durationMs ?? '?'} ms start to file`);
    }
    if (load !== null) {
      const snap = third.lines.find((l) => l.kind === 'shard.snapshot')!;
      const r = load.stop();
      const all = r.map(([, ms]) => ms);
      // Builds before shard.snapshot carried durationMs: the whole run only (one snapshot in it).
      const window = snap.durationMs === undefined ? '' : ((): string => {
        const from = seenAt - Number(snap.durationMs);
        const during = r.filter(([due]) => due >= from && due <= seenAt).map(([, ms]) => ms);
        const before = r.filter(([due]) => due < from).map(([, ms]) => ms);
        return `; during the snapshot ${summary(during)}; before it ${summary(before)}`;
      })();
      console.log(`  push latency at ${LOAD_RATE}/s over HTTP (from when due): whole run ${summary(all)}${window}; ${load.late()} pushes found every connection busy`);
    }
    await third.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** p50 / p99 / max of `ms` as text. */
function summary(ms: number[]): string {
  if (ms.length === 0) return 'no requests';
  const sorted = ms.slice().sort((a, b) => a - b);
  const at = (p: number): string => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))].toFixed(1);
  return `p50 ${at(0.5)} / p99 ${at(0.99)} / max ${sorted[sorted.length - 1].toFixed(1)} ms (${ms.length} pushes)`;
}

/** Pushes at LOAD_RATE per second, each on a free connection when due; stop() returns [due time, latency ms] per reply. */
async function startLoad(port: number): Promise<{ stop: () => Array<[number, number]>; late: () => number }> {
  const done: Array<[number, number]> = [];
  const free: Conn[] = [];
  const conns = await connectAll('http', port, LOAD_CONNECTIONS, (c, ok) => {
    if (ok) done.push([c.intendedAt, performance.now() - c.intendedAt]);
    free.push(c);
  }, () => {});
  free.push(...conns);
  let late = 0;
  let n = 0;
  let next = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    while (next <= now) {
      const c = free.pop();
      if (c === undefined) { late++; next += 1000 / LOAD_RATE; continue; }
      c.intendedAt = next;
      c.send(ReqKind.Push, `{"event":"Txn","data":{"user":"user${(n++ * 7919) % ENTITIES}","amount":2.5}}`);
      next += 1000 / LOAD_RATE;
    }
  }, 1);
  return {
    stop: () => { clearInterval(timer); for (const c of conns) c.close(); return done; },
    late: () => late,
  };
}

main().catch((err) => { console.error(err); process.exit(1); });
