/**
 * One cluster node (docs/cluster.md): wires the NATS handles, the log sink
 * (ingest), partition feeds and their checkpoints, membership, the read router with its peer listener
 * and the registry into the front's cluster seam (front/cluster_hooks.ts).
 *
 * Start order: NATS objects -> registry (installed before anything is consumed)
 * -> peer listener -> membership (claims partitions, starts feeds) -> the front
 * routes through the cluster. Stop: leave the membership first so that the
 * others take the partitions at once, then stop feeds and close NATS.
 */
import type { ClusterConfig } from '../config';
import type { Front } from '../front/front';
import type { ClusterHooks } from '../front/cluster_hooks';
import type { Logger } from '../log';
import { Checkpoints } from './checkpoint';
import { Feeder } from './feed';
import { Ingest } from './ingest';
import { Membership } from './membership';
import { openNats } from './nats';
import { listenPeer, ReadRouter } from './reads';
import { ClusterRegistry } from './registry';
import { formatAddr } from '../util/host_port';

export { ClusterSetupError } from './nats';

export interface ClusterNode {
  membership: Membership;
  feeder: Feeder;
  close(): Promise<void>;
}

export async function startClusterNode(cfg: ClusterConfig, front: Front, log: Logger): Promise<ClusterNode> {
  const nats = await openNats(cfg.url, cfg.nodeId, cfg.partitions, log);
  const feeder = new Feeder(front, nats.js, nats.jsm, cfg.partitions, log);
  // Takeovers restore checkpoints even when this node writes none (--checkpoint-interval 0).
  const checkpoints = new Checkpoints(nats.checkpoints, front, log, cfg.checkpointIntervalMs);
  feeder.checkpoints = checkpoints;
  const ingest = new Ingest(front, nats, cfg.partitions);
  const registry = new ClusterRegistry(front, nats, feeder, ingest, log);
  let membership: Membership | null = null;
  await registry.start(() => membership!, cfg.nodeId);
  // The membership entry advertises the peer port, and the router needs the membership: bind first.
  let router: ReadRouter | null = null;
  const listening = await listenPeer(cfg.peerHost, cfg.peerPort, (req, res) => {
    if (router === null) res.writeHead(503).end();
    else router.handlePeer(req, res);
  });
  const peer = formatAddr(cfg.peerHost, listening.port);
  log.info({ kind: 'server.peer_bound', addr: peer, node_id: cfg.nodeId });
  membership = new Membership(nats.nodes, { id: cfg.nodeId, peer }, cfg.partitions, log, (owners) => {
    feeder.setOwned(owners.map((o) => o === cfg.nodeId));
  });
  router = new ReadRouter(front, feeder, membership, cfg.nodeId, log);
  await membership.start();
  checkpoints.start(feeder.feeds);
  const hooks: ClusterHooks = {
    append: (push) => ingest.append(push),
    read: (item, sink, tag) => router!.read(item, sink, tag),
    register: (text, reply) => registry.register(text, reply),
    reset: (reply) => registry.reset(reply),
  };
  front.attachCluster(hooks);
  log.info({ kind: 'cluster.joined', node_id: cfg.nodeId, partitions: cfg.partitions, nodes: membership.live.size });
  return {
    membership,
    feeder,
    async close(): Promise<void> {
      await membership!.stop();
      checkpoints.stop();
      feeder.stop();
      registry.stop();
      router!.close();
      listening.server.close();
      listening.server.closeAllConnections();
      try { await nats.nc.drain(); } catch { /* already closed */ }
    },
  };
}
