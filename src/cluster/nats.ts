/**
 * The node's NATS connection and the cluster's JetStream objects: the event
 * stream, the metadata bucket (partition count, registry), the nodes bucket and the
 * checkpoint object store.
 * Created idempotently by whichever node starts first. Tracks whether the
 * connection is up, so that pushes fail fast (wal_unavailable) while NATS is
 * unreachable instead of queueing in the client's reconnect buffer.
 */
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { Objm, type ObjectStore } from '@nats-io/obj';
import type { Logger } from '../log';
import { CLUSTER_DEDUPE_WINDOW_MS, CLUSTER_NODE_TTL_MS } from '../limits';
import { CHECKPOINT_BUCKET, EVENT_STREAM, EVENT_SUBJECT_PREFIX, META_BUCKET, META_PARTITIONS_KEY, NODES_BUCKET } from './names';

export class ClusterSetupError extends Error {}

/** The client's connection type (its declaration sits behind a package subpath tsc's node resolution does not read). */
export type NatsConnection = Awaited<ReturnType<typeof connect>>;

/** A request received on a core NATS subscription. */
export interface NatsRequest {
  json<T>(): T;
  respond(data?: string): boolean;
}

const nanos = (ms: number): number => ms * 1_000_000;

export interface NatsHandles {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  meta: KV;
  nodes: KV;
  /** Partition checkpoints (cluster/checkpoint.ts). */
  checkpoints: ObjectStore;
  /** False between a disconnect and the next reconnect. */
  readonly up: boolean;
}

class Handles implements NatsHandles {
  up = true;
  constructor(readonly nc: NatsConnection, readonly js: JetStreamClient, readonly jsm: JetStreamManager, readonly meta: KV, readonly nodes: KV, readonly checkpoints: ObjectStore) {}
}

export async function openNats(url: string, nodeId: string, partitions: number, log: Logger): Promise<NatsHandles> {
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: url.split(',').map((s) => s.trim()), name: `streamfeat-${nodeId}`, maxReconnectAttempts: -1, reconnectTimeWait: 250, pingInterval: 2_000, maxPingOut: 2 });
  } catch (err) {
    throw new ClusterSetupError(`cannot reach NATS at ${url}: ${(err as Error).message}`);
  }
  let h: Handles;
  try {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    await ensureStream(jsm);
    const kvm = new Kvm(nc);
    const meta = await kvm.create(META_BUCKET, { history: 1, storage: StorageType.File });
    // File storage: the bucket (not its expiring entries) must survive a NATS restart.
    const nodes = await kvm.create(NODES_BUCKET, { history: 1, ttl: CLUSTER_NODE_TTL_MS, storage: StorageType.File });
    await checkPartitions(meta, partitions);
    // File storage like the event stream: a checkpoint must outlive a NATS restart, since the
    // stream may later be bounded by it (docs/cluster.md "Checkpoints").
    const checkpoints = await new Objm(js).create(CHECKPOINT_BUCKET, { storage: StorageType.File });
    h = new Handles(nc, js, jsm, meta, nodes, checkpoints);
  } catch (err) {
    // A node that refuses to start must exit: an open connection would keep the process alive.
    await nc.close().catch(() => {});
    throw err;
  }
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') { h.up = false; log.warn({ kind: 'cluster.nats_disconnected' }); }
      else if (s.type === 'reconnect') { h.up = true; log.info({ kind: 'cluster.nats_reconnected' }); }
    }
  })();
  return h;
}

async function ensureStream(jsm: JetStreamManager): Promise<void> {
  try {
    await jsm.streams.info(EVENT_STREAM);
    return;
  } catch { /* absent: create it */ }
  try {
    await jsm.streams.add({
      name: EVENT_STREAM,
      subjects: [`${EVENT_SUBJECT_PREFIX}>`],
      storage: StorageType.File,
      duplicate_window: nanos(CLUSTER_DEDUPE_WINDOW_MS),
    });
  } catch (err) {
    // Another node created it between our info and add.
    await jsm.streams.info(EVENT_STREAM).catch(() => { throw err; });
  }
}

/** The partition count is fixed per cluster: the first node stores it, later nodes must agree. */
async function checkPartitions(meta: KV, partitions: number): Promise<void> {
  try {
    await meta.create(META_PARTITIONS_KEY, String(partitions));
    return;
  } catch { /* already set */ }
  const e = await meta.get(META_PARTITIONS_KEY);
  const stored = e === null ? NaN : Number(e.string());
  if (stored !== partitions) {
    throw new ClusterSetupError(`this cluster has ${stored} partitions (stored in its metadata); the node was started with --partitions ${partitions}`);
  }
}
