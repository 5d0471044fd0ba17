/**
 * Recovery benchmark (issue 4): how fast a shard replays its WAL, how long a
 * restart takes with N events in the WAL, and how long a snapshot pauses a
 * shard holding M entities.
 *
 *   node dist/bench/recovery.js [--events 10000000] [--entities 1000000] [--shards 1] [--format push|event]
 *
 * The WAL is generated directly with the code the server uses (the front's
 * PushRoute writing PUSH records, sealed as the shard seals them), so building
 * 10M events takes seconds instead of a long push run; then the real server is
 * started on it and its own log lines give the timings. `--format event` writes
 * the previous record format (the envelope text), which recovery still replays.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { buildRecoveryDataDir } from './recovery_wal';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const EVENTS = Number(args.get('events') ?? 10_000_000);
const ENTITIES = Number(args.get('entities') ?? 1_000_000);
const SHARDS = Number(args.get('shards') ?? 1);
const FORMAT = args.get('format') === 'event' ? 'event' : 'push';

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
  console.log(`recovery benchmark: ${EVENTS.toLocaleString()} events over ${ENTITIES.toLocaleString()} entities, ${SHARDS} shard(s), ${FORMAT} records`);
  let t = Date.now();
  const dir = buildRecoveryDataDir({ events: EVENTS, entities: ENTITIES, shards: SHARDS, format: FORMAT });
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
    await fetch(`http://127.0.0.1:${port}/push`, { method: 'POST', body: '{"event":"Txn","data":{"user":"user1","amount":1}}' });
    const deadline = Date.now() + 120_000;
    while (!third.lines.some((l) => l.kind === 'shard.snapshot') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    for (const s of third.lines.filter((l) => l.kind === 'shard.snapshot')) {
      console.log(`  periodic (incremental) snapshot of ${Number(s.entities).toLocaleString()} entities: ${Number(s.encodeMs)} ms of encoding in slices, longest slice ${s.maxSliceMs} ms; lz4 + write off-thread ${Number(s.compressMs) + Number(s.writeMs)} ms`);
    }
    await third.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
