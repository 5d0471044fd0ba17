/**
 * Who owns what (README "How it is built", with the files):
 *
 *   front/http.ts (uWS)  front/http_net.ts (node:net)    front/tcp.ts (framed TCP)
 *             \ front/http_routes.ts /                      /
 *              +---------- front/requests.ts --------------+   parse JSON, envelope rule
 *                               |
 *   front thread   front/front.ts      push (validate: registry/push_validator.ts), get,
 *                                      batch_get, ping
 *                  front/dedupe.ts     dedupe of pushes: replay answers, full-store
 *                                      refusal, reseed from the shards at boot
 *                  front/lsn.ts        the LSN sequence of pushes and registry items,
 *                                      seeded above what the shards recovered
 *                  front/control.ts    register/install/reset, snapshot, drain,
 *                                      shard recovery (coordinator via protocol/coordinator_calls.ts)
 *                  front/push_text.ts  common push bodies read from their bytes straight
 *                                      into PUSH records (others: JSON.parse, as above)
 *                  front/routing.ts    key -> shard, one binary PUSH record per shard
 *                  front/channel.ts    one batch per shard per turn, sent on the shard's
 *                                      pipe (a MessagePort; protocol/shard_calls.ts)
 *                  front/sinks.ts, front/push.ts   who waits for shard answers
 *                               | ShardBatchWire (PUSH records as latin1 text + items) | answers, in order
 *   shard threads  shard/shard_main.ts (entry: recover, timers) -> shard/shard.ts (batches)
 *   (one each)     shard/state/    push_apply.ts (PUSH records -> state), state.ts (entity
 *                                  index, reads, installs)
 *                  shard/columns/  columnar feature state: shared rings, kept/solo columns
 *                  shard/cold/     cold store (idle entities frozen, on disk or in memory)
 *                  shard/persist/  store.ts + wal/* (WAL segments, snapshots, recovery)
 *
 *   coordinator    coordinator/coordinator_main.ts (entry) -> coordinator/register.ts:
 *   thread         the only writer of the registry; wal/registry_log.ts
 *
 *   cluster/*      cluster mode only (--cluster-url): NATS JetStream is the log
 *                  (front/cluster_hooks.ts are its seams into the front)
 *   admin/*        admin sidecar (--admin-addr): dashboard, /metrics, stats, inspect
 *
 * Boot and shutdown of the whole server:
 *
 *   0. bind the (optional) admin listener: /health answers and /ready says
 *      "recovering" while the rest boots (lifecycle.ts)
 *   1. coordinator thread: recover the registry log
 *   2. one piscina pool (one thread) per shard: each recovers its snapshot + WAL
 *      (logging shard.recovery_progress at least once a second)
 *   3. front: judge what recovery proved lost (coordinator/boot_losses.ts: refuse,
 *      exit 2, unless --accept-data-loss), compile the registry, seed LSN and dedupe
 *      from the shards; server time not behind the newest time they recovered
 *      (clock/, docs/time.md)
 *   4. size the HTTP and TCP connection caps to the descriptor limit (fd_budget.ts,
 *      logged as server.fd_budget), bind HTTP and TCP; /ready turns 200
 * Each listener logs one `server.*_bound` line.
 *
 * Shutdown (close()): /ready says "draining", stop accepting data, drain
 * channels, snapshot every shard, close the shard pipes and pools, close the admin
 * listener last.
 * The deadline on all of it is the caller's (serve_cli.ts).
 *
 * Before 1, a disk-mode server makes and checks its data dir (data_dir.ts: any
 * problem is one line naming the path and the fix) and locks it (data_dir_lock.ts);
 * listeners are exclusive. Any of these is a StartupError (exit code 2). Shutdown
 * releases the lock.
 */
import type net from 'node:net';
import Piscina from 'piscina';
import uWS from 'uWebSockets.js';
import { buildAdminApp } from './admin/admin';
import { Metrics } from './admin/metrics';
import { StatsCollector } from './admin/stats';
import type { ServerConfig } from './config';
import { buildHttpApp } from './front/http';
import { buildNetHttpServer } from './front/http_net';
import { Front } from './front/front';
import { lastRecoveredLsn } from './front/lsn';
import { buildTcpServer } from './front/tcp';
import { isLoopback, loadAuth, type Auth } from './front/auth';
import { checkDataDir, prepareDataDir } from './data_dir';
import { lockDataDir, type DataDirLock } from './data_dir_lock';
import { StartupError } from './startup_error';
import { createLogger, type Logger } from './log';
import { ACCEPT_ERROR_LOG_INTERVAL_MS, DEDUPE_SWEEP_INTERVAL_MS, HTTP_CONNECTIONS_MAX_DEFAULT, TCP_CONNECTIONS_MAX_DEFAULT } from './limits';
import { descriptorBudget, nofileLimit, openDescriptors, type FdBudget } from './fd_budget';
import type { ClusterNode } from './cluster/node';
import { Lifecycle } from './lifecycle';
import type { AdminContext } from './admin/context';
import type { CoordinatorInit, ShardInit } from './protocol/messages';
import { runCoordinator, startCoordinatorPool } from './protocol/coordinator_calls';
import { runShardHello, startShardPool } from './protocol/shard_calls';
import { startTimeline } from './timeline';
import { ClockFault, ClockWatch, ServerClock } from './clock';
import { settleBootLosses, type BootLossOutcome } from './coordinator/boot_losses';
import type { RegistryWire } from './registry/wire';
import { setStringBytesMax } from './string_cap';
import { formatAddr } from './util/host_port';
import { ServedRowLog } from './training/served_log';

export { Lifecycle };

export interface RunningServer {
  httpPort: number;
  tcpPort: number;
  adminPort: number | null;
  front: Front;
  close(): Promise<void>;
}

/** ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT of uWS (its typings declare the enum; the module does not export it). */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;
/** uWS's listen with options after host and port (the typings lack that overload). */
type ListenWithOptions = (host: string, port: number, options: number, cb: (token: uWS.us_listen_socket | false) => void) => void;

/**
 * Exclusive listen (no SO_REUSEPORT, uWS's default): a second server on the same
 * port fails here instead of silently sharing it.
 */
function listenUws(app: uWS.TemplatedApp, what: string, host: string, port: number): Promise<{ token: uWS.us_listen_socket; port: number }> {
  return new Promise((resolve, reject) => {
    (app.listen as unknown as ListenWithOptions).call(app, host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, (token) => {
      if (token === false) reject(new StartupError(`cannot listen for ${what} on ${formatAddr(host, port)}: the port is in use (another server?) or the address is not on this host`));
      else resolve({ token, port: uWS.us_socket_local_port(token) });
    });
  });
}

function listenNet(server: net.Server, what: string, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const fail = (err: NodeJS.ErrnoException): void => {
      const why = err.code === 'EADDRINUSE' ? 'the port is in use (another server?)' : err.code === 'EADDRNOTAVAIL' ? 'the address is not on this host' : err.message;
      reject(new StartupError(`cannot listen for ${what} on ${formatAddr(host, port)}: ${why}`));
    };
    server.once('error', fail);
    server.listen({ port, host, exclusive: true }, () => {
      server.off('error', fail);
      resolve((server.address() as net.AddressInfo).port);
    });
  });
}

/** The HTTP data plane on the configured engine (docs/wire.md "HTTP engines"), at most `connectionsMax` connections open. */
async function listenHttp(front: Front, config: ServerConfig, connectionsMax: number): Promise<{ port: number; close(): void }> {
  if (config.httpEngine === 'net') {
    const server = buildNetHttpServer(front, connectionsMax);
    const port = await listenNet(server, 'HTTP', config.httpAddr.host, config.httpAddr.port);
    acceptErrorsLogged(server, front.log, 'HTTP');
    return { port, close: () => server.close() };
  }
  const { token, port } = await listenUws(buildHttpApp(front, connectionsMax), 'HTTP', config.httpAddr.host, config.httpAddr.port);
  return { port, close: () => uWS.us_listen_socket_close(token) };
}

/** The registry version boot made above lost ones (boot_losses.ts), installed on every shard before serving. */
function installRaised(front: Front, wire: RegistryWire): Promise<void> {
  return new Promise((resolve, reject) => {
    front.control.install(wire, [], (err) => (err === null ? resolve() : reject(new Error(`registry install at boot failed: ${err.code}`))));
  });
}

/**
 * A node:net listener whose accept() fails emits 'error', which would end the process
 * (with no listener); it is logged instead, and the listener keeps accepting. (At
 * EMFILE libuv itself accepts and closes what it cannot keep, without an error.)
 */
function acceptErrorsLogged(server: net.Server, log: Logger, what: string): void {
  let last = -Infinity;
  let missed = 0;
  server.on('error', (err: NodeJS.ErrnoException) => {
    const now = performance.now();
    if (now - last < ACCEPT_ERROR_LOG_INTERVAL_MS) { missed++; return; }
    log.error({ kind: 'server.accept_failed', listener: what, code: err.code, message: err.message, since_last_logged: missed });
    last = now;
    missed = 0;
  });
}

/** The served-row log of --served-log-dir (null: off); a directory it cannot write stops the boot. */
function openServedLog(config: ServerConfig, log: Logger): ServedRowLog | null {
  const c = config.servedLog;
  if (c === null) return null;
  try {
    return ServedRowLog.open(c, log);
  } catch (err) {
    throw new StartupError(`cannot open the served-row log in ${c.dir}: ${(err as Error).message}`);
  }
}

/**
 * Boots the server. `lifecycle` may be passed in to watch the phase from outside
 * (serve_cli.ts stops a boot that is still recovering without waiting for it).
 */
export async function startServer(config: ServerConfig, log: Logger = createLogger(config.logLevel), lifecycle = new Lifecycle()): Promise<RunningServer> {
  // Cluster mode: the JetStream stream is the log, so local shards and the
  // coordinator keep no WAL or registry log of their own (docs/cluster.md).
  if (config.cluster !== null) config = { ...config, memoryOnly: true };
  startTimeline('front'); // STREAMFEAT_DEBUG_TIMELINE only (timeline.ts)
  const auth = loadAuth(config.authTokenFile);
  let lock: DataDirLock | null = null;
  if (!config.memoryOnly) {
    prepareDataDir(config.dataDir);
    lock = lockDataDir(config.dataDir);
  }
  try {
    return await start(config, log, lock, auth, lifecycle);
  } catch (err) {
    lock?.release();
    throw err;
  }
}

/**
 * `server.fd_budget`: the limit, the reserve and both caps. At warn when a cap the operator
 * set was lowered to fit; a default cap lowered is only listed (`lowered`), at info.
 */
function logBudget(log: Logger, b: FdBudget): void {
  const line = {
    kind: 'server.fd_budget', nofile_limit: b.limit, fds_in_use: b.inUse, fds_reserved: b.reserve,
    http_connections_max: b.httpConnectionsMax, tcp_connections_max: b.tcpConnectionsMax, lowered: b.lowered,
  };
  const defaults: Record<string, number> = { 'http-connections-max': HTTP_CONNECTIONS_MAX_DEFAULT, 'tcp-connections-max': TCP_CONNECTIONS_MAX_DEFAULT };
  const set = b.lowered.filter((l) => l.asked !== defaults[l.setting]);
  if (set.length === 0) { log.info(line); return; }
  log.warn(line, `${set.map((l) => `--${l.setting} ${l.asked} lowered to ${l.got}`).join(', ')} to fit the descriptor limit ${b.limit} (docs/security.md)`);
}

async function start(config: ServerConfig, log: Logger, lock: DataDirLock | null, auth: Auth | null, lifecycle: Lifecycle): Promise<RunningServer> {
  if (!config.memoryOnly) checkDataDir(config.dataDir, config.shards);
  let adminCtx: AdminContext | null = null;
  let admin: { token: uWS.us_listen_socket; port: number } | null = null;
  if (config.adminAddr !== null) {
    admin = await listenUws(buildAdminApp(() => adminCtx, () => lifecycle.readiness()), 'admin', config.adminAddr.host, config.adminAddr.port);
    log.info({ kind: 'server.admin_bound', addr: formatAddr(config.adminAddr.host, admin.port) });
    if (!isLoopback(config.adminAddr.host)) {
      log.warn({ kind: 'server.admin_exposed', addr: formatAddr(config.adminAddr.host, admin.port) }, 'the admin sidecar has no authentication and is bound to a non-loopback address (docs/security.md)');
    }
  }
  const coordinatorInit: CoordinatorInit = {
    dataDir: config.dataDir, memoryOnly: config.memoryOnly, memoryGovEnforce: config.memoryGovEnforce, logLevel: config.logLevel, stringBytesMax: config.stringBytesMax,
    clockFaultFile: config.clockFaultFile,
  };
  // Server time: owned by this thread, the only one that reads the wall clock; shards read the same clock.
  const clockFault = ClockFault.install(config.clockFaultFile); // test hook only: null in production
  const clock = ServerClock.owner();
  // The front is this thread: its string cap is set before it compiles a registry (string_cap.ts).
  setStringBytesMax(config.stringBytesMax);
  const coordinator = startCoordinatorPool(coordinatorInit);
  const first = await runCoordinator(coordinator, { kind: 'state' });
  if (!first.ok) throw new Error(`coordinator failed to start: ${first.error.code}`);
  const shardPools: Piscina[] = [];
  for (let i = 0; i < config.shards; i++) {
    const init: ShardInit = {
      shardId: i, shardCount: config.shards, dataDir: config.dataDir, memoryOnly: config.memoryOnly,
      memoryLimitBytes: Math.floor(config.memoryLimitBytes / config.shards),
      memoryGovEnforce: config.memoryGovEnforce, logLevel: config.logLevel, stringBytesMax: config.stringBytesMax, walSync: config.walSync,
      walSyncTimeoutMs: config.walSyncTimeoutMs, walSyncIntervalMs: config.walSyncIntervalMs,
      walSegmentBytesMax: config.walSegmentBytesMax, faultFile: config.faultFile, clockFaultFile: config.clockFaultFile, history: first.history, current: first.state,
      partitions: config.cluster?.partitions ?? 0, clock: clock.shared,
    };
    shardPools.push(startShardPool(init));
  }
  const hellos = await Promise.all(shardPools.map((p) => runShardHello(p)));
  // Proven losses stop the boot here (exit 2) unless accepted (coordinator/boot_losses.ts).
  let settled: BootLossOutcome;
  try {
    settled = await settleBootLosses(coordinator, first, hellos, config.dataDir, config.acceptDataLoss, log);
  } catch (err) {
    await Promise.all([coordinator.destroy(), ...shardPools.map((p) => p.destroy())]);
    throw err;
  }
  const lastLsn = lastRecoveredLsn(hellos);
  const metrics = new Metrics();
  const clockWatch = new ClockWatch(clock, metrics, log);
  clockWatch.raiseTo(Math.max(0, ...hellos.map((h) => h.lastTimeMs)));
  clockWatch.start();
  const servedLog = openServedLog(config, log);
  const front = new Front(
    { testMode: config.testMode, auth, memoryGovEnforce: config.memoryGovEnforce, batchGetEntriesMax: config.batchGetEntriesMax, dedupeEntriesMax: config.dedupeEntriesMax, servedLog },
    coordinator, shardPools, first.state, lastLsn, metrics, log, clock,
  );
  const bootMs = clock.nowMs();
  for (const h of hellos) front.dedupe.reseed(h.dedupe, bootMs);
  if (settled.raised !== null) await installRaised(front, settled.raised);
  // An accepted loss is made durable: every shard snapshots now, so the next boot starts past it.
  if (settled.accepted.length > 0) await front.control.snapshot(true);
  log.info({ kind: 'server.recovered', registry_version: front.registry.version, last_lsn: lastLsn, records: hellos.reduce((a, h) => a + h.recoveredRecords, 0), shards: config.shards });
  let cluster: ClusterNode | null = null;
  if (config.cluster !== null) {
    try {
      // Loaded only in cluster mode: a single node never loads the NATS client.
      const { startClusterNode } = await import('./cluster/node');
      cluster = await startClusterNode(config.cluster, front, log);
    } catch (err) {
      for (const ch of front.channels) ch.close();
      await Promise.all([coordinator.destroy(), ...shardPools.map((p) => p.destroy())]);
      throw err;
    }
  }

  const budget = descriptorBudget(nofileLimit(), openDescriptors(), config.shards, config.httpConnectionsMax, config.tcpConnectionsMax);
  logBudget(log, budget);
  const http = await listenHttp(front, config, budget.httpConnectionsMax);
  log.info({ kind: 'server.http_bound', addr: formatAddr(config.httpAddr.host, http.port), engine: config.httpEngine });
  const tcpServer = buildTcpServer(front, {
    frameBytesMax: config.tcpFrameBytesMax, frameTimeoutMs: config.tcpFrameTimeoutMs,
    idleTimeoutMs: config.tcpIdleTimeoutMs, connectionsMax: budget.tcpConnectionsMax, authTimeoutMs: config.tcpAuthTimeoutMs,
  });
  const tcpPort = await listenNet(tcpServer, 'TCP', config.tcpAddr.host, config.tcpAddr.port);
  acceptErrorsLogged(tcpServer, log, 'TCP');
  log.info({ kind: 'server.tcp_bound', addr: formatAddr(config.tcpAddr.host, tcpPort) });
  const stats = new StatsCollector(front);
  stats.start();
  adminCtx = { front, stats, memoryOnly: config.memoryOnly, walSync: config.walSync, dataDir: config.dataDir };
  lifecycle.serving(front.channels);
  if (auth === null) {
    for (const [what, host, port] of [['HTTP', config.httpAddr.host, http.port], ['TCP', config.tcpAddr.host, tcpPort]] as const) {
      if (!isLoopback(host)) log.warn({ kind: 'server.unauthenticated', addr: formatAddr(host, port) }, `${what} is bound to a non-loopback address without --auth-token-file: anyone who reaches it can register, push and read (docs/security.md)`);
    }
  }

  const sweep = setInterval(() => front.dedupe.store.sweep(performance.now()), DEDUPE_SWEEP_INTERVAL_MS);
  sweep.unref();
  let snapTimer: NodeJS.Timeout | null = null;
  if (!config.memoryOnly && config.snapshotIntervalMs > 0) {
    snapTimer = setInterval(() => { void front.control.snapshot(false); }, config.snapshotIntervalMs);
    snapTimer.unref();
  }

  let closed = false;
  return {
    httpPort: http.port,
    tcpPort,
    adminPort: admin?.port ?? null,
    front,
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      lifecycle.draining();
      await cluster?.close();
      clearInterval(sweep);
      clockWatch.stop();
      clockFault?.uninstall();
      if (snapTimer !== null) clearInterval(snapTimer);
      http.close();
      tcpServer.close();
      await front.control.drain();
      if (!config.memoryOnly) await front.control.snapshot(true);
      await front.control.drain();
      stats.stop();
      await servedLog?.close();
      // The shard pipes end their serve tasks first: destroying a pool fails a task still open.
      for (const ch of front.channels) ch.close();
      await Promise.all([coordinator.destroy(), ...shardPools.map((p) => p.destroy())]);
      lock?.release();
      // Last: /ready says "draining" to the end; then the port is free for the next process.
      if (admin !== null) uWS.us_listen_socket_close(admin.token);
      log.info({ kind: 'server.stopped' });
    },
  };
}
