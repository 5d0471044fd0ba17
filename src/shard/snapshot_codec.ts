/**
 * Shard snapshot body: the shard's aggregates as plain data, serialized with
 * v8.serialize (structured clone: typed arrays and numbers stay binary). The file
 * framing, checksums and lz4 are the WAL library's (wal/snapshot).
 */
import { serialize, deserialize } from 'node:v8';
import type { RegistryState } from '../registry/model';
import { EntityRow, TableState, type ShardState } from './state';

export const SNAPSHOT_FORMAT = 1;

interface TableImage {
  name: string;
  keySignature: string;
  features: Array<[string, string]>; // name, signature
  keys: string[];
  lastTs: number[];
  /** Per entity, per feature: OpState.save(). */
  states: unknown[][];
}

export interface ShardImage {
  format: number;
  shardId: number;
  shardCount: number;
  registryVersion: number;
  lastT: number;
  appliedLsn: number;
  tables: TableImage[];
  dedupe: Array<[string, string, number, number, number]>;
}

export function encodeShard(state: ShardState, dedupe: ShardImage['dedupe']): Buffer {
  const tables: TableImage[] = state.tables.map((ts) => {
    const keys: string[] = [];
    const lastTs: number[] = [];
    const states: unknown[][] = [];
    for (const [k, ent] of ts.rows) {
      keys.push(k);
      lastTs.push(ent.lastT);
      states.push(ent.states.map((s) => s.save()));
    }
    return { name: ts.plan.name, keySignature: ts.plan.keySignature, features: ts.plan.features.map((f) => [f.name, f.signature]), keys, lastTs, states };
  });
  const image: ShardImage = {
    format: SNAPSHOT_FORMAT, shardId: state.opts.shardId, shardCount: state.opts.shardCount,
    registryVersion: state.registryVersion, lastT: state.lastT, appliedLsn: state.appliedLsn, tables, dedupe,
  };
  return serialize(image);
}

export function decodeShardImage(body: Buffer): ShardImage {
  const image = deserialize(body) as ShardImage;
  if (image.format !== SNAPSHOT_FORMAT) throw new Error(`unknown snapshot format ${image.format}`);
  return image;
}

/** Installs the image's registry version and loads every table/feature whose signature matches. */
export function restoreShard(state: ShardState, image: ShardImage, registry: RegistryState | undefined): void {
  if (registry !== undefined) state.install(registry);
  state.lastT = image.lastT;
  state.appliedLsn = image.appliedLsn;
  for (const t of image.tables) {
    const ts: TableState | undefined = state.tableByName(t.name);
    if (ts === undefined || ts.plan.keySignature !== t.keySignature) continue;
    const map = ts.plan.features.map((f) => t.features.findIndex(([n, sig]) => n === f.name && sig === f.signature));
    for (let e = 0; e < t.keys.length; e++) {
      const saved = t.states[e];
      const states = ts.plan.features.map((f, i) => (map[i] >= 0 ? f.factory.load(saved[map[i]]) : f.factory.create()));
      ts.rows.set(t.keys[e], new EntityRow(states, t.lastTs[e]));
    }
  }
}
