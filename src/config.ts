/**
 * Server configuration: command-line flags over environment variables over
 * defaults. Parsed once at boot; the result is frozen and passed to every thread.
 */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { BATCH_GET_ENTRIES_MAX_DEFAULT, CLUSTER_PARTITIONS_DEFAULT, CLUSTER_PARTITIONS_MAX, SHARDS_MAX, TCP_FRAME_BYTES_MAX_DEFAULT } from './limits';

export type WalSyncMode = 'batch' | 'always';
/** HTTP data plane: uWebSockets.js (default) or node:net (for pipelining clients; docs/wire.md). */
export type HttpEngine = 'uws' | 'net';
export const HTTP_ENGINES: readonly HttpEngine[] = ['uws', 'net'];

export interface ServerConfig {
  httpHost: string;
  httpPort: number;
  httpEngine: HttpEngine;
  tcpHost: string;
  tcpPort: number;
  /** Admin sidecar: off unless given. */
  adminHost: string | null;
  adminPort: number;
  dataDir: string;
  memoryOnly: boolean;
  testMode: boolean;
  shards: number;
  logLevel: string;
  walSync: WalSyncMode;
  walSyncTimeoutMs: number;
  /** fdatasync cadence in batch mode. */
  walSyncIntervalMs: number;
  walSegmentBytesMax: number;
  snapshotIntervalMs: number;
  batchGetEntriesMax: number;
  tcpFrameBytesMax: number;
  memoryGovEnforce: boolean;
  /** Test hook (SERVICE_FAULT_WAL_FILE): while this file exists, its content (ENOSPC, EIO, TRUNCATE) is injected as a WAL fault. */
  faultFile: string | null;
  /** Cluster mode (docs/cluster.md): null = single node (the default). */
  cluster: ClusterConfig | null;
}

export interface ClusterConfig {
  /** NATS server URL(s), comma-separated. */
  url: string;
  nodeId: string;
  partitions: number;
  /** Internal listener for reads forwarded by other nodes (advertised to them). */
  peerHost: string;
  peerPort: number;
}

export const DEFAULTS = {
  httpAddr: '127.0.0.1:8080',
  httpEngine: 'uws' as HttpEngine,
  tcpAddr: '127.0.0.1:8081',
  dataDir: './data',
  logLevel: 'info',
  walSync: 'batch' as WalSyncMode,
  walSyncTimeoutMs: 1000,
  walSyncIntervalMs: 5,
  walSegmentBytesMax: 64 * 1024 * 1024,
  snapshotIntervalMs: 60_000,
};

export class ConfigError extends Error {}

/** "host:port", ":port" or "port"; port 0 allowed. */
export function parseAddr(s: string, flag: string): { host: string; port: number } {
  const m = /^(?:\[?([^\]]*?)\]?:)?(\d{1,5})$/.exec(s.trim());
  if (m === null) throw new ConfigError(`${flag} must be HOST:PORT, got ${JSON.stringify(s)}`);
  const port = Number(m[2]);
  if (port > 65535) throw new ConfigError(`${flag} port out of range: ${port}`);
  return { host: m[1] === undefined || m[1] === '' ? '127.0.0.1' : m[1], port };
}

function positiveInt(s: string, name: string): number {
  if (!/^\d+$/.test(s) || Number(s) <= 0) throw new ConfigError(`${name} must be a positive integer, got ${JSON.stringify(s)}`);
  return Number(s);
}

/** Duration flag: plain milliseconds or the window grammar (500ms, 30s, 5m, 1h, 1d). */
export function parseDurationMs(s: string, name: string): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(s.trim());
  if (m === null) throw new ConfigError(`${name} must be a duration like 30s or 60000, got ${JSON.stringify(s)}`);
  const unit = m[2] ?? 'ms';
  const mult = unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : unit === 'h' ? 3_600_000 : 86_400_000;
  return Number(m[1]) * mult;
}

export const USAGE = `streamfeat serve [options]      start the server (the default command)
streamfeat wal-check [--data-dir DIR] [--json]   verify WAL, snapshots and registry log offline
streamfeat push|get|batch-get|register|ping|registry ...   client commands (--help on each)

serve options:

  --http-addr HOST:PORT       HTTP data plane (default ${DEFAULTS.httpAddr}; port 0 = any)
  --http-engine uws|net       HTTP engine: uWebSockets.js (default) or node:net, which
                              also answers pipelined requests (autocannon -p N; docs/wire.md)
  --tcp-addr HOST:PORT        framed TCP fast path (default ${DEFAULTS.tcpAddr})
  --admin-addr HOST:PORT      admin sidecar /health /ready /metrics /registry (off unless given)
  --data-dir DIR              WAL and snapshots (default ${DEFAULTS.dataDir})
  --memory-only               no WAL, no snapshots, no recovery
  --test-mode                 enable /reset (also SERVICE_TEST_MODE=1)
  --shards N                  shard worker threads (default max(1, cores-1))
  --log-level LEVEL           trace|debug|info|warn|error (default info)
  --wal-sync batch|always     ack after write (batch, default) or after fdatasync (always)
  --wal-sync-timeout-ms MS    always mode: wal_sync_timeout past this (default ${DEFAULTS.walSyncTimeoutMs})
  --snapshot-interval DUR     periodic snapshots (default 60s; 0 disables)

cluster mode (docs/cluster.md; --cluster-url turns it on and needs --node-id):

  --cluster-url nats://H:P    NATS JetStream server(s), comma-separated (also SERVICE_CLUSTER_URL)
  --node-id ID                this node's unique name in the cluster (also SERVICE_NODE_ID)
  --partitions N              partitions of the cluster (default ${CLUSTER_PARTITIONS_DEFAULT}; fixed per cluster)
  --peer-addr HOST:PORT       listener for reads forwarded by other nodes (default 127.0.0.1:0)

Environment: SERVICE_TEST_MODE, SERVICE_MAX_BATCH_GET, SERVICE_TCP_MAX_FRAME_BYTES,
SERVICE_MEMORY_GOV_ENFORCE (0 disables the lifetime-memory check; not for production),
SERVICE_SHARDS, SERVICE_DATA_DIR, SERVICE_LOG_LEVEL, SERVICE_HTTP_ENGINE, SERVICE_CLUSTER_URL, SERVICE_NODE_ID.
`;

export function parseServeArgs(argv: readonly string[], env: NodeJS.ProcessEnv): ServerConfig {
  const flags = new Map<string, string | true>();
  const valued = new Set(['--http-addr', '--http-engine', '--tcp-addr', '--admin-addr', '--data-dir', '--shards', '--log-level',
    '--wal-sync', '--wal-sync-timeout-ms', '--snapshot-interval', '--cluster-url', '--node-id', '--partitions', '--peer-addr']);
  const bare = new Set(['--memory-only', '--test-mode']);
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let v: string | undefined;
    const eq = a.indexOf('=');
    if (a.startsWith('--') && eq > 0) { v = a.slice(eq + 1); a = a.slice(0, eq); }
    if (bare.has(a)) flags.set(a, true);
    else if (valued.has(a)) {
      if (v === undefined) v = argv[++i];
      if (v === undefined) throw new ConfigError(`${a} needs a value`);
      flags.set(a, v);
    } else throw new ConfigError(`unknown option ${a}\n\n${USAGE}`);
  }
  const str = (f: string, e: string | undefined, d: string): string => {
    const x = flags.get(f);
    return typeof x === 'string' ? x : e !== undefined && e !== '' ? e : d;
  };
  const http = parseAddr(str('--http-addr', env.SERVICE_HTTP_ADDR, DEFAULTS.httpAddr), '--http-addr');
  const httpEngine = str('--http-engine', env.SERVICE_HTTP_ENGINE, DEFAULTS.httpEngine);
  if (!(HTTP_ENGINES as readonly string[]).includes(httpEngine)) throw new ConfigError(`--http-engine must be ${HTTP_ENGINES.join(' or ')}, got ${JSON.stringify(httpEngine)}`);
  const tcp = parseAddr(str('--tcp-addr', env.SERVICE_TCP_ADDR, DEFAULTS.tcpAddr), '--tcp-addr');
  const adminRaw = str('--admin-addr', env.SERVICE_ADMIN_ADDR, '');
  const admin = adminRaw === '' ? null : parseAddr(adminRaw, '--admin-addr');
  const shardsDefault = String(Math.max(1, availableParallelism() - 1));
  const shards = positiveInt(str('--shards', env.SERVICE_SHARDS, shardsDefault), '--shards');
  if (shards > SHARDS_MAX) throw new ConfigError(`--shards must be at most ${SHARDS_MAX}`);
  const walSync = str('--wal-sync', env.SERVICE_WAL_SYNC, DEFAULTS.walSync);
  if (walSync !== 'batch' && walSync !== 'always') throw new ConfigError('--wal-sync must be batch or always');
  const snapRaw = str('--snapshot-interval', env.SERVICE_SNAPSHOT_INTERVAL, String(DEFAULTS.snapshotIntervalMs));
  return Object.freeze({
    httpHost: http.host,
    httpPort: http.port,
    httpEngine: httpEngine as HttpEngine,
    tcpHost: tcp.host,
    tcpPort: tcp.port,
    adminHost: admin === null ? null : admin.host,
    adminPort: admin === null ? 0 : admin.port,
    dataDir: resolve(str('--data-dir', env.SERVICE_DATA_DIR, DEFAULTS.dataDir)),
    memoryOnly: flags.get('--memory-only') === true,
    testMode: flags.get('--test-mode') === true || env.SERVICE_TEST_MODE === '1' || env.SERVICE_TEST_MODE === 'true',
    shards,
    logLevel: str('--log-level', env.SERVICE_LOG_LEVEL, DEFAULTS.logLevel),
    walSync,
    walSyncTimeoutMs: positiveInt(str('--wal-sync-timeout-ms', env.SERVICE_WAL_SYNC_TIMEOUT_MS, String(DEFAULTS.walSyncTimeoutMs)), '--wal-sync-timeout-ms'),
    walSyncIntervalMs: DEFAULTS.walSyncIntervalMs,
    walSegmentBytesMax: env.SERVICE_WAL_SEGMENT_BYTES ? positiveInt(env.SERVICE_WAL_SEGMENT_BYTES, 'SERVICE_WAL_SEGMENT_BYTES') : DEFAULTS.walSegmentBytesMax,
    snapshotIntervalMs: snapRaw === '0' ? 0 : parseDurationMs(snapRaw, '--snapshot-interval'),
    batchGetEntriesMax: env.SERVICE_MAX_BATCH_GET ? positiveInt(env.SERVICE_MAX_BATCH_GET, 'SERVICE_MAX_BATCH_GET') : BATCH_GET_ENTRIES_MAX_DEFAULT,
    tcpFrameBytesMax: env.SERVICE_TCP_MAX_FRAME_BYTES ? positiveInt(env.SERVICE_TCP_MAX_FRAME_BYTES, 'SERVICE_TCP_MAX_FRAME_BYTES') : TCP_FRAME_BYTES_MAX_DEFAULT,
    memoryGovEnforce: env.SERVICE_MEMORY_GOV_ENFORCE !== '0',
    faultFile: env.SERVICE_FAULT_WAL_FILE ? resolve(env.SERVICE_FAULT_WAL_FILE) : null,
    cluster: parseCluster(str, env),
  });
}

/** Cluster flags: --cluster-url turns cluster mode on and then needs --node-id. */
function parseCluster(str: (flag: string, envValue: string | undefined, dflt: string) => string, env: NodeJS.ProcessEnv): ClusterConfig | null {
  const url = str('--cluster-url', env.SERVICE_CLUSTER_URL, '');
  const nodeId = str('--node-id', env.SERVICE_NODE_ID, '');
  const partitionsRaw = str('--partitions', undefined, '');
  const peerRaw = str('--peer-addr', undefined, '');
  if (url === '') {
    if (nodeId !== '' || partitionsRaw !== '' || peerRaw !== '') throw new ConfigError('--node-id, --partitions and --peer-addr need --cluster-url (cluster mode)');
    return null;
  }
  if (!/^(nats|tls|wss?):\/\/\S+$/.test(url.split(',')[0].trim())) throw new ConfigError(`--cluster-url must be nats://HOST:PORT, got ${JSON.stringify(url)}`);
  if (nodeId === '') throw new ConfigError('cluster mode needs --node-id (or SERVICE_NODE_ID)');
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(nodeId)) throw new ConfigError(`--node-id must be 1-64 of [A-Za-z0-9_-], got ${JSON.stringify(nodeId)}`);
  const partitions = partitionsRaw === '' ? CLUSTER_PARTITIONS_DEFAULT : positiveInt(partitionsRaw, '--partitions');
  if (partitions > CLUSTER_PARTITIONS_MAX) throw new ConfigError(`--partitions must be at most ${CLUSTER_PARTITIONS_MAX}`);
  const peer = parseAddr(peerRaw === '' ? '127.0.0.1:0' : peerRaw, '--peer-addr');
  return { url, nodeId, partitions, peerHost: peer.host, peerPort: peer.port };
}
