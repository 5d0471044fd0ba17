/**
 * Durability library: WAL segments, snapshots, the registry log and recovery.
 * Synchronous by design (each shard is its own thread; a batch is on disk before
 * its acks are posted). Formats and the recovery table: docs/durability.md.
 */
export {
  RECORD_BYTES_MAX,
  RECORD_TYPE_EVENT,
  RECORD_TYPE_INSTALL,
  RECORD_TYPE_JSON,
  RECORD_TYPE_PUSH,
  RECORD_TYPE_RESET,
  SEGMENT_BYTES_MAX_DEFAULT,
  SNAPSHOT_KEEP_DEFAULT,
} from './constants';
export { crc32c } from './crc32c';
export { faultyFs, fsError, realFs, type FaultCode, type FaultyFs, type FsLike, type StatLike } from './fs_like';
export {
  RecordEncoder,
  decodeWalRecord,
  encodeJsonFrame,
  type EventRecord,
  type InstallRecord,
  type PushRecord,
  type ResetRecord,
  type WalRecord,
} from './record';
export {
  DATA_LOSS_ADVICE,
  EVIDENCE_CASES,
  REGISTRY_LOG_FILE,
  VersionTally,
  formatEvidence,
  judge,
  refusalMessage,
  registryEvidence,
  registryKnownOf,
  registryStatesOf,
  shardEvidence,
  versionFloor,
  type Evidence,
  type EvidenceCase,
  type Judgement,
  type RegistryKnown,
  type RegistryLogFacts,
  type ShardAudit,
  type ShardFacts,
  type VersionSummary,
} from './loss';
export { PushFrameWriter, PushRecordReader, frameEnd, sealFrame } from './push_record';
export { WalWriter, type WalPosition, type WalWriterOptions } from './segment';
export {
  RECOVERY_CASES,
  recoverWal,
  type RecoverOptions,
  type RecoveryCase,
  type RecoveryLogEntry,
  type RecoveryProgress,
  type RecoveryReport,
  type SegmentFact,
} from './recover';
export {
  deleteAllSnapshots,
  readNewestSnapshot,
  writeSnapshot,
  type SnapshotMeta,
  type SnapshotReadOptions,
  type SnapshotReadResult,
  type SnapshotWriteOptions,
  type SnapshotWriteResult,
} from './snapshot';
export { SnapshotStream } from './snapshot_stream';
export { RegistryLog, readRegistryLogFacts, scanRegistryLog, scanRegistryLogLenient, WalCorruptionError, type RegistryLogDamage, type RegistryLogOpenResult } from './registry_log';
export { recoverShardFiles, type ShardFilesOptions, type ShardFilesRecovery } from './audit';
export { auditShardDir, checkRegistryLog, checkWalDir, formatWalCheckReport, type RegistryLogCheck, type WalCheckReport } from './wal_check';
