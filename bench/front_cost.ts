/**
 * What one push costs the server's threads, per build, interleaved: front-thread
 * CPU µs per push, the other threads' (shards, coordinator), bytes the front
 * isolate allocates per push, and the other isolates' allocation and GCs (the
 * shard's scavenges and mark-compacts), measured over the load's window on a
 * real server.
 * CPU is thread CPU time (/proc/<pid>/task/<tid>/schedstat), so a shared machine
 * moves it less than it moves throughput or p99; allocation is V8's own count
 * (`--trace-gc-nvp`: each GC line says the bytes allocated since the one before).
 *
 *   node dist/bench/front_cost.js [--workload medium] [--transport http|tcp] [--rate 8000]
 *        [--connections 64] [--duration 5] [--warmup 1] [--rounds 3] [--cli A.js,B.js]
 *
 * `--cli`: the builds to compare (each a dist/src/cli.js, or `bare`: uws_bare or tcp_echo;
 * default this build's), run one after the other in every round. `--rate 0`: closed loop.
 */
import { closeSync, openSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runChild } from './children';
import { Histogram } from './hist';
import { bodySpec, registerWorkload } from './measure';
import { killChildrenOnExit, SERVER_CLI, startServer, startTcpEcho, startUwsBare } from './procs';
import { DEFAULTS, type Opts } from './args';
import { cpuBetween, cpuTimes, threadCpuNs, type CpuTimes } from './procstat';
import { flagPairs } from './flags';

const args = flagPairs();
const WORKLOAD = args.get('workload') ?? 'medium';
const TRANSPORT = (args.get('transport') ?? 'http') as 'http' | 'tcp';
const RATE = Number(args.get('rate') ?? 8000);
const CONNS = Number(args.get('connections') ?? 64);
const DURATION_S = Number(args.get('duration') ?? 5);
const WARMUP_S = Number(args.get('warmup') ?? 1);
const ROUNDS = Number(args.get('rounds') ?? 3);
const CLIS = (args.get('cli') ?? SERVER_CLI).split(',');
/** Node flags for the servers besides --trace-gc-nvp (BENCH_SERVER_NODE_ARGS, e.g. --cpu-prof). */
const EXTRA_NODE_ARGS = process.env.BENCH_SERVER_NODE_ARGS ?? '';

interface GcSum { allocated: number; scavenges: number; scavengeMs: number; majors: number; majorMs: number; lastMs: number }

/** Sums the --trace-gc-nvp lines in bytes [from, to) of `file`, per isolate. */
function gcBetween(file: string, from: number, to: number): Map<string, GcSum> {
  const fd = openSync(file, 'r');
  const buf = Buffer.alloc(to - from);
  readSync(fd, buf, 0, buf.length, from);
  closeSync(fd);
  const out = new Map<string, GcSum>();
  for (const line of buf.toString('utf8').split('\n')) {
    const m = /\[\d+:(0x[0-9a-f]+)\]\s+(\d+) ms: pause=([\d.]+) .*?gc=(\w+) .*?allocated=(\d+)/.exec(line);
    if (m === null) continue;
    let s = out.get(m[1]);
    if (s === undefined) { s = { allocated: 0, scavenges: 0, scavengeMs: 0, majors: 0, majorMs: 0, lastMs: 0 }; out.set(m[1], s); }
    s.allocated += Number(m[5]);
    s.lastMs = Math.max(s.lastMs, Number(m[2]));
    if (m[4] === 's') { s.scavenges++; s.scavengeMs += Number(m[3]); } else { s.majors++; s.majorMs += Number(m[3]); }
  }
  return out;
}

/** Batches the front has handed its shards so far (the admin sidecar's /metrics), or NaN. */
async function batchesSent(adminPort: number | null): Promise<number> {
  if (adminPort === null) return NaN;
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^streamfeat_shard_batches_total\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

async function once(cli: string): Promise<string> {
  const out = join(tmpdir(), `front_cost_${process.pid}.log`);
  writeFileSync(out, '');
  process.env.BENCH_SERVER_NODE_ARGS = `${EXTRA_NODE_ARGS} --trace-gc-nvp`;
  process.env.BENCH_SERVER_OUT = out;
  const bare = cli === 'bare';
  const t = bare ? await (TRANSPORT === 'tcp' ? startTcpEcho() : startUwsBare()) : await startServer({ cli, admin: true });
  try {
    if (!bare) await registerWorkload(t, WORKLOAD);
    const o: Opts = { ...DEFAULTS, workload: WORKLOAD };
    let c0 = new Map<number, number>();
    let c1 = new Map<number, number>();
    let k0: CpuTimes | null = null;
    let k1: CpuTimes | null = null;
    let f0 = 0;
    let b0: Promise<number> = Promise.resolve(NaN);
    let b1: Promise<number> = Promise.resolve(NaN);
    let f1 = 0;
    const r = await runChild({ ...bodySpec(o), kind: 'load', transport: TRANSPORT, port: TRANSPORT === 'tcp' ? t.tcpPort! : t.httpPort!, mix: 'push',
      pushShare: 1, connections: CONNS, warmupMs: WARMUP_S * 1000, durationMs: DURATION_S * 1000, rate: RATE },
    { onStart: () => { b0 = batchesSent(t.adminPort); c0 = threadCpuNs(t.pid); k0 = cpuTimes(t.pid, t.pid); f0 = statSync(out).size; }, onEnd: () => { b1 = batchesSent(t.adminPort); c1 = threadCpuNs(t.pid); k1 = cpuTimes(t.pid, t.pid); f1 = statSync(out).size; } },
    (DURATION_S + WARMUP_S) * 1000);
    // GC lines of the window arrive through a pipe: give the last ones a moment.
    await new Promise((res) => setTimeout(res, 300));
    const pushes = r.ok;
    const batches = (await b1) - (await b0);
    const frontNs = (c1.get(t.pid) ?? 0) - (c0.get(t.pid) ?? 0);
    const others: number[] = [];
    for (const [tid, ns] of c1) if (tid !== t.pid) others.push(ns - (c0.get(tid) ?? 0));
    others.sort((a, b) => b - a);
    const gc = gcBetween(out, f0, f1);
    // The front's isolate started first, so its clock (ms since isolate start) reads highest.
    const isolates = [...gc.values()].sort((a, b) => b.lastMs - a.lastMs);
    const front = isolates[0];
    const lat = Histogram.from(r.hist).summary();
    const us = (ns: number): string => (ns / 1000 / pushes).toFixed(2);
    // Assigned in the load's callbacks (TypeScript's narrowing does not see them).
    const fk = cpuBetween(k0 as CpuTimes | null, k1 as CpuTimes | null, r.elapsedS);
    return [
      `rps ${Math.round(pushes / r.elapsedS)}`, `p50 ${(lat.p50 / 1000).toFixed(2)} ms`, `p99 ${(lat.p99 / 1000).toFixed(2)} ms`,
      `front ${us(frontNs)} µs/push (user ${fk === null ? 'n/a' : us(fk.user * 1e9)}, sys ${fk === null ? 'n/a' : us(fk.sys * 1e9)})`, `top other thread ${us(others[0] ?? 0)}`, `all others ${us(others.reduce((a, b) => a + b, 0))}`,
      `front alloc ${front === undefined ? 'n/a' : Math.round(front.allocated / pushes)} B/push`,
      `front scavenges ${front?.scavenges ?? 0} (${(front?.scavengeMs ?? 0).toFixed(1)} ms)`,
      `other isolates alloc ${isolates.slice(1).map((s) => Math.round(s.allocated / pushes)).join('/')} B/push`,
      `other isolates GC ${isolates.slice(1).map((s) => `${s.scavenges} scavenges ${s.scavengeMs.toFixed(1)} ms + ${s.majors} major ${s.majorMs.toFixed(1)} ms`).join(' / ')}`,
      `pushes/batch ${(pushes / batches).toFixed(1)}`,
      `errors ${r.errors}`,
    ].join(' | ');
  } finally {
    await t.stop();
  }
}

async function main(): Promise<void> {
  console.log(`front_cost: ${WORKLOAD} over ${TRANSPORT}, rate ${RATE || 'closed loop'}, ${CONNS} conns, ${DURATION_S}s (+${WARMUP_S}s warmup), load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
  for (let round = 1; round <= ROUNDS; round++) {
    for (let i = 0; i < CLIS.length; i++) {
      const line = await once(CLIS[i]);
      console.log(`round ${round} build ${i} (${CLIS[i]}): ${line}`);
    }
  }
  console.log(`load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
}

killChildrenOnExit();
main().catch((err) => { console.error(err); process.exit(1); });
