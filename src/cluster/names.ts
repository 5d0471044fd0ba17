/**
 * Names a cluster uses on its NATS server (docs/cluster.md). One cluster per NATS
 * account: two clusters on one server need separate accounts.
 */

/** The event stream: one subject per partition. */
export const EVENT_STREAM = 'SF_EVENTS';
export const EVENT_SUBJECT_PREFIX = 'sf.ev.';
export const eventSubject = (partition: number): string => `${EVENT_SUBJECT_PREFIX}${partition}`;

/** KV bucket of cluster metadata: the partition count and the registry. */
export const META_BUCKET = 'sf_meta';
export const META_PARTITIONS_KEY = 'partitions';
export const META_REGISTRY_KEY = 'registry';

/** KV bucket of live nodes: one key per node, refreshed by heartbeats, expired by max_age. */
export const NODES_BUCKET = 'sf_nodes';

/** Object store of partition checkpoints: one object per partition, replaced by each checkpoint. */
export const CHECKPOINT_BUCKET = 'sf_ckpt';
export const checkpointName = (partition: number): string => `p${partition}`;

/** Core NATS subject on which each node answers cluster-wide reset requests (test mode). */
export const resetSubject = (nodeId: string): string => `sf.ctl.reset.${nodeId}`;
