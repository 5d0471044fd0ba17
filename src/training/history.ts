/**
 * What a data directory still holds of its history, read-only (docs/training.md
 * "What a data dir can answer"). The export (export_cli.ts) asks each shard for a
 * starting state and then every WAL record after it, in log order, and applies
 * them with the server's own recovery step (shard/persist/store.ts replay).
 *
 * A shard's history starts at one of:
 *   - its first event: the WAL still begins with the INSTALL of the oldest
 *     registry version since the last reset (or with that RESET): nothing before
 *     it can be missing, so every time is answered;
 *   - a snapshot: WAL segments wholly covered by the older of the two snapshots
 *     have been deleted (docs/durability.md). The oldest snapshot the WAL still
 *     continues from is loaded; a snapshot is fuzzy (written in slices between
 *     batches, each entity as of its own moment), so rows are exact only from the
 *     newest time any entity in it had reached (its recorded last time) on, and
 *     spine times before that are answered with history_unavailable;
 *   - nothing: no WAL start and no snapshot the WAL continues from.
 *
 * Nothing here writes: a torn WAL tail is skipped, not truncated (wal/recover.ts
 * with repair off), and the data dir's lock is not taken, so this runs on a
 * stopped server's data dir or on a copy of a live one.
 *
 * The History interface is what a retained-history reader implements too: the
 * export does not know where the records come from.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { FRAME_LENGTH_CRC_BYTES } from '../wal/constants';
import { listLsnFiles } from '../wal/file_ops';
import { realFs } from '../wal/fs_like';
import { decodeWalRecord, WAL_CODEC, type WalRecord } from '../wal/record';
import { CASE_OK, classifyAt, FrameProbe, recoverWal } from '../wal/recover';
import { decodeSnapshotBody, verifySnapshotBytes } from '../wal/snapshot';
import { scanRegistryLog } from '../wal/registry_log';
import { RECORD_TYPE_INSTALL, RECORD_TYPE_RESET, RECORD_TYPE_SEGMENT } from '../wal/constants';
import type { RegistryState } from '../registry/model';
import type { ShardState } from '../shard/state/state';
import { restoreSnapshot } from '../shard/persist/snapshot_job';
import { UsageError } from '../cli_args';

/** Where one shard's history starts, as begin() found it. */
export interface HistoryStart {
  /** Earliest time a row can be answered at: -Infinity from the first event, +Infinity never. */
  fromMs: number;
  /** Earliest log position a row can be answered at (spines with lsn). */
  fromLsn: number;
  /** What the history starts from, for messages: "the first event", "snapshot ...". */
  origin: string;
}

export interface ShardHistory {
  readonly shard: number;
  /** Puts the starting state into `state` (a fresh ShardState of this shard). */
  begin(state: ShardState): HistoryStart;
  /** Every record after the start, in log order; returns what was wrong with the log on the way (damage, skipped bytes). */
  forEach(onRecord: (r: WalRecord) => void): string[];
}

export interface History {
  readonly dir: string;
  readonly shards: number;
  /** Every registry version the history refers to, oldest first. */
  readonly registry: readonly RegistryState[];
  shard(i: number): ShardHistory;
}

/** A data dir's history as the server left it (WAL segments not yet deleted, snapshots). Throws UsageError when it is no data dir. */
export function openDataDirHistory(dir: string): History {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`no data directory ${dir}`, false);
  const shardDirs = readdirSync(dir).filter((n) => /^shard-\d+$/.test(n));
  let shards = shardDirs.length;
  const identity = join(dir, 'streamfeat.json');
  if (existsSync(identity)) {
    try {
      const meta = JSON.parse(readFileSync(identity, 'utf8')) as { shards?: unknown };
      if (typeof meta.shards === 'number') shards = meta.shards;
    } catch (err) {
      throw new UsageError(`${identity} is not valid JSON: ${(err as Error).message}`, false);
    }
  }
  if (shards === 0) throw new UsageError(`${dir} holds no shard-N directories: not a streamfeat data directory (or a memory-only one)`, false);
  const regPath = join(dir, 'registry', 'registry.log');
  let registry: RegistryState[] = [];
  if (existsSync(regPath)) {
    try {
      registry = (scanRegistryLog(readFileSync(regPath), regPath).entries as RegistryState[])
        .filter((e) => typeof e === 'object' && e !== null && Array.isArray(e.nodes));
    } catch (err) {
      throw new UsageError(`${regPath}: ${(err as Error).message}`, false);
    }
  }
  const byVersion = new Map(registry.map((s) => [s.version, s]));
  return {
    dir,
    shards,
    registry,
    shard: (i) => new DataDirShard(i, join(dir, `shard-${i}`), byVersion, registry[0]?.version ?? 0),
  };
}

class DataDirShard implements ShardHistory {
  #afterLsn = -1;
  readonly #walDir: string;
  readonly #snapDir: string;

  constructor(readonly shard: number, dir: string, readonly versions: ReadonlyMap<number, RegistryState>, readonly oldestVersion: number) {
    this.#walDir = join(dir, 'wal');
    this.#snapDir = join(dir, 'snapshots');
  }

  begin(state: ShardState): HistoryStart {
    const segments = listLsnFiles(realFs, this.#walDir, 'log').files;
    const first = segments.length === 0 ? null : firstRecord(join(this.#walDir, segments[0].name));
    const snapshots = listLsnFiles(realFs, this.#snapDir, 'snap').files;
    const fromStart = first === null
      ? snapshots.length === 0
      : first.type === RECORD_TYPE_RESET || (first.type === RECORD_TYPE_INSTALL && first.registryVersion === this.oldestVersion);
    if (fromStart) {
      this.#afterLsn = -1;
      return { fromMs: Number.NEGATIVE_INFINITY, fromLsn: 0, origin: 'the first event' };
    }
    // The oldest snapshot the WAL continues from: no segment after it was deleted.
    const walFrom = segments.length === 0 ? Number.POSITIVE_INFINITY : segments[0].lsn;
    for (const snap of snapshots) {
      if (segments.length > 0 && walFrom > snap.lsn + 1) continue;
      const file = readFileSync(join(this.#snapDir, snap.name));
      const verdict = verifySnapshotBytes(file, snap.lsn);
      if (!verdict.ok) continue;
      const body = decodeSnapshotBody(file, verdict);
      if (body === null) continue;
      const restored = restoreSnapshot(state, body, (v) => this.versions.get(v));
      this.#afterLsn = restored.startLsn;
      return { fromMs: state.lastT, fromLsn: state.appliedLsn, origin: `snapshot ${snap.name}` };
    }
    this.#afterLsn = Number.MAX_SAFE_INTEGER;
    const why = first === null ? 'no WAL segment and no readable snapshot' : `its WAL starts at lsn ${first.lsn} (older segments were deleted after snapshots) and no readable snapshot precedes it`;
    return { fromMs: Number.POSITIVE_INFINITY, fromLsn: Number.POSITIVE_INFINITY, origin: why };
  }

  forEach(onRecord: (r: WalRecord) => void): string[] {
    if (this.#afterLsn === Number.MAX_SAFE_INTEGER) return [];
    const report = recoverWal(this.#walDir, this.#afterLsn, onRecord, { repair: false });
    return report.log.filter((e) => e.level !== 'info').map((e) => `shard ${this.shard}: ${e.kind} ${JSON.stringify(e)}`);
  }
}

/** The first valid record of a segment file (after its SEGMENT header frame, which is no record), or null. */
function firstRecord(path: string): WalRecord | null {
  const buf = readFileSync(path);
  const probe = new FrameProbe();
  for (let o = 0; ;) {
    classifyAt(buf, o, buf.length, WAL_CODEC, -1, probe);
    if (probe.caseId !== CASE_OK) return null;
    if (probe.type !== RECORD_TYPE_SEGMENT) return decodeWalRecord(buf, o + FRAME_LENGTH_CRC_BYTES, probe.next);
    o = probe.next;
  }
}
