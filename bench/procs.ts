/**
 * Starts the processes under test: the streamfeat server and the bare
 * baselines (uws_bare, uws_hop, tcp_echo, tcp_hop). Each is a child process bound to
 * port 0 that logs one JSON line
 * `{"kind":"server.http_bound"|"server.tcp_bound","addr":"127.0.0.1:PORT"}`
 * per listener; we read the ports from those lines, as any tool would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exitQuietlyOnEpipe } from '../src/cli_args';

/** dist/bench/procs.js -> dist/src/cli.js */
export const SERVER_CLI = join(__dirname, '..', 'src', 'cli.js');
export const UWS_BARE = join(__dirname, 'baseline', 'uws_bare.js');
export const TCP_ECHO = join(__dirname, 'baseline', 'tcp_echo.js');
export const UWS_HOP = join(__dirname, 'baseline', 'uws_hop.js');
export const TCP_HOP = join(__dirname, 'baseline', 'tcp_hop.js');

/** How long a process may take to log its bound addresses (recovery of an empty dir is fast). */
const BIND_TIMEOUT_MS = 30_000;
/** SIGTERM grace before SIGKILL. */
const STOP_GRACE_MS = 10_000;
/** Lines of output kept for error messages. */
const TAIL_LINES = 20;

/** Every process the bench started that has not exited: killed if the bench itself is interrupted. */
const live = new Set<ChildProcess>();

/** Registers a process (target, load child, wrk) to be killed if the bench is interrupted. */
export function trackChild(p: ChildProcess): void {
  live.add(p);
  p.once('exit', () => live.delete(p));
}

/** SIGKILLs every tracked process still running (synchronous: safe in an 'exit' handler). */
export function killAllTargets(): void {
  for (const p of live) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  live.clear();
}

/**
 * For a bench entry point: the servers and load children it started die with it,
 * however it ends (its own exit, an uncaught error, Ctrl-C, SIGTERM, or the
 * reader of its output going away: `churn.js | head` ended in EPIPE and left the
 * server running).
 */
export function killChildrenOnExit(): void {
  process.on('exit', killAllTargets);
  exitQuietlyOnEpipe(process.stdout);
  exitQuietlyOnEpipe(process.stderr);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      killAllTargets();
      process.exit(130);
    });
  }
}

export type TargetKind = 'streamfeat' | 'uws_bare' | 'uws_hop' | 'tcp_echo' | 'tcp_hop';

export interface Target {
  kind: TargetKind;
  pid: number;
  httpPort: number | null;
  tcpPort: number | null;
  /** The admin sidecar's port, when the target was started with one. */
  adminPort: number | null;
  /** Last lines of stdout+stderr, for error messages. */
  tail(): string;
  exited(): boolean;
  stop(): Promise<void>;
}

export interface ServerOptions {
  /** Omitted = the server's default (cores - 1, min 1). */
  shards?: number;
  memoryOnly?: boolean;
  /** Omitted = the server's default ('batch'). */
  walSync?: string;
  extraArgs?: string[];
  /** Also bind the admin sidecar (on a free port): for runs that read per-thread figures from /api/stats. */
  admin?: boolean;
  /** Another build's dist/src/cli.js (a before/after run); default this build's. */
  cli?: string;
}

export function startServer(o: ServerOptions): Promise<Target> {
  const dataDir = mkdtempSync(join(tmpdir(), 'streamfeat-bench-'));
  const args = [o.cli ?? SERVER_CLI, 'serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--data-dir', dataDir];
  if (o.shards !== undefined) args.push('--shards', String(o.shards));
  if (o.memoryOnly) args.push('--memory-only');
  if (o.walSync !== undefined) args.push('--wal-sync', o.walSync);
  if (o.extraArgs) args.push(...o.extraArgs);
  // BENCH_SERVER_ARGS: extra `serve` flags for every streamfeat the bench starts, space-separated
  // (e.g. "--snapshot-interval 1s" to see what snapshots cost a soak's RSS).
  args.push(...(process.env.BENCH_SERVER_ARGS ?? '').split(' ').filter((a) => a !== ''));
  const want = ['server.http_bound', 'server.tcp_bound'];
  if (o.admin === true) {
    args.push('--admin-addr', '127.0.0.1:0');
    want.push('server.admin_bound');
  }
  return launch('streamfeat', args, want, () => rmSync(dataDir, { recursive: true, force: true }));
}

export function startUwsBare(): Promise<Target> {
  return launch('uws_bare', [UWS_BARE, '--http-addr', '127.0.0.1:0'], ['server.http_bound'], null);
}

/** uws_bare plus streamfeat's hop to one worker thread that spins `workUs` µs per request (the `ceiling` scenario). */
export function startUwsHop(workUs: number): Promise<Target> {
  return launch('uws_hop', [UWS_HOP, '--http-addr', '127.0.0.1:0', '--work-us', String(workUs)], ['server.http_bound'], null);
}

export function startTcpEcho(): Promise<Target> {
  return launch('tcp_echo', [TCP_ECHO, '--tcp-addr', '127.0.0.1:0'], ['server.tcp_bound'], null);
}

/** tcp_echo plus streamfeat's hop to one worker thread that spins `workUs` µs per frame (`ceiling --transport tcp`). */
export function startTcpHop(workUs: number): Promise<Target> {
  return launch('tcp_hop', [TCP_HOP, '--tcp-addr', '127.0.0.1:0', '--work-us', String(workUs)], ['server.tcp_bound'], null);
}

function portOf(addr: string): number {
  return Number(addr.slice(addr.lastIndexOf(':') + 1));
}

async function launch(kind: TargetKind, args: string[], want: string[], cleanup: (() => void) | null): Promise<Target> {
  const env = { ...process.env };
  // A bench run must never enable /reset by inheritance.
  delete env.SERVICE_TEST_MODE;
  // Profiling hooks for the measured servers only (not the bench runner or the load clients):
  // BENCH_SERVER_NODE_ARGS (space-separated node flags, e.g. --trace-gc or --cpu-prof) and
  // BENCH_SERVER_OUT (a file that receives every server's stdout and stderr lines).
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const proc: ChildProcess = spawn(process.execPath, [...nodeArgs, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  trackChild(proc);
  const tail: string[] = [];
  const outFile = process.env.BENCH_SERVER_OUT;
  const keep = (line: string): void => {
    if (outFile) appendFileSync(outFile, `${kind}: ${line}\n`);
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
  };
  const bound = new Map<string, string>();
  let onBound: (() => void) | null = null;
  let buf = '';
  // Drain stdout for the whole life of the process: a full pipe would stall the server.
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      keep(line);
      if (onBound === null || !line.includes('_bound')) continue;
      try {
        const j = JSON.parse(line) as { kind?: unknown; addr?: unknown };
        if (typeof j.kind === 'string' && typeof j.addr === 'string') bound.set(j.kind, j.addr);
      } catch {
        /* not JSON */
      }
      if (want.every((k) => bound.has(k))) onBound();
    }
  });
  proc.stderr!.on('data', (d: Buffer) => {
    for (const line of d.toString().split('\n')) if (line) keep(line);
  });
  const exit = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${kind} did not bind within ${BIND_TIMEOUT_MS} ms:\n${tail.join('\n')}`)), BIND_TIMEOUT_MS);
      onBound = () => {
        clearTimeout(timer);
        onBound = null;
        resolve();
      };
      void exit.then(() => {
        clearTimeout(timer);
        reject(new Error(`${kind} exited (code ${proc.exitCode}) before binding:\n${tail.join('\n')}`));
      });
    });
  } catch (err) {
    if (proc.exitCode === null) proc.kill('SIGKILL');
    cleanup?.();
    throw err;
  }
  const http = bound.get('server.http_bound');
  const tcp = bound.get('server.tcp_bound');
  const admin = bound.get('server.admin_bound');
  return {
    kind,
    pid: proc.pid!,
    httpPort: http === undefined ? null : portOf(http),
    tcpPort: tcp === undefined ? null : portOf(tcp),
    adminPort: admin === undefined ? null : portOf(admin),
    tail: () => tail.join('\n'),
    exited: () => proc.exitCode !== null || proc.signalCode !== null,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_GRACE_MS);
        await exit;
        clearTimeout(timer);
      }
      cleanup?.();
    },
  };
}
