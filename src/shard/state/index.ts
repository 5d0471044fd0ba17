/**
 * shard/state/: what a shard holds and how rows reach it.
 *
 *   state.ts         ShardState: per table the columns and the entity index, the
 *                    registry plans, installs, reads, cold sweeps, memory limit
 *   push_apply.ts    PUSH records (live or replayed) -> ShardState.applyFeed
 *   forget_apply.ts  FORGET records (live or replayed) -> TableState.forget
 *   entity_index.ts  key bytes -> slot, per slot the key, last time and LSN
 *   probe_table.ts   the open-addressing tables under the entity index, the
 *                    intern tables and the cold index
 *   intern.ts        string and boolean values of a column as reference-counted ids
 *   dedupe_log.ts    logged dedupe entries (survive snapshots and restarts)
 *   json_text.ts     feature values to JSON text for the read path
 *
 * Feature state itself lives in ../columns/; frozen entities in ../cold/.
 */
export {};
