/**
 * Training-data tools (docs/training.md), each beside a baseline measured in the
 * same run:
 *
 *   1. offline replay (`streamfeat replay`, a process of its own: NDJSON in, rows out)
 *      vs the server's own WAL replay (a real server recovering the same events from
 *      its data dir), events/s and CPU µs per event, for the medium workload's
 *      5-feature table and the fraud workload's 4 tables (bench/workloads.ts);
 *   2. `streamfeat export` of that data dir: spine rows/s;
 *   3. /get throughput with the served-row log off and on (every answer logged),
 *      same server build, same bodies and load generator, one after the other.
 *
 *   node dist/bench/training.js [--events-medium 300000] [--events-fraud 200000] [--spine 20000] [--duration 5] [--connections 64]
 *
 * The WAL of part 1 is written with the server's own front code (validation,
 * PushRoute writing PUSH records, sealed as a shard seals them), at one event per
 * millisecond of server time, so the data dir is what a server that took those
 * pushes would hold; the server then recovers it and its shard.recovered line gives
 * the replay rate. Offline replay reads the same events from an NDJSON file with
 * their times.
 */
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { compileRegistry } from '../src/registry/compile';
import type { RegistryState } from '../src/registry/model';
import { PushCore } from '../src/front/push_core';
import { PushFrameWriter, RegistryLog, sealFrame, WalWriter } from '../src/wal';
import { BodyGen, workloadNamed } from './workloads';
import { cpuTimes } from './procstat';
import { flagPairs } from './flags';
import { DEFAULTS, type Opts } from './args';
import { startServer } from './procs';
import { httpLoad, preloadKeys, registerWorkload } from './measure';
import { killChildrenOnExit } from './procs';

const args = flagPairs();
const EVENTS: Record<string, number> = { medium: Number(args.get('events-medium') ?? 300_000), fraud: Number(args.get('events-fraud') ?? 200_000) };
const SPINE = Number(args.get('spine') ?? 20_000);
const DURATION_S = Number(args.get('duration') ?? 5);
const CONNECTIONS = Number(args.get('connections') ?? 64);
const ENTITIES = 100_000;

interface LogLine { kind?: string; [k: string]: unknown }

/** A data dir holding `bodies` as a server with one shard would have logged them, 1 ms apart from t0. */
function buildDataDir(nodes: unknown[], bodies: string[], t0: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'streamfeat-bench-training-'));
  mkdirSync(join(dir, 'registry'), { recursive: true });
  const state: RegistryState = { version: 1, nodes: nodes as RegistryState['nodes'] };
  const { log } = RegistryLog.open(join(dir, 'registry', 'registry.log'));
  log.append(state);
  log.close();
  writeFileSync(join(dir, 'streamfeat.json'), JSON.stringify({ format: 1, shards: 1 }));
  const wal = WalWriter.open(join(dir, 'shard-0', 'wal'), { segmentBytesMax: 64 * 1024 * 1024, nextLsnHint: 1 });
  const reg = compileRegistry(state, { memoryGovEnforce: true, pushValidators: true, features: false });
  const core = new PushCore();
  const w = new PushFrameWriter();
  w.install(1, 1);
  let first = 1;
  const flush = (last: number): void => {
    const bytes = Buffer.from(w.take());
    for (let p = 0; p < bytes.length;) p = sealFrame(bytes, p);
    wal.append(bytes, first, last);
    first = last + 1;
  };
  for (let i = 0; i < bodies.length; i++) {
    const refused = core.accept(reg, JSON.parse(bodies[i]), 1);
    if (refused !== null) throw new Error(`bench body refused: ${refused.code}`);
    core.route.write(w, 0, core.plan!, i + 2, t0 + i, 1, core.dedupeValue());
    if ((i & 511) === 511) flush(i + 2);
  }
  flush(bodies.length + 1);
  wal.sync();
  wal.close();
  return dir;
}

/** The server's WAL replay of `dir`: records, ms and process CPU seconds until it was listening. */
function serverReplay(dir: string): Promise<{ records: number; ms: number; cpuS: number }> {
  const proc = spawn(process.execPath, [join(__dirname, '..', 'src', 'cli.js'), 'serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0',
    '--data-dir', dir, '--shards', '1', '--snapshot-interval', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let buf = '';
    let rec: LogLine | null = null;
    proc.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        let line: LogLine;
        try { line = JSON.parse(buf.slice(0, nl)) as LogLine; } catch { line = {}; }
        buf = buf.slice(nl + 1);
        if (line.kind === 'shard.recovered') rec = line;
        if (line.kind === 'server.tcp_bound' && rec !== null) {
          const cpu = cpuTimes(proc.pid!);
          const r = rec;
          proc.kill('SIGKILL'); // no shutdown snapshot: the data dir stays WAL-only for the export
          resolve({ records: Number(r.records), ms: Number(r.ms), cpuS: cpu === null ? NaN : cpu.user + cpu.sys });
        }
      }
    });
    proc.on('exit', () => { if (rec === null) reject(new Error('server exited before recovering')); });
  });
}

/**
 * One run of `streamfeat <args>` as its own process (as a user runs it, and as the
 * server's replay runs in its own): wall seconds and its CPU seconds (all threads,
 * from this process's waited-for children in /proc).
 */
function timed(args: string[]): Promise<{ s: number; cpuS: number; stderr: string }> {
  const c0 = cpuTimes('self');
  const t0 = performance.now();
  const proc = spawn(process.execPath, [join(__dirname, '..', 'src', 'cli.js'), ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  return new Promise((resolve, reject) => proc.on('exit', (code) => {
    const s = (performance.now() - t0) / 1000;
    const c1 = cpuTimes('self');
    if (code !== 0) { reject(new Error(`streamfeat ${args[0]} exited ${code}: ${err}`)); return; }
    resolve({ s, cpuS: c0 === null || c1 === null ? NaN : c1.childUser + c1.childSys - c0.childUser - c0.childSys, stderr: err });
  }));
}

async function replayPart(name: string): Promise<void> {
  const wl = workloadNamed(name);
  const n = EVENTS[name];
  const gen = new BodyGen(wl, 'zipf', ENTITIES, 1, 7);
  const bodies = Array.from({ length: n }, () => gen.push());
  const t0 = Date.now() - n - 60_000;
  const dir = buildDataDir(wl.register.nodes, bodies, t0);
  const work = mkdtempSync(join(tmpdir(), 'streamfeat-bench-training-io-'));
  try {
    const eventsFile = join(work, 'events.ndjson');
    writeFileSync(eventsFile, bodies.map((b, i) => `${b.slice(0, -1)},"t":${t0 + i}}`).join('\n'));
    const regFile = join(work, 'registry.json');
    writeFileSync(regFile, JSON.stringify(wl.register));
    // A spine over the preloaded keys and the whole time range (seeded, so runs compare).
    let seed = 12345;
    const rnd = (): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff; };
    const keyField = wl.fields.find((f) => f.kind === 'key')!;
    const prefix = keyField.kind === 'key' ? keyField.prefix : '';
    const spineFile = join(work, 'spine.ndjson');
    writeFileSync(spineFile, Array.from({ length: SPINE }, () => `{"key":"${prefix}${Math.floor(rnd() * 1000)}","time_ms":${t0 + Math.floor(rnd() * n)}}`).join('\n'));
    const out = join(work, 'out.ndjson');

    const server = await serverReplay(dir);
    const serverRate = server.records / (server.ms / 1000);
    const offline = await timed(['replay', '--registry', regFile, '--events', eventsFile, '--time-field', 't', '--spine', spineFile, '--table', wl.getTable, '--out', out]);
    // The tool's own figure (its summary line): the run from registry compile to the last row written, without node's start.
    const offlineRate = Number(/\((\d+) events\/s\)/.exec(offline.stderr)?.[1] ?? NaN);
    console.log(`replay ${name} (${wl.description}), ${n.toLocaleString()} events over ${ENTITIES.toLocaleString()} keys (zipf):`);
    console.log(`  server WAL replay (baseline): ${Math.round(serverRate).toLocaleString()} events/s (${server.records.toLocaleString()} records in ${(server.ms / 1000).toFixed(2)} s; whole process to listening ${(server.cpuS * 1e6 / n).toFixed(1)} µs CPU/event incl. boot)`);
    console.log(`  streamfeat replay (NDJSON read, push path, records, apply, ${SPINE.toLocaleString()}-row spine): ${Math.round(offlineRate).toLocaleString()} events/s as it reports itself (${(n / offline.s).toFixed(0)} events/s and ${(offline.cpuS * 1e6 / n).toFixed(1)} µs CPU/event for the whole process, node's start included); ratio ${(offlineRate / serverRate).toFixed(2)}x the server's WAL replay`);
    const exp = await timed(['export', '--data-dir', dir, '--spine', spineFile, '--table', wl.getTable, '--out', out]);
    console.log(`  streamfeat export of the data dir (WAL replay + reads), ${SPINE.toLocaleString()}-row spine: ${/\((\d+) rows\/s\)/.exec(exp.stderr)?.[1] ?? '?'} spine rows/s as it reports itself (whole process ${exp.s.toFixed(2)} s, ${(exp.cpuS * 1e6 / SPINE).toFixed(1)} µs CPU/row, the replay of ${n.toLocaleString()} records included)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  }
}

async function servedLogPart(): Promise<void> {
  const o: Opts = { ...DEFAULTS, workload: 'fraud', durationS: DURATION_S, warmupS: 1, preload: 20_000, gen: 'autocannon' };
  console.log(`/get of the fraud user row (30 features), autocannon, ${CONNECTIONS} connections, ${DURATION_S} s, 1 shard; served-row log off, then on (every answer):`);
  const results: string[] = [];
  for (const on of [false, true]) {
    const logDir = mkdtempSync(join(tmpdir(), 'streamfeat-bench-served-'));
    const t = await startServer({ shards: 1, extraArgs: on ? ['--served-log-dir', logDir] : [] });
    try {
      await registerWorkload(t, 'fraud');
      await preloadKeys(t, o);
      const m = await httpLoad('autocannon', t, 'get', o, CONNECTIONS);
      const cpu = m.serverCpu === null ? NaN : (m.serverCpu.user + m.serverCpu.sys) / Math.max(1, m.ok) * 1e6;
      results.push(`  log ${on ? 'on ' : 'off'}: ${Math.round(m.rps).toLocaleString()} gets/s, p50 ${(m.lat.p50 / 1000).toFixed(2)} ms, p99 ${(m.lat.p99 / 1000).toFixed(2)} ms, ${m.errors} errors, server ${cpu.toFixed(1)} µs CPU/get (all threads, /proc)`);
      console.log(results[results.length - 1]);
    } finally {
      await t.stop();
      rmSync(logDir, { recursive: true, force: true });
    }
  }
}

async function main(): Promise<void> {
  killChildrenOnExit();
  for (const name of ['medium', 'fraud']) await replayPart(name);
  await servedLogPart();
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
