/**
 * Three hostile inputs of the hardening review (a trickled frame, a deeply nested
 * body, a log reader that stops reading) replayed against a real server, with the
 * numbers each fix is judged by (bench/DECISIONS.md "Hardening"):
 *
 *   trickle   one 4 MiB frame written in 4 KiB chunks: CPU of the front thread
 *             (/proc/<pid>/task/<pid>/stat) spent while it arrives, and a /ping during it
 *   deep      `{"event","data","junk":[[[...1M deep...]]]}` pushed over HTTP: latency of its
 *             answer, the answer's code, front-thread CPU, a concurrent /ping
 *   logblock  stdout piped to a reader that stops reading: how many /reset calls answer
 *             (each within 5 s), then whether SIGTERM stops the server
 *
 *   node dist/bench/hardening_net.js [trickle|deep|logblock ...] [--resets N]   (default: all three, 2,000 resets)
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { encodeFrame, FrameDecoder, OP_PING } from '../src/protocol/frame';
import { killChildrenOnExit, startServer, SERVER_CLI } from './procs';
import { threadCpuSeconds } from './procstat';

const MIB = 1024 * 1024;
const TRICKLE_CHUNK_BYTES = 4096;
const DEEP_LEVELS = 1_000_000;
const ARGV = process.argv.slice(2);
/** logblock: /reset calls (--resets; the smoke runs a few, the measure 2,000: enough log lines to fill the pipe). */
const LOGBLOCK_RESETS = ARGV.includes('--resets') ? Number(ARGV[ARGV.indexOf('--resets') + 1]) : 2_000;
const LOGBLOCK_RESET_TIMEOUT_MS = 5_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function post(port: number, path: string, body: string): Promise<{ status: number; text: string; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  const text = await res.text();
  return { status: res.status, text, ms: performance.now() - t0 };
}

/** /ping every 20 ms until stopped; returns the slowest answer, ms. */
function pingLoop(port: number): { stop(): Promise<number> } {
  let running = true;
  let worst = 0;
  const done = (async () => {
    while (running) {
      const r = await post(port, '/ping', '{}');
      worst = Math.max(worst, r.ms);
      await sleep(20);
    }
  })();
  return { async stop() { running = false; await done; return worst; } };
}

async function trickle(): Promise<void> {
  const srv = await startServer({ shards: 1, memoryOnly: true, extraArgs: ['--test-mode'] });
  try {
    const frame = encodeFrame(OP_PING, Buffer.alloc(4 * MIB - 3, 0x20));
    const sock = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect({ port: srv.tcpPort!, host: '127.0.0.1' }, () => resolve(s));
      s.once('error', reject);
    });
    sock.setNoDelay(true);
    const reply = new Promise<number>((resolve) => {
      const dec = new FrameDecoder(8 * MIB);
      sock.on('data', (d) => { dec.push(d); const r = dec.next(); if (r.kind === 'frame') resolve(r.frame.op); });
    });
    await sleep(200);
    const pings = pingLoop(srv.httpPort!);
    const cpu0 = threadCpuSeconds(srv.pid)!;
    const t0 = performance.now();
    for (let off = 0; off < frame.length; off += TRICKLE_CHUNK_BYTES) {
      sock.write(frame.subarray(off, off + TRICKLE_CHUNK_BYTES));
      // A pause per chunk, so the server reads each chunk on its own (loopback would coalesce them).
      await sleep(1);
    }
    const op = await reply;
    const wall = performance.now() - t0;
    const cpu1 = threadCpuSeconds(srv.pid)!;
    const worstPing = await pings.stop();
    sock.destroy();
    console.log(`trickle: 4 MiB frame in ${Math.ceil(frame.length / TRICKLE_CHUNK_BYTES)} chunks of ${TRICKLE_CHUNK_BYTES} B: reply op 0x${op.toString(16)} after ${wall.toFixed(0)} ms; front-thread CPU ${((cpu1 - cpu0) * 1000).toFixed(0)} ms (includes the concurrent pings); slowest concurrent /ping ${worstPing.toFixed(1)} ms`);
  } finally {
    await srv.stop();
  }
}

async function deep(): Promise<void> {
  const srv = await startServer({ shards: 2, memoryOnly: true, extraArgs: ['--test-mode'] });
  try {
    const reg = JSON.stringify({ nodes: [
      { kind: 'event', name: 'e', schema: { fields: { user: 'str', amount: 'f64' } } },
      { kind: 'table', name: 't', upstreams: ['e'], key: ['user'], agg: { n: { op: 'count', params: {} } } },
    ] });
    const r0 = await post(srv.httpPort!, '/register', reg);
    if (r0.status !== 200) throw new Error(`register: ${r0.status} ${r0.text}`);
    const body = `{"event":"e","data":{"user":"u1","amount":1},"junk":${'['.repeat(DEEP_LEVELS)}${']'.repeat(DEEP_LEVELS)}}`;
    await sleep(200);
    const pings = pingLoop(srv.httpPort!);
    const cpu0 = threadCpuSeconds(srv.pid)!;
    const r = await post(srv.httpPort!, '/push', body);
    const cpu1 = threadCpuSeconds(srv.pid)!;
    const worstPing = await pings.stop();
    const g = await post(srv.httpPort!, '/get', JSON.stringify({ table: 't', key: 'u1' }));
    console.log(`deep: ${(body.length / MIB).toFixed(1)} MiB body, ${DEEP_LEVELS} levels: ${r.status} ${r.text.slice(0, 160)} in ${r.ms.toFixed(0)} ms; front-thread CPU ${((cpu1 - cpu0) * 1000).toFixed(0)} ms; slowest concurrent /ping ${worstPing.toFixed(1)} ms; get after: ${g.text}`);
  } finally {
    await srv.stop();
  }
}

async function logblock(): Promise<void> {
  // Our own spawn: stdout goes to a pipe that is read until the ports are known, then never again.
  const proc = spawn(process.execPath, [SERVER_CLI, 'serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--memory-only', '--test-mode', '--shards', '1'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((r) => proc.once('exit', (c) => r(c)));
  let port = 0;
  await new Promise<void>((resolve) => {
    let buf = '';
    const onData = (d: Buffer): void => {
      buf += d.toString();
      const m = /"kind":"server\.http_bound","addr":"[^"]*:(\d+)"/.exec(buf);
      if (m !== null && buf.includes('server.tcp_bound')) { port = Number(m[1]); proc.stdout!.off('data', onData); proc.stdout!.pause(); resolve(); }
    };
    proc.stdout!.on('data', onData);
  });
  let answered = 0;
  let worst = 0;
  const t0 = performance.now();
  for (let i = 0; i < LOGBLOCK_RESETS; i++) {
    const ac = AbortSignal.timeout(LOGBLOCK_RESET_TIMEOUT_MS);
    const t = performance.now();
    try {
      const res = await fetch(`http://127.0.0.1:${port}/reset`, { method: 'POST', body: '{}', signal: ac });
      await res.text();
    } catch {
      break;
    }
    worst = Math.max(worst, performance.now() - t);
    answered++;
  }
  const wall = performance.now() - t0;
  proc.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((r) => { timer = setTimeout(() => r('still running after 10 s'), 10_000); });
  const code = await Promise.race([exited, late]);
  // The losing timer would keep this process alive for its 10 s.
  clearTimeout(timer);
  if (typeof code === 'string') proc.kill('SIGKILL');
  console.log(`logblock: ${answered}/${LOGBLOCK_RESETS} resets answered with stdout unread (${wall.toFixed(0)} ms, slowest ${worst.toFixed(1)} ms); SIGTERM -> ${typeof code === 'string' ? code : `exit ${code}`}`);
}

const SCENARIOS: Record<string, () => Promise<void>> = { trickle, deep, logblock };

async function main(): Promise<void> {
  const names = ARGV.filter((a, i) => a !== '--resets' && ARGV[i - 1] !== '--resets');
  for (const n of names.length === 0 ? Object.keys(SCENARIOS) : names) {
    const f = SCENARIOS[n];
    if (f === undefined) throw new Error(`unknown scenario ${n}; one of ${Object.keys(SCENARIOS).join(', ')}`);
    await f();
  }
}

killChildrenOnExit();
main().catch((err) => { console.error(err); process.exit(1); });
