/**
 * Starts the real server as a child process on free ports (port 0) and finds
 * its addresses from the `server.*_bound` log lines, as any tool would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';

export const CLI = join(__dirname, '..', '..', 'src', 'cli.js');

/**
 * HTTP engine of every server the harness starts: SF_TEST_HTTP_ENGINE=net runs
 * a black-box file against the node:net engine (scripts/run_tests.js does so for
 * the HTTP files); unset means the server's default (uws).
 */
export const HTTP_ENGINE: 'uws' | 'net' = process.env.SF_TEST_HTTP_ENGINE === 'net' ? 'net' : 'uws';

export interface StartOptions {
  shards?: number;
  memoryOnly?: boolean;
  testMode?: boolean;
  admin?: boolean;
  dataDir?: string;
  args?: string[];
  env?: Record<string, string>;
  /** `*_bound` lines beyond HTTP, TCP and admin to wait for (cluster mode's server.peer_bound). */
  extraBound?: number;
  /** Start the server with this descriptor limit (RLIMIT_NOFILE, soft and hard), as `ulimit -n` would. */
  nofile?: number;
}

export interface TestServer {
  base: string;
  httpPort: number;
  tcpPort: number;
  adminBase: string | null;
  dataDir: string;
  proc: ChildProcess;
  logs: Array<Record<string, unknown>>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<number | null>;
  /** SIGKILL (crash) and wait for exit. */
  kill9(): Promise<void>;
  /** Removes the data dir (only when the harness created it). */
  cleanup(): void;
}

/** Calls `fn` with each JSON line of a child's stdout (log lines); other lines are skipped. */
export function onJsonLines(stream: NodeJS.ReadableStream, fn: (line: Record<string, any>) => void): void {
  let buf = '';
  stream.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      let j: Record<string, any>;
      try { j = JSON.parse(line) as Record<string, any>; } catch { continue; /* not JSON */ }
      fn(j);
    }
  });
}

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'streamfeat-test-'));
}

/**
 * One server for a whole test file: started before its first test, stopped and its
 * data dir removed after its last. The object answers as the started server does
 * (`srv.base`, `srv.tcpPort`, ...) from inside a test.
 */
export function serverForFile(opts: StartOptions = {}): TestServer {
  let started: TestServer | null = null;
  before(async () => { started = await startServer(opts); });
  after(async () => {
    if (started === null) return;
    await started.stop();
    started.cleanup();
  });
  return new Proxy({} as TestServer, {
    get(_target, name) {
      if (started === null) throw new Error('serverForFile: the server starts before the first test; use it inside a test');
      const v = (started as unknown as Record<string | symbol, unknown>)[name];
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(started) : v;
    },
  });
}

export async function startServer(opts: StartOptions = {}): Promise<TestServer> {
  const ownDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? tempDataDir();
  const args = [CLI, 'serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--data-dir', dataDir,
    '--shards', String(opts.shards ?? 1), '--log-level', 'info'];
  if (opts.memoryOnly) args.push('--memory-only');
  if (opts.testMode ?? true) args.push('--test-mode');
  if (opts.admin) args.push('--admin-addr', '127.0.0.1:0');
  if (HTTP_ENGINE !== 'uws') args.push('--http-engine', HTTP_ENGINE);
  if (opts.args) args.push(...opts.args);
  const env = { ...process.env, ...(opts.env ?? {}) };
  delete env.SERVICE_TEST_MODE;
  if (opts.env?.SERVICE_TEST_MODE) env.SERVICE_TEST_MODE = opts.env.SERVICE_TEST_MODE;
  // sh's ulimit, then exec: the server keeps the pid the harness signals.
  const proc = opts.nofile === undefined
    ? spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn('/bin/sh', ['-c', `ulimit -n ${opts.nofile} && exec "$0" "$@"`, process.execPath, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  proc.stderr!.on('data', (d) => { stderr += d; });
  const bound: Record<string, string> = {};
  const want = (opts.admin ? 3 : 2) + (opts.extraBound ?? 0);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not bind in time; stderr: ${stderr}`)), 30_000);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited (${code}) before binding; stderr: ${stderr}`)); });
    onJsonLines(proc.stdout!, (j) => {
      logs.push(j);
      if (typeof j.kind === 'string' && j.kind.endsWith('_bound')) {
        bound[j.kind] = j.addr as string;
        if (Object.keys(bound).length === want) { clearTimeout(timer); resolve(); }
      }
    });
  });
  proc.removeAllListeners('exit');
  const port = (a: string): number => Number(a.slice(a.lastIndexOf(':') + 1));
  const httpPort = port(bound['server.http_bound']);
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return {
    base: `http://127.0.0.1:${httpPort}`,
    httpPort,
    tcpPort: port(bound['server.tcp_bound']),
    adminBase: opts.admin ? `http://127.0.0.1:${port(bound['server.admin_bound'])}` : null,
    dataDir,
    proc,
    logs,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      return exited;
    },
    async kill9() {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      await exited;
    },
    cleanup() {
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export async function post(base: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  const payload = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const res = await fetch(base + path, { method: 'POST', body: payload, headers: { 'content-type': 'application/json', ...headers } });
  const text = await res.text();
  let json: unknown;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, text, json };
}

export async function get(base: string, path: string): Promise<HttpResult> {
  const res = await fetch(base + path);
  const text = await res.text();
  let json: unknown;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, text, json };
}
