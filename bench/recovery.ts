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
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PushFrameWriter, RecordEncoder, RegistryLog, sealFrame, WalWriter } from '../src/wal';
import { hashKey } from '../src/registry/key';
import { compileRegistry } from '../src/registry/compile';
import { PushRoute } from '../src/front/routing';
import { RECOVERY_NODES } from './recovery_registry';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i].replace(/^--/, ''), process.argv[i + 1]);
const EVENTS = Number(args.get('events') ?? 10_000_000);
const ENTITIES = Number(args.get('entities') ?? 1_000_000);
const SHARDS = Number(args.get('shards') ?? 1);
const FORMAT = args.get('format') ?? 'push';
const BATCH = 512;

const NODES = RECOVERY_NODES;

function buildDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'streamfeat-recovery-'));
  mkdirSync(join(dir, 'registry'), { recursive: true });
  const { log } = RegistryLog.open(join(dir, 'registry', 'registry.log'));
  log.append({ version: 1, nodes: NODES });
  log.close();
  const writers: WalWriter[] = [];
  const encoders: RecordEncoder[] = [];
  const frames: PushFrameWriter[] = [];
  const counts: number[] = [];
  const firsts: number[] = [];
  for (let s = 0; s < SHARDS; s++) {
    writers.push(WalWriter.open(join(dir, `shard-${s}`, 'wal'), { segmentBytesMax: 64 * 1024 * 1024, nextLsnHint: 1 }));
    encoders.push(new RecordEncoder());
    frames.push(new PushFrameWriter());
    counts.push(0);
    firsts.push(-1);
  }
  const t0 = Date.now() - 30 * 60_000;
  const flush = (s: number, last: number): void => {
    if (FORMAT === 'event') {
      writers[s].append(encoders[s].bytes(), firsts[s], last);
      encoders[s].reset();
    } else {
      const bytes = Buffer.from(frames[s].take());
      for (let p = 0; p < bytes.length;) p = sealFrame(bytes, p);
      writers[s].append(bytes, firsts[s], last);
    }
    counts[s] = 0;
    firsts[s] = -1;
  };
  // The front's side: the registry as the front compiles it, routing and record writing.
  const reg = compileRegistry({ version: 1, nodes: NODES }, { memoryGovEnforce: true, pushValidators: true, features: false });
  const plan = reg.events.get('Txn')!;
  const route = new PushRoute();
  const lastOf: number[] = new Array(SHARDS).fill(0);
  for (let lsn = 1; lsn <= EVENTS; lsn++) {
    const user = `user${(lsn * 2654435761) % ENTITIES}`;
    const s = SHARDS === 1 ? 0 : hashKey(user) % SHARDS;
    if (firsts[s] < 0) firsts[s] = lsn;
    const t = t0 + Math.floor(lsn / 1000);
    if (FORMAT === 'event') {
      // The previous format: the push envelope as received.
      encoders[s].event(lsn, t, 1, 'Txn', `{"event":"Txn","data":{"user":"${user}","amount":${lsn % 997}.5}}`);
    } else {
      route.route(plan, { user, amount: (lsn % 997) + 0.5 }, SHARDS);
      route.write(frames[s], s, plan, lsn, t, 1, null);
    }
    counts[s]++;
    lastOf[s] = lsn;
    if (counts[s] >= BATCH) flush(s, lsn);
  }
  for (let s = 0; s < SHARDS; s++) {
    if (counts[s] > 0) flush(s, lastOf[s]);
    writers[s].sync();
    writers[s].close();
  }
  return dir;
}

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
  const dir = buildDataDir();
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
