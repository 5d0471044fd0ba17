/**
 * One shard's recovery as boot runs it (shard/store.ts) and `streamfeat wal-check`
 * checks it (wal_check.ts): the newest snapshot that verifies, the WAL after it
 * (recover.ts), each record admitted by the registry versions the log holds
 * (loss.ts VersionTally), and the evidence of what is lost (loss.ts shardEvidence).
 * The caller restores the snapshot and applies the records (boot) or only counts
 * (the check); what is judged is the same, so the check reports what boot refuses.
 */
import { join } from 'node:path';
import { lsnOfFileName } from './file_ops';
import type { FsLike } from './fs_like';
import { VersionTally, shardEvidence, type RegistryKnown, type ShardAudit, type ShardFacts } from './loss';
import type { WalRecord } from './record';
import { recoverWal, type RecoveryProgress, type RecoveryReport } from './recover';
import type { WalPosition } from './segment';
import { readNewestSnapshot, type SnapshotReadResult } from './snapshot';

export interface ShardFilesOptions {
  /** `<data>/shard-<i>/wal` and `.../snapshots`. */
  walDir: string;
  snapDir: string;
  /** `shard-<i>`: how files are named in the evidence. */
  shard: string;
  /** What the registry log holds (loss.ts registryKnownOf). */
  known: RegistryKnown;
  /** Cut the torn tail (boot) or only report it (the check). */
  repair: boolean;
  fs?: FsLike;
  progress?: RecoveryProgress;
  /** Each snapshot that fails verification, newest first (before onSnapshot). */
  onSnapshotSkipped?(path: string, reason: string): void;
  /**
   * The snapshot recovery starts from; `versionKnown` false when the registry log
   * lacks its version. Returns its start lsn and the WAL resume point in it.
   */
  onSnapshot(snap: SnapshotReadResult, versionKnown: boolean): { startLsn: number; walResume: WalPosition | null };
  /** Each WAL record after the snapshot whose registry version can be replayed. */
  onRecord(r: WalRecord): void;
}

export interface ShardFilesRecovery {
  report: RecoveryReport;
  snapshot: SnapshotReadResult | null;
  /** Start lsn of the snapshot used, 0 without one. */
  snapshotLsn: number;
  /** Highest lsn named by a snapshot file that failed verification (-1: none): new lsns stay above it. */
  skippedSnapshotLsnMax: number;
  audit: ShardAudit;
}

export function recoverShardFiles(o: ShardFilesOptions): ShardFilesRecovery {
  const versions = new VersionTally(o.known);
  const skipped: ShardFacts['snapshotsSkipped'] = [];
  const snap = readNewestSnapshot(o.snapDir, {
    ...(o.fs === undefined ? {} : { fs: o.fs }),
    onSkip: (name, reason) => {
      skipped.push({ name, lsn: lsnOfFileName(name, 'snap'), reason });
      o.onSnapshotSkipped?.(join(o.snapDir, name), reason);
    },
  });
  let snapshotLsn = 0;
  let walResume: WalPosition | null = null;
  if (snap !== null) {
    const restored = o.onSnapshot(snap, versions.snapshot(snap.name, snap.meta.registryVersion));
    snapshotLsn = restored.startLsn;
    walResume = restored.walResume;
  }
  const report = recoverWal(o.walDir, snapshotLsn, (r) => {
    if (versions.admit(r.type, r.lsn, r.registryVersion)) o.onRecord(r);
  }, { repair: o.repair, resumeAt: walResume, ...(o.fs === undefined ? {} : { fs: o.fs }), ...(o.progress === undefined ? {} : { progress: o.progress }) });
  const facts: ShardFacts = {
    shard: o.shard, afterLsn: snapshotLsn, snapshotsSkipped: skipped, chain: report.chain, findings: report.log,
    snapshot: snap === null ? null : { name: snap.name, lsn: snap.meta.lsn, registryVersion: snap.meta.registryVersion },
  };
  return {
    report, snapshot: snap, snapshotLsn, skippedSnapshotLsnMax: Math.max(-1, ...skipped.map((k) => k.lsn)),
    audit: { shard: o.shard, evidence: shardEvidence(facts), versions: versions.summary() },
  };
}
