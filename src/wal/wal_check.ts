/**
 * Offline checker (the `redis-check-aof` of streamfeat): verifies WAL segments,
 * snapshots and a registry log without modifying anything. It runs the same
 * decision table as recovery (repair off), so what it reports is exactly what a
 * restart would do; auditShardDir runs a shard's recovery as boot does (audit.ts)
 * for the loss verdict (loss.ts), so it reports exactly what boot refuses.
 */
import { join } from 'node:path';
import { fileSizeOrMissing, listLsnFiles } from './file_ops';
import { realFs, type FsLike } from './fs_like';
import { recoverWal, type RecoveryLogEntry } from './recover';
import { RECORD_TYPE_EVENT, RECORD_TYPE_INSTALL, RECORD_TYPE_PUSH } from './constants';
import { WalCorruptionError, scanRegistryLog } from './registry_log';
import { decodeSnapshotBody, verifySnapshotBytes } from './snapshot';
import { recoverShardFiles } from './audit';
import type { RegistryKnown, ShardAudit } from './loss';

export interface SnapshotCheck {
  name: string;
  ok: boolean;
  /** Failure reason ('' when ok). */
  reason: string;
  lsn: number;
  registryVersion: number;
  rawBytes: number;
  bytes: number;
}

export interface WalCheckReport {
  /** True when nothing at warn or error level was found. */
  ok: boolean;
  walDir: string;
  snapshotDir: string;
  segments: Array<{ name: string; bytes: number }>;
  records: number;
  /** Records by type: push (PUSH, the current format), event (EVENT, the format before it), install, reset. */
  types: { push: number; event: number; install: number; reset: number };
  lastLsn: number;
  snapshots: SnapshotCheck[];
  /** Recovery findings (what a restart would log and do) and snapshot failures. */
  findings: RecoveryLogEntry[];
}

function isDir(fs: FsLike, path: string): boolean {
  try {
    return fs.statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Checks a shard directory (with `wal/` and `snapshots/`) or a plain directory
 * holding `.log` and `.snap` files.
 */
export function checkWalDir(dir: string, opts: { fs?: FsLike } = {}): WalCheckReport {
  const fs = opts.fs ?? realFs;
  const walDir = isDir(fs, join(dir, 'wal')) ? join(dir, 'wal') : dir;
  const snapshotDir = isDir(fs, join(dir, 'snapshots')) ? join(dir, 'snapshots') : dir;
  const segments = listLsnFiles(fs, walDir, 'log').files.map((f) => ({
    name: f.name,
    bytes: fileSizeOrMissing(fs, join(walDir, f.name)),
  }));
  const types = { push: 0, event: 0, install: 0, reset: 0 };
  const recovery = recoverWal(walDir, -1, (r) => {
    if (r.type === RECORD_TYPE_PUSH) types.push++;
    else if (r.type === RECORD_TYPE_EVENT) types.event++;
    else if (r.type === RECORD_TYPE_INSTALL) types.install++;
    else types.reset++;
  }, { fs, repair: false });
  // Unknown files next to segments are normal when both kinds share a directory.
  const findings = recovery.log.filter((e) => e.kind !== 'stray_file' || walDir !== snapshotDir);
  const snapshots = checkSnapshots(fs, snapshotDir);
  for (const s of snapshots) {
    if (!s.ok) findings.push({ kind: 'snapshot_invalid', level: 'error', name: s.name, reason: s.reason });
  }
  return {
    ok: findings.every((f) => f.level === 'info'),
    walDir,
    snapshotDir,
    segments,
    records: recovery.recordsRead,
    types,
    lastLsn: recovery.lastLsn,
    snapshots,
    findings,
  };
}

/**
 * What boot would prove lost in a shard directory (`<data>/shard-<i>`, named
 * `shard` in the evidence): its recovery as boot runs it, repair off, nothing applied.
 */
export function auditShardDir(dir: string, shard: string, known: RegistryKnown, opts: { fs?: FsLike } = {}): ShardAudit {
  return recoverShardFiles({
    walDir: join(dir, 'wal'), snapDir: join(dir, 'snapshots'), shard, known, repair: false, ...(opts.fs === undefined ? {} : { fs: opts.fs }),
    onSnapshot: (snap) => ({ startLsn: snap.meta.lsn, walResume: null }),
    onRecord: () => {},
  }).audit;
}

function checkSnapshots(fs: FsLike, dir: string): SnapshotCheck[] {
  const out: SnapshotCheck[] = [];
  for (const { name, lsn } of listLsnFiles(fs, dir, 'snap').files) {
    const file = fs.readFileSync(join(dir, name));
    const v = verifySnapshotBytes(file, lsn);
    const check: SnapshotCheck = { name, ok: false, reason: '', lsn, registryVersion: -1, rawBytes: -1, bytes: file.length };
    if (!v.ok) check.reason = v.reason;
    else if (decodeSnapshotBody(file, v) === null) check.reason = 'decompress_failed';
    else {
      check.ok = true;
      check.registryVersion = v.meta.registryVersion;
      check.rawBytes = v.rawBytes;
    }
    out.push(check);
  }
  return out;
}

export interface RegistryLogCheck {
  ok: boolean;
  entries: number;
  validBytes: number;
  bytes: number;
  /** Case name of a torn tail that open() would cut, '' if none. */
  tailKind: string;
  /** Set when the log is damaged before its end (open() would throw). */
  corruption: string;
}

/** Verifies a registry log file without modifying it. */
export function checkRegistryLog(path: string, opts: { fs?: FsLike } = {}): RegistryLogCheck {
  const fs = opts.fs ?? realFs;
  const buf = fs.readFileSync(path);
  try {
    const scan = scanRegistryLog(buf, path);
    return {
      ok: scan.tailKind === '', entries: scan.entries.length, validBytes: scan.validBytes,
      bytes: buf.length, tailKind: scan.tailKind, corruption: '',
    };
  } catch (err) {
    if (!(err instanceof WalCorruptionError)) throw err;
    return { ok: false, entries: -1, validBytes: err.offset, bytes: buf.length, tailKind: '', corruption: err.message };
  }
}

/** Human-readable summary for the CLI. */
export function formatWalCheckReport(r: WalCheckReport): string {
  const lines: string[] = [];
  lines.push(`wal ${r.walDir}: ${r.segments.length} segment(s), ${r.records} record(s), last lsn ${r.lastLsn}`);
  const t = r.types;
  lines.push(`records by type: ${t.push} push, ${t.event} event (old format), ${t.install} install, ${t.reset} reset`);
  for (const s of r.snapshots) {
    lines.push(`snapshot ${s.name}: ${s.ok ? `ok (registry v${s.registryVersion}, ${s.rawBytes} raw bytes)` : `INVALID (${s.reason})`}`);
  }
  for (const f of r.findings) lines.push(`${f.level}: ${JSON.stringify(f)}`);
  lines.push(r.ok ? 'ok' : 'problems found');
  return lines.join('\n');
}
