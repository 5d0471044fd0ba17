/**
 * Membership and partition ownership (docs/cluster.md "Ownership").
 *
 * Every node puts its entry (id, peer address) into the nodes bucket each
 * CLUSTER_HEARTBEAT_MS; the bucket's max_age (CLUSTER_NODE_TTL_MS) drops the entry
 * of a node that stops. Every node lists the bucket on the same cadence and
 * assigns each partition to the live node with the highest rendezvous score
 * hash(node, partition): every node computes the same map from the same list, and
 * a node joining or leaving moves only the partitions it wins or held.
 *
 * While NATS is unreachable the last map is kept (nothing can be consumed then
 * anyway), so a NATS restart does not reshuffle ownership.
 */
import type { KV } from '@nats-io/kv';
import type { Logger } from '../log';
import { CLUSTER_HEARTBEAT_MS } from '../limits';
import { hashKey, partitionOfHash } from '../registry/key';

export interface NodeInfo {
  id: string;
  /** host:port of the node's peer listener (forwarded reads). */
  peer: string;
}

/** Owner of every partition, by rendezvous hashing over the live node ids. */
export function assignPartitions(nodeIds: readonly string[], partitions: number): string[] {
  const owners: string[] = new Array(partitions);
  for (let p = 0; p < partitions; p++) {
    let best = '';
    let bestScore = -1;
    for (const id of nodeIds) {
      const score = partitionOfHash(hashKey(`${id}/${p}`), 0x7fffffff);
      if (score > bestScore || (score === bestScore && id < best)) { best = id; bestScore = score; }
    }
    owners[p] = best;
  }
  return owners;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export class Membership {
  /** Live nodes by id, as of the last successful listing. */
  live = new Map<string, NodeInfo>();
  owners: string[] = [];
  /** The live node ids of the last partitions_assigned line, sorted. */
  #nodes: string[] = [];
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;

  constructor(
    readonly bucket: KV,
    readonly self: NodeInfo,
    readonly partitions: number,
    readonly log: Logger,
    /** Called after the map changed, with the previous one. */
    readonly onChange: (owners: readonly string[], before: readonly string[]) => void,
  ) {}

  async start(): Promise<void> {
    await this.#beat();
    await this.#poll();
    const tick = (): void => {
      if (this.#stopped) return;
      void this.#beat().then(() => this.#poll()).finally(() => {
        if (!this.#stopped) this.#timer = setTimeout(tick, CLUSTER_HEARTBEAT_MS);
      });
    };
    this.#timer = setTimeout(tick, CLUSTER_HEARTBEAT_MS);
  }

  ownerOf(partition: number): string {
    return this.owners[partition];
  }

  async #beat(): Promise<void> {
    try {
      await this.bucket.put(this.self.id, JSON.stringify(this.self));
    } catch (err) {
      this.log.warn({ kind: 'cluster.heartbeat_failed', err: String((err as Error).message ?? err) });
    }
  }

  async #poll(): Promise<void> {
    const live = new Map<string, NodeInfo>();
    try {
      const keys: string[] = [];
      for await (const k of await this.bucket.keys()) keys.push(k);
      for (const k of keys) {
        const e = await this.bucket.get(k);
        if (e === null || e.operation !== 'PUT') continue;
        const info = e.json<NodeInfo>();
        if (typeof info?.id === 'string' && typeof info.peer === 'string') live.set(info.id, info);
      }
    } catch (err) {
      this.log.warn({ kind: 'cluster.membership_poll_failed', err: String((err as Error).message ?? err) });
      return;
    }
    if (this.#stopped) return;
    this.live = live;
    const nodes = [...live.keys()].sort();
    const owners = assignPartitions(nodes, this.partitions);
    const sameOwners = sameList(owners, this.owners);
    // Logged when the node set changes even if no partition moves (a node that wins
    // none joined): the line is how operators and tests see this node's view of the cluster.
    if (sameOwners && sameList(nodes, this.#nodes)) return;
    this.#nodes = nodes;
    this.log.info({ kind: 'cluster.partitions_assigned', nodes, owned: owners.filter((o) => o === this.self.id).length });
    if (sameOwners) return;
    const before = this.owners;
    this.owners = owners;
    this.onChange(owners, before);
  }

  /** Stops heartbeating and removes this node's entry, so others take its partitions at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    try { await this.bucket.delete(this.self.id); } catch { /* NATS gone: the entry expires */ }
  }
}
