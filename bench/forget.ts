/**
 * What a forget costs next to a push, measured in the same run on the same server
 * with the same load generator: framed TCP, `--connections` connections with
 * `--depth` requests pipelined on each (closed loop), over a preloaded key space.
 * Per phase: throughput, latency percentiles, the server's CPU per request (every
 * thread, and the front thread alone: /proc/<pid>/task/<tid>/schedstat, ns) and its RSS. Phases, on one fresh server per round:
 *
 *   push          pushes to preloaded entities (the baseline)
 *   get           gets of preloaded entities (for scale: a request the front parses as JSON, as it does a forget)
 *   forget        forgets of one table's entities, each removing one row
 *   forget-every  forgets naming every table ("*"), each removing one row
 *   push-after    pushes again, after the forgets
 *
 * With `--cli A.js,B.js` it measures the push phase only, once per build per round,
 * builds interleaved: whether this build's push path is unchanged from another's.
 *
 *   node dist/bench/forget.js [--entities 60000] [--requests 20000] [--connections 8] [--depth 32]
 *        [--rounds 3] [--shards N] [--cli A.js,B.js]
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { encodeFrame, FrameDecoder, OP_ERROR_RESPONSE, OP_FORGET, OP_GET, OP_PUSH, OP_REGISTER } from '../src/protocol/frame';
import { Histogram } from './hist';
import { killChildrenOnExit, SERVER_CLI, startServer, type Target } from './procs';
import { flagPairs } from './flags';
import { threadCpuNs } from './procstat';

const args = flagPairs();
const ENTITIES = Number(args.get('entities') ?? 60_000);
const REQUESTS = Number(args.get('requests') ?? 20_000);
const CONNS = Number(args.get('connections') ?? 8);
const DEPTH = Number(args.get('depth') ?? 32);
const ROUNDS = Number(args.get('rounds') ?? 3);
const SHARDS = args.get('shards');
const CLIS = args.get('cli')?.split(',') ?? null;

const NODES = [
  { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', card: 'str', amount: 'f64' }, optional_fields: [] } },
  {
    kind: 'table', name: 'UserSpend', upstreams: ['Txn'], key: ['user'],
    agg: { n: { op: 'count', params: {} }, total: { op: 'sum', params: { field: 'amount', window: '1h' } }, top: { op: 'max', params: { field: 'amount', window: '10m' } } },
  },
  { kind: 'table', name: 'CardVel', upstreams: ['Txn'], key: ['card'], agg: { n: { op: 'count', params: { window: '10m' } } } },
];

/** One frame per request; replies come back in order on each connection. */
interface Load { frames: Buffer[]; }

function push(i: number): Buffer {
  return encodeFrame(OP_PUSH, JSON.stringify({ event: 'Txn', data: { user: `user-${i}`, card: `card-${i % 5000}`, amount: (i % 977) / 10 } }));
}

function getRow(i: number): Buffer {
  return encodeFrame(OP_GET, JSON.stringify({ table: 'UserSpend', key: `user-${i}` }));
}

function forget(i: number, every: boolean): Buffer {
  return encodeFrame(OP_FORGET, JSON.stringify(every ? { tables: '*', key: `user-${i}` } : { table: 'UserSpend', key: `user-${i}` }));
}

interface Result { rps: number; lat: Histogram; cpuUsPerReq: number; frontUsPerReq: number; rssMb: number; errors: number; sample: string }

/** Sends every frame of `load` over CONNS connections, DEPTH in flight each; measures the server `t` meanwhile. */
async function run(t: Target, load: Load): Promise<Result> {
  const lat = new Histogram();
  let next = 0;
  let errors = 0;
  let sample = '';
  const c0 = threadCpuNs(t.pid);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONNS }, () => new Promise<void>((resolve, reject) => {
    const s = net.connect({ port: t.tcpPort!, host: '127.0.0.1' });
    s.setNoDelay(true);
    const dec = new FrameDecoder(64 * 1024 * 1024);
    const sent: number[] = [];
    const fill = (): void => {
      while (sent.length < DEPTH && next < load.frames.length) {
        sent.push(performance.now());
        s.write(load.frames[next++]);
      }
      if (sent.length === 0) { s.end(); resolve(); }
    };
    s.on('connect', fill);
    s.on('error', reject);
    s.on('data', (d: Buffer) => {
      dec.push(d);
      for (;;) {
        const r = dec.next();
        if (r.kind !== 'frame') break;
        lat.record((performance.now() - sent.shift()!) * 1000);
        if (r.frame.op === OP_ERROR_RESPONSE) { errors++; sample = r.frame.payload.toString(); }
        else if (sample === '') sample = r.frame.payload.toString();
      }
      fill();
    });
  })));
  const wall = (performance.now() - t0) / 1000;
  const c1 = threadCpuNs(t.pid);
  let ns = 0;
  for (const [tid, v] of c1) ns += v - (c0.get(tid) ?? 0);
  const frontNs = (c1.get(t.pid) ?? 0) - (c0.get(t.pid) ?? 0);
  const rss = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${t.pid}/status`, 'utf8'));
  const n = load.frames.length;
  return { rps: n / wall, lat, cpuUsPerReq: ns / 1000 / n, frontUsPerReq: frontNs / 1000 / n, rssMb: rss === null ? NaN : Number(rss[1]) / 1024, errors, sample };
}

async function register(t: Target): Promise<void> {
  const s = net.connect({ port: t.tcpPort!, host: '127.0.0.1' });
  await new Promise<void>((resolve, reject) => {
    const dec = new FrameDecoder(1 << 20);
    s.on('connect', () => s.write(encodeFrame(OP_REGISTER, JSON.stringify({ nodes: NODES }))));
    s.on('error', reject);
    s.on('data', (d: Buffer) => {
      dec.push(d);
      const r = dec.next();
      if (r.kind !== 'frame') return;
      s.end();
      if (r.frame.op === OP_ERROR_RESPONSE) reject(new Error(`register failed: ${r.frame.payload.toString()}`));
      else resolve();
    });
  });
}

function line(name: string, r: Result): string {
  const q = (us: number): string => `${(us / 1000).toFixed(2)} ms`;
  return `${name.padEnd(13)} ${String(Math.round(r.rps)).padStart(7)} req/s | p50 ${q(r.lat.quantile(0.5))} p99 ${q(r.lat.quantile(0.99))} max ${q(r.lat.max)} | server CPU ${r.cpuUsPerReq.toFixed(1)} µs/req (all threads; front ${r.frontUsPerReq.toFixed(1)}) | RSS ${r.rssMb.toFixed(0)} MB | errors ${r.errors}`;
}

async function server(cli: string): Promise<Target> {
  const t = await startServer({ cli, ...(SHARDS === undefined ? {} : { shards: Number(SHARDS) }), extraArgs: ['--snapshot-interval', '0'] });
  await register(t);
  return t;
}

const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

async function forgetVsPush(round: number): Promise<void> {
  const t = await server(SERVER_CLI);
  try {
    await run(t, { frames: range(0, ENTITIES).map(push) });
    // Pushes to existing entities, forgets of existing ones (each removes a row), in the same key space.
    const pick = (i: number): number => (i * 7919) % ENTITIES;
    const p = await run(t, { frames: range(0, REQUESTS).map((i) => push(pick(i))) });
    const g = await run(t, { frames: range(0, REQUESTS).map((i) => getRow(pick(i))) });
    const half = Math.floor(ENTITIES / 2);
    const f = await run(t, { frames: range(0, Math.min(REQUESTS, half)).map((i) => forget(i, false)) });
    const e = await run(t, { frames: range(half, Math.min(REQUESTS, ENTITIES - half)).map((i) => forget(i, true)) });
    const a = await run(t, { frames: range(0, REQUESTS).map((i) => push(pick(i))) });
    console.log(`round ${round}`);
    console.log(`  ${line('push', p)}`);
    console.log(`  ${line('get', g)}   (${(g.cpuUsPerReq / p.cpuUsPerReq).toFixed(2)}x push CPU, ${(g.rps / p.rps).toFixed(2)}x push rate)`);
    console.log(`  ${line('forget', f)}   (${(f.cpuUsPerReq / p.cpuUsPerReq).toFixed(2)}x push CPU, ${(f.rps / p.rps).toFixed(2)}x push rate)`);
    console.log(`  ${line('forget-every', e)}   (${(e.cpuUsPerReq / p.cpuUsPerReq).toFixed(2)}x push CPU, ${(e.rps / p.rps).toFixed(2)}x push rate)`);
    console.log(`  ${line('push-after', a)}`);
    if (round === 1) console.log(`  sample answers: forget ${f.sample} | every ${e.sample}`);
    if (f.errors + e.errors + p.errors + g.errors + a.errors > 0) throw new Error('requests failed');
  } finally {
    await t.stop();
  }
}

async function pushByBuild(round: number, clis: string[]): Promise<void> {
  for (let i = 0; i < clis.length; i++) {
    const t = await server(clis[i]);
    try {
      await run(t, { frames: range(0, ENTITIES).map(push) });
      const p = await run(t, { frames: range(0, REQUESTS).map((j) => push((j * 7919) % ENTITIES)) });
      console.log(`round ${round} build ${i} (${clis[i]}): ${line('push', p)}`);
    } finally {
      await t.stop();
    }
  }
}

async function main(): Promise<void> {
  console.log(`forget bench: ${ENTITIES} entities, ${REQUESTS} requests per phase, ${CONNS} conns x depth ${DEPTH} over TCP, shards ${SHARDS ?? 'default'}, load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
  for (let round = 1; round <= ROUNDS; round++) {
    if (CLIS === null) await forgetVsPush(round);
    else await pushByBuild(round, CLIS);
  }
  console.log(`load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
}

killChildrenOnExit();
main().catch((err) => { console.error(err); process.exit(1); });
