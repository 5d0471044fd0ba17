/**
 * A real nats-server with JetStream for cluster-mode tests. Installs it with
 * apt-get when absent (tests never skip for a missing component).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { TestServer } from './server';

export function ensureNatsServer(): string {
  const which = (): string => spawnSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' }).stdout.trim();
  let path = which();
  if (path !== '') return path;
  let r = spawnSync('apt-get', ['install', '-y', 'nats-server'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (r.status !== 0) {
    spawnSync('apt-get', ['update'], { stdio: 'inherit' });
    r = spawnSync('apt-get', ['install', '-y', 'nats-server'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
  path = which();
  if (path === '') throw new Error('nats-server is not installed and apt-get install -y nats-server failed');
  return path;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface TestNats {
  url: string;
  port: number;
  dir: string;
  /** (Re)starts the server on the same port and store directory. */
  start(): Promise<void>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
  cleanup(): void;
}

export async function startNats(): Promise<TestNats> {
  const bin = ensureNatsServer();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'streamfeat-nats-'));
  let proc: ChildProcess | null = null;
  const nats: TestNats = {
    url: `nats://127.0.0.1:${port}`,
    port,
    dir,
    async start() {
      const p = spawn(bin, ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
      proc = p;
      await new Promise<void>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`nats-server did not start: ${out}`)), 20_000);
        const onData = (d: Buffer): void => {
          out += d.toString();
          if (out.includes('Server is ready')) { clearTimeout(timer); resolve(); }
        };
        p.stderr!.on('data', onData);
        p.stdout!.on('data', onData);
        p.once('exit', (code) => { clearTimeout(timer); reject(new Error(`nats-server exited (${code}): ${out}`)); });
      });
      p.removeAllListeners('exit');
    },
    async stop() {
      const p = proc;
      proc = null;
      if (p === null || p.exitCode !== null) return;
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      await exited;
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await nats.start();
  return nats;
}

/**
 * The fixture of a cluster test file: before its tests a nats-server (handed to
 * `onNats`, which node starters read the URL from) and one node per slot of
 * `nodes` (started by `start`); after them every node still running is stopped and
 * NATS stopped and removed.
 */
/**
 * Waits until every node's latest partition assignment names every node (a node
 * logs it whenever the live node set changes: src/cluster/membership.ts). Nodes
 * started together join about one membership poll apart; a test that loads the
 * cluster before the last one joined has its first load owned by fewer nodes
 * than it assumes (a survivor then regains a partition it held before the late
 * joiner took it, and resumes from its own state rather than the checkpoint).
 */
export async function fullMembership(servers: readonly TestServer[], timeoutMs: number): Promise<void> {
  const t0 = Date.now();
  const full = (s: TestServer): boolean => {
    const last = s.logs.filter((l) => l.kind === 'cluster.partitions_assigned').pop();
    return Array.isArray(last?.nodes) && last.nodes.length === servers.length;
  };
  while (!servers.every(full)) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`cluster membership incomplete after ${timeoutMs} ms: ${servers.map((s) => JSON.stringify(s.logs.filter((l) => l.kind === 'cluster.partitions_assigned').pop()?.nodes ?? [])).join(' ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function useCluster(nodes: Array<TestServer | null>, start: (i: number) => Promise<TestServer>, onNats: (n: TestNats) => void): void {
  let nats: TestNats | null = null;
  before(async () => {
    nats = await startNats();
    onNats(nats);
    const started = await Promise.all(nodes.map((_, i) => start(i)));
    started.forEach((s, i) => { nodes[i] = s; });
    await fullMembership(started, 15_000);
  });
  after(async () => {
    await Promise.all(nodes.filter((n): n is TestServer => n !== null).map((n) => n.stop()));
    await nats?.stop();
    nats?.cleanup();
  });
}
