/**
 * Durability library: WAL segments, snapshots, the registry log and recovery.
 * Synchronous by design (each shard is its own thread; a batch is on disk before
 * its acks are posted). Formats and the recovery table: docs/durability.md.
 */
export {
  RECORD_BYTES_MAX,
  RECORD_TYPE_INSTALL,
  RECORD_TYPE_JSON,
  RECORD_TYPE_PUSH,
  RECORD_TYPE_RESET,
  SEGMENT_BYTES_MAX_DEFAULT,
} from './constants';
export { SNAPSHOT_KEEP_DEFAULT } from '../limits';
export { crc32c } from './crc32c';
export { faultyFs, fsError, realFs, type FaultCode, type FaultyFs, type FsLike, type StatLike } from './fs_like';
export {
  RecordEncoder,
  decodeWalRecord,
  encodeJsonFrame,
  type InstallRecord,
  type PushRecord,
  type ResetRecord,
  type WalRecord,
} from './record';
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
export { RegistryLog, scanRegistryLog, WalCorruptionError, type RegistryLogOpenResult } from './registry_log';
export { checkRegistryLog, checkWalDir, formatWalCheckReport, type RegistryLogCheck, type WalCheckReport } from './wal_check';
