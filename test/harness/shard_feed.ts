/**
 * Pushes and reads on a ShardState the way the server does, for tests and benches
 * that drive a shard's state without a server: the front's side compiles the
 * registry as the front does (no features), routes the row (chains, keys, the
 * shard of each key) and writes the PUSH record of this shard (front/routing.ts);
 * the shard's side applies it with PushApplier, as live pushes and WAL replay do.
 * Reads go through ShardState.readRow, as a get does.
 */
import { compileRegistry, type CompiledRegistry } from '../../src/registry/compile';
import { PushRoute } from '../../src/front/routing';
import { FRAME_LENGTH_CRC_BYTES } from '../../src/wal/constants';
import { PushFrameWriter } from '../../src/wal/push_record';
import { PushApplier } from '../../src/shard/state/push_apply';
import type { DedupeLog } from '../../src/shard/state/dedupe_log';
import type { ShardState } from '../../src/shard/state/state';
import type { JsonValue, Row } from '../../src/types';

interface Feed {
  applier: PushApplier;
  /** The shard's registry this front compile is of. */
  shardReg: CompiledRegistry | null;
  front: CompiledRegistry | null;
}

const feeds = new WeakMap<ShardState, Feed>();
const route = new PushRoute();
const writer = new PushFrameWriter();

function feedOf(state: ShardState): Feed {
  let f = feeds.get(state);
  if (f === undefined) feeds.set(state, (f = { applier: new PushApplier(state), shardReg: null, front: null }));
  if (f.shardReg !== state.registry) {
    const reg = state.registry;
    if (reg === null) throw new Error('shard_feed: no registry installed');
    f.front = compileRegistry(reg.state, { memoryGovEnforce: state.opts.memoryGovEnforce, pushValidators: false, features: false });
    f.shardReg = reg;
  }
  return f;
}

/**
 * One push of `event` with `row` (typed as validation leaves it) at server time `t`
 * and LSN `lsn`, as the shard receives it: only the feeds whose keys this shard
 * owns, the dedupe value recorded in `dedupe` when given. With `partition` >= 0
 * (cluster mode), a stream copy of that partition: only its keys of that partition
 * (front.ts pushCopy). Throws what the shard throws (memory_limit_exceeded).
 */
export function pushRow(state: ShardState, event: string, row: Row, t: number, lsn: number, dedupe: DedupeLog | null = null, partition = -1): void {
  if (!Number.isSafeInteger(t) || !Number.isSafeInteger(lsn)) throw new Error(`shard_feed: a PUSH record holds whole server ms and LSNs (t ${t}, lsn ${lsn})`);
  const f = feedOf(state);
  const plan = f.front!.events.get(event);
  if (plan === undefined) throw new Error(`shard_feed: no event ${event} in registry v${state.registryVersion}`);
  const tooLong = route.route(plan, row, state.opts.shardCount, partition, state.opts.partitions ?? 0);
  if (tooLong >= 0) throw new Error(`shard_feed: the key of feed ${tooLong} is over KEY_BYTES_MAX`);
  const value = plan.dedupeField === null ? null : row[plan.dedupeField];
  route.write(writer, state.opts.shardId, plan, lsn, t, f.front!.version, value === null || value === undefined ? null : String(value));
  const bytes = Buffer.from(writer.take());
  if (!f.applier.apply(bytes, FRAME_LENGTH_CRC_BYTES, dedupe)) throw new Error(`shard_feed: the shard did not apply the push (registry v${state.registryVersion})`);
}

/**
 * The row of `key` in `table` as a get answers it (JSON text): `features` by name
 * (null: all; unknown names are left out), read at `now`; `{}` for an unknown table or key.
 */
export function readText(state: ShardState, table: string, key: string, features: readonly string[] | null, now: number): string {
  const ts = state.tableByName(table);
  if (ts === undefined) return '{}';
  let f: number[] | null = null;
  if (features !== null) {
    f = [];
    for (const name of features) {
      const i = ts.plan.featureIndex.get(name);
      if (i !== undefined) f.push(i);
    }
  }
  return state.readRow(ts, key, f, now);
}

/** readText, parsed. */
export function read(state: ShardState, table: string, key: string, features: readonly string[] | null, now: number): Record<string, JsonValue> {
  return JSON.parse(readText(state, table, key, features, now)) as Record<string, JsonValue>;
}

/**
 * The reference the PUSH record tests compare with: the rows `event` brings to
 * each table (the front's chains and keys), applied to the entities this shard
 * owns straight through their columns (TableColumns.apply), without what the PUSH
 * record path adds: values found by their bytes in the intern tables, hashes made
 * from the bytes, fields the columns do not read left out of the row. The columns
 * then intern and hash each value themselves. Same rules as the shard: an entity
 * that already reflects `lsn` is skipped; while new entities are refused
 * (ShardState.refuseNew) a push reaching one throws memory_limit_exceeded first.
 */
export function applyRow(state: ShardState, event: string, row: Row, t: number, lsn: number): void {
  const f = feedOf(state);
  const plan = f.front!.events.get(event);
  if (plan === undefined) throw new Error(`shard_feed: no event ${event} in registry v${state.registryVersion}`);
  route.route(plan, row, state.opts.shardCount);
  const owned = (i: number): boolean => route.rows[i] !== null && route.keys[i] !== null && route.shards[i] === state.opts.shardId;
  if (state.refuseNew) plan.feeds.forEach((feed, i) => { if (owned(i) && !state.tables[feed.table.index].holds(route.keys[i]!)) state.refuseNewEntity(); });
  state.advance(t, lsn);
  plan.feeds.forEach((feed, i) => {
    if (!owned(i)) return;
    const r = route.rows[i]!;
    const key = route.keys[i]!;
    const ts = state.tables[feed.table.index];
    const index = ts.cols.index;
    let slot = ts.hot(key);
    if (slot < 0) slot = ts.cols.add(key, t, 0);
    else if (lsn <= index.lastLsn[slot]) return;
    index.lastT[slot] = t;
    index.lastLsn[slot] = lsn;
    ts.cols.apply(slot, r, t);
  });
}
