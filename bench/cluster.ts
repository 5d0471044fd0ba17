/**
 * Cluster-mode bench (docs/cluster.md, bench/journal/2026-11-23-http-engines-cluster-windowed-ops.md):
 *
 *   node dist/bench/cluster.js [--duration S] [--connections C] [--nodes 1,3] [--partitions N]
 *
 * For each node count: a fresh nats-server (JetStream, file storage), that many
 * cluster nodes (1 shard each), a closed-loop HTTP push load over keep-alive
 * connections spread evenly over the nodes (throughput, p50/p99), then a batch_get
 * load the same way. Same-run baseline: one single-node server (memory-only: the
 * cluster nodes keep no local WAL either) under the same load. Finally, with the
 * largest node count, takeover: kill -9 one node under a light push load and time
 * until every key reads back its acked count from the survivors.
 * Everything runs on this machine: NATS, the nodes and the load generator share its cores.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Histogram } from './hist';
import { killChildrenOnExit, startServer, type Target } from './procs';

const NODES = [
  { kind: 'event', name: 'Pay', schema: { fields: { id: 'str', user: 'str', card: 'str', amount: 'f64' } } },
  { kind: 'table', name: 'ByUser', upstreams: ['Pay'], key: ['user'], agg: { n: { op: 'count', params: {} }, s: { op: 'sum', params: { field: 'amount', window: '1h' } } } },
  { kind: 'table', name: 'ByCard', upstreams: ['Pay'], key: ['card'], agg: { n: { op: 'count', params: {} } } },
];
const USERS = 10_000;
const CARDS = 20_000;

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : dflt;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = (s.address() as net.AddressInfo).port; s.close(() => resolve(p)); });
  });
}

async function startNats(): Promise<{ url: string; proc: ChildProcess; dir: string }> {
  if (spawnSync('sh', ['-c', 'command -v nats-server']).status !== 0) throw new Error('nats-server is not installed (apt-get install -y nats-server)');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'streamfeat-bench-nats-'));
  const proc = spawn('nats-server', ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const on = (d: Buffer): void => { out += d; if (out.includes('Server is ready')) resolve(); };
    proc.stdout!.on('data', on);
    proc.stderr!.on('data', on);
    proc.once('exit', () => reject(new Error(out)));
  });
  return { url: `nats://127.0.0.1:${port}`, proc, dir };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });

function post(port: number, path: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

let seq = 0;
function pushBody(): string {
  const i = seq++;
  return JSON.stringify({ event: 'Pay', data: { id: `b${i}`, user: `u${(i * 7919) % USERS}`, card: `c${(i * 104729) % CARDS}`, amount: 1 } });
}

function batchBody(): string {
  const requests = [];
  for (let k = 0; k < 20; k++) requests.push({ table: 'ByUser', key: `u${Math.floor(Math.random() * USERS)}` });
  return JSON.stringify({ requests });
}

interface LoadResult { ok: number; errors: number; rps: number; p50ms: number; p99ms: number }

/** Closed loop: `connections` loops, loop i always on node i mod n, for `seconds`. */
async function closedLoop(ports: number[], connections: number, seconds: number, path: string, body: () => string): Promise<LoadResult> {
  const hist = new Histogram();
  let ok = 0;
  let errors = 0;
  const end = Date.now() + seconds * 1000;
  await Promise.all(Array.from({ length: connections }, async (_, c) => {
    const port = ports[c % ports.length];
    while (Date.now() < end) {
      const t0 = performance.now();
      try {
        const r = await post(port, path, body());
        if (r.status === 200) { ok++; hist.record((performance.now() - t0) * 1000); } else errors++;
      } catch { errors++; }
    }
  }));
  const s = hist.summary();
  return { ok, errors, rps: ok / seconds, p50ms: s.p50 / 1000, p99ms: s.p99 / 1000 };
}

async function startCluster(url: string, n: number, partitions: number): Promise<Target[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => startServer({ shards: 1, extraArgs: ['--test-mode', '--cluster-url', url, '--node-id', `bench${i}`, '--partitions', String(partitions)] })));
}

async function register(port: number): Promise<void> {
  const r = await post(port, '/register', JSON.stringify({ nodes: NODES }));
  if (r.status !== 200) throw new Error(`register: ${r.text}`);
}

function fmt(label: string, r: LoadResult): string {
  return `| ${label} | ${Math.round(r.rps).toLocaleString('en-US')} | ${r.p50ms.toFixed(2)} | ${r.p99ms.toFixed(2)} | ${r.errors} |`;
}

/** Kill -9 one node under a light load; ms until survivors answer every touched key with its acked count. */
async function takeover(nodes: Target[]): Promise<{ agreeMs: number; acked: number }> {
  const expected = new Map<string, number>();
  const users = Array.from({ length: 200 }, (_, i) => `t${i}`);
  let stop = false;
  let acked = 0;
  const survivors = nodes.slice(0, -1).map((t) => t.httpPort!);
  const victim = nodes[nodes.length - 1];
  const loop = async (w: number): Promise<void> => {
    for (let k = 0; !stop; k++) {
      const user = users[(w * 31 + k) % users.length];
      const port = survivors[k % survivors.length];
      const r = await post(port, '/push', JSON.stringify({ event: 'Pay', data: { id: `t${w}-${k}`, user, card: 'c0', amount: 1 } })).catch(() => null);
      if (r?.status === 200) { expected.set(user, (expected.get(user) ?? 0) + 1); acked++; }
      await sleep(2);
    }
  };
  const loops = [0, 1, 2, 3].map(loop);
  await sleep(1000);
  process.kill(victim.pid, 'SIGKILL');
  const killedAt = Date.now();
  await sleep(500);
  stop = true;
  await Promise.all(loops);
  const body = JSON.stringify({ requests: users.map((u) => ({ table: 'ByUser', key: u })) });
  for (;;) {
    let good = true;
    for (const port of survivors) {
      const r = await post(port, '/batch_get', body).catch(() => null);
      if (r === null || r.status !== 200) { good = false; break; }
      const results = JSON.parse(r.text).results as Array<{ n?: number; error?: { code: string } }>;
      for (let i = 0; i < users.length; i++) {
        if ((results[i].n ?? 0) !== (expected.get(users[i]) ?? 0)) good = false;
      }
    }
    if (good) return { agreeMs: Date.now() - killedAt, acked };
    if (Date.now() - killedAt > 60_000) throw new Error('survivors never agreed');
    await sleep(20);
  }
}

async function main(): Promise<void> {
  const seconds = Number(arg('--duration', '5'));
  const connections = Number(arg('--connections', '64'));
  const counts = arg('--nodes', '1,3').split(',').map(Number);
  const partitions = Number(arg('--partitions', '16'));
  const lines: string[] = [];
  const out = (s: string): void => { process.stdout.write(s + '\n'); lines.push(s); };
  out(`cluster bench: ${seconds}s per run, ${connections} connections, ${partitions} partitions, fraud-like Pay event feeding 2 tables (user, card)`);
  out('| setup | req/s | p50 ms | p99 ms | errors |');
  out('|---|---:|---:|---:|---:|');

  const single = await startServer({ shards: 1, memoryOnly: true, extraArgs: ['--test-mode'] });
  await register(single.httpPort!);
  out(fmt('single node (memory-only), push', await closedLoop([single.httpPort!], connections, seconds, '/push', pushBody)));
  out(fmt('single node (memory-only), batch_get 20 keys', await closedLoop([single.httpPort!], connections, seconds, '/batch_get', batchBody)));
  await single.stop();

  let last: { nodes: Target[]; nats: Awaited<ReturnType<typeof startNats>> } | null = null;
  for (const n of counts) {
    const nats = await startNats();
    const nodes = await startCluster(nats.url, n, partitions);
    await register(nodes[0].httpPort!);
    await sleep(1500); // every node has installed the registry and replayed (empty) partitions
    const ports = nodes.map((t) => t.httpPort!);
    out(fmt(`${n} node(s), push`, await closedLoop(ports, connections, seconds, '/push', pushBody)));
    await sleep(1000);
    out(fmt(`${n} node(s), batch_get 20 keys`, await closedLoop(ports, connections, seconds, '/batch_get', batchBody)));
    if (last !== null) { await Promise.all(last.nodes.map((t) => t.stop())); last.nats.proc.kill('SIGTERM'); rmSync(last.nats.dir, { recursive: true, force: true }); }
    last = { nodes, nats };
  }
  if (last !== null && last.nodes.length > 1) {
    const t = await takeover(last.nodes);
    out('');
    out(`takeover (${last.nodes.length} nodes, kill -9 of one under ${t.acked} acked pushes to the survivors): every key reads its acked count from every survivor ${t.agreeMs} ms after the kill`);
    await Promise.all(last.nodes.slice(0, -1).map((x) => x.stop()));
  }
  if (last !== null) { last.nats.proc.kill('SIGTERM'); rmSync(last.nats.dir, { recursive: true, force: true }); }
  agent.destroy();
}

killChildrenOnExit();
main().then(() => process.exit(0), (err) => { process.stderr.write(`${(err as Error)?.stack ?? err}\n`); process.exit(1); });
