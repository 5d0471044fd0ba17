/**
 * The seams through which cluster mode (src/cluster/, docs/cluster.md) takes over
 * the front's durable steps. Single-node mode has none (Front.cluster is null)
 * and runs exactly as before: pushes are logged by the local shards' WALs, reads
 * go to the local shard of the key, the coordinator owns the registry.
 */
import type { EventPlan } from '../registry/compile';
import type { GetItem } from '../protocol/messages';
import type { Row } from '../types';
import type { Sink } from './channel';
import type { DedupeEntry } from './dedupe';
import type { Reply } from './reply';

/** A push that passed validation and local dedupe: what the log sink makes durable. */
export interface AcceptedPush {
  plan: EventPlan;
  row: Row;
  /** The envelope as received. */
  text: string;
  /** Server time, ms. */
  t: number;
  version: number;
  reply: Reply;
  /** performance.now() when the request arrived (push latency). */
  startMs: number;
  /** The local dedupe entry this push holds (null: no dedupe value or store full). */
  dedupe: DedupeEntry | null;
  dedupeValue: string;
}

/** A get validated by the front: the shard item (by index) and the names it was asked with (forwarded reads carry names). */
export interface ResolvedGet {
  item: GetItem;
  /** Local shard of the key. */
  shard: number;
  table: string;
  features: string[] | null;
}

export interface ClusterHooks {
  /** Log sink: make the push durable, then ack it through Front.pushDone (or answer a replay). */
  append(push: AcceptedPush): void;
  /** Read router: answer `item` into `sink` with `tag`, locally or from the key's owner. */
  read(get: ResolvedGet, sink: Sink, tag: number): void;
  /** Registry change through the cluster's serialized path. */
  /** `text`: the register body, depth-checked, not parsed (the coordinator parses it). */
  register(text: string, reply: Reply): void;
  /** Test-mode reset of the whole cluster. */
  reset(reply: Reply): void;
}
