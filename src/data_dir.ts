/**
 * The data directory before anything else touches it: made, checked, and its
 * identity file (`<data>/streamfeat.json`) read or written. Runs on the front
 * thread before the lock and before any worker starts, so every problem a first
 * deploy meets (a parent the server may not write, a data dir that is a file, a
 * filesystem that refuses directories such as /proc, a read-only mount, a full
 * disk, files left by another user) is one DataDirError line naming the path and
 * the fix, and the CLI exits 2 (serve_cli.ts), within milliseconds.
 *
 * The directory is made one level at a time, never with `mkdirSync(recursive)`:
 * on a filesystem whose mkdir answers ENOENT although the parent exists (procfs),
 * the recursive form retries forever in native code, which pins a core and
 * blocks the event loop, so not even SIGTERM is handled.
 *
 * Identity: each shard's WAL and snapshots hold only the entity keys that hash to
 * it, so a data directory written with N shards can only be recovered with N
 * shards: starting with another count would route keys to shards that never saw
 * them. Refused at boot with a message saying how to proceed. The identity file
 * also names the data format of everything under the data dir (data_format.ts),
 * checked first.
 */
import { accessSync, constants, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { DATA_DIR_FREE_BYTES_MIN } from './limits';
import { StartupError } from './startup_error';
import { checkDataFormat, checkUnmarkedDataDir, DATA_FORMAT, dataDirIdentity } from './data_format';

export class DataDirError extends StartupError {}

const IDENTITY_FILE = 'streamfeat.json';

/**
 * What the server writes under a data dir, to check before starting: the top
 * level files, `registry/`, and `shard-N/` with its `wal/`, `snapshots/`, `cold/`.
 * Only these are walked, so a data dir pointed at a crowded directory stays fast.
 */
const TOP_DIRS = /^(registry|shard-\d+)$/;
const SHARD_DIRS = new Set(['wal', 'snapshots', 'cold']);

/** Makes (if needed) and checks the data dir; throws DataDirError with the fix. */
export function prepareDataDir(dataDir: string): void {
  makeDirs(dataDir);
  checkTree(dataDir);
  checkFreeSpace(dataDir);
}

export function checkDataDir(dataDir: string, shards: number): void {
  const path = join(dataDir, IDENTITY_FILE);
  if (existsSync(path)) {
    let meta: { data_format?: unknown; shards?: unknown };
    try {
      meta = JSON.parse(readFileSync(path, 'utf8')) as { data_format: number; shards: number };
    } catch (err) {
      if (isErrno(err)) throw fsError(err, path, dataDir);
      throw new DataDirError(`${path} is not valid JSON (${(err as Error).message}): restore it from a backup of ${dataDir}; it reads {"data_format":${DATA_FORMAT},"shards":N} with the --shards the data dir was written with`);
    }
    checkDataFormat(dataDir, meta);
    if (meta.shards !== shards) {
      throw new DataDirError(`data dir ${dataDir} was written with --shards ${meta.shards}; start with --shards ${meta.shards} (re-sharding an existing data dir is not supported in v0)`);
    }
    return;
  }
  checkUnmarkedDataDir(dataDir);
  try {
    writeFileSync(`${path}.tmp`, JSON.stringify(dataDirIdentity(shards)));
    renameSync(`${path}.tmp`, path);
  } catch (err) {
    if (isErrno(err)) throw fsError(err, path, dataDir);
    throw err;
  }
}

/** Creates the missing directories of `dataDir` top-down, one mkdir each. */
function makeDirs(dataDir: string): void {
  const target = resolve(dataDir);
  const missing: string[] = [];
  let at = target;
  for (;;) {
    const kind = entryKind(at, dataDir);
    if (kind === 'dir') break;
    if (kind === 'file') {
      throw new DataDirError(at === target
        ? `data dir ${dataDir} is a file, not a directory: move the file away or choose another --data-dir`
        : `cannot create data dir ${dataDir}: ${at} is a file, not a directory: move the file away or choose another --data-dir`);
    }
    if (kind === 'dangling') throw new DataDirError(`cannot create data dir ${dataDir}: ${at} is a symbolic link to nothing: fix or remove the link, or choose another --data-dir`);
    missing.push(at);
    const up = dirname(at);
    if (up === at) break;
    at = up;
  }
  for (let i = missing.length - 1; i >= 0; i--) {
    const dir = missing[i];
    try {
      mkdirSync(dir);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EEXIST' && entryKind(dir, dataDir) === 'dir') continue; // made by someone else meanwhile
      // ENOENT with the parent there (procfs), or a permission error although the parent is
      // writable to us (sysfs, for root too): the filesystem itself refuses, not its modes.
      if (e.code === 'ENOENT' || ((e.code === 'EACCES' || e.code === 'EPERM') && writable(dirname(dir)))) {
        throw new DataDirError(`cannot create data dir ${dataDir}: the filesystem holding ${dirname(dir)} refuses to create directories (mkdir ${dir} answered ${e.code}; /proc and /sys cannot hold data): choose a --data-dir on a disk`);
      }
      if (e.code === 'EACCES' || e.code === 'EPERM') {
        throw new DataDirError(`cannot create data dir ${dataDir}: ${dirname(dir)} is not writable by this server (${who(dirname(dir))}): create ${dataDir} and give it to uid ${uid()} (mkdir -p ${dataDir} && chown ${uid()} ${dataDir}), or choose a --data-dir this user may write`);
      }
      throw fsError(e, dir, dataDir);
    }
  }
}

/** The data dir and what the server wrote in it must be readable and writable by this process. */
function checkTree(dataDir: string): void {
  checkAccess(dataDir, true, dataDir);
  for (const top of readdirSync(dataDir, { withFileTypes: true })) {
    const p = join(dataDir, top.name);
    if (top.name === IDENTITY_FILE || top.name.startsWith('streamfeat.lock')) checkAccess(p, false, dataDir);
    else if (top.isDirectory() && TOP_DIRS.test(top.name)) {
      checkDirAndFiles(p, dataDir);
      if (top.name === 'registry') continue;
      for (const sub of readdirSync(p, { withFileTypes: true })) {
        if (sub.isDirectory() && SHARD_DIRS.has(sub.name)) checkDirAndFiles(join(p, sub.name), dataDir);
      }
    }
  }
}

function checkDirAndFiles(dir: string, dataDir: string): void {
  checkAccess(dir, true, dataDir);
  for (const f of readdirSync(dir, { withFileTypes: true })) {
    if (f.isFile()) checkAccess(join(dir, f.name), false, dataDir);
  }
}

function checkAccess(path: string, isDir: boolean, dataDir: string): void {
  try {
    accessSync(path, isDir ? constants.R_OK | constants.W_OK | constants.X_OK : constants.R_OK | constants.W_OK);
  } catch (err) {
    throw fsError(err as NodeJS.ErrnoException, path, dataDir);
  }
}

function checkFreeSpace(dataDir: string): void {
  let free: number;
  try {
    const s = statfsSync(dataDir);
    free = s.bavail * s.bsize;
  } catch {
    return; // no statfs here: writes will say ENOSPC themselves
  }
  if (free < DATA_DIR_FREE_BYTES_MIN) throw diskFull(dataDir, free);
}

function diskFull(dataDir: string, free: number | null): DataDirError {
  const left = free === null ? '' : ` (${free} bytes free)`;
  return new DataDirError(`the filesystem holding data dir ${dataDir} is full${left}: free space on it or choose a --data-dir on another disk`);
}

/**
 * One line for a filesystem error at `path` (inside the data dir or on the way
 * to it): what is wrong and what to do. Used for the server's own checks and for
 * an error a worker thread meets while the server starts (serve_cli.ts).
 */
export function fsError(err: NodeJS.ErrnoException, path: string, dataDir: string): DataDirError {
  switch (err.code) {
    case 'EACCES':
    case 'EPERM':
      return new DataDirError(`data dir ${dataDir}: ${path} is not ${accessWords(path)} by this server (${who(path)}): chown -R ${uid()} ${dataDir}, or run the server as the user who owns it`);
    case 'EROFS':
      return new DataDirError(`data dir ${dataDir} is on a read-only filesystem (cannot write ${path}): remount it read-write or choose another --data-dir`);
    case 'ENOSPC':
    case 'EDQUOT':
      return diskFull(dataDir, null);
    case 'ENOTDIR':
    case 'EISDIR':
      return new DataDirError(`data dir ${dataDir}: ${path} is not what the server expects there (${err.code}): move it away, or choose another --data-dir`);
    default:
      return new DataDirError(`data dir ${dataDir}: cannot use ${path} (${err.code ?? 'error'}: ${firstLine(err.message)}): check the disk, or choose another --data-dir`);
  }
}

/**
 * Node's message for a failed fs call, as it crosses from a worker thread (the
 * error's own members do not): `EACCES: permission denied, open '/x/y'`.
 */
const ERRNO_MESSAGE = /^(E[A-Z]+): [^,]*, \w+ '([^']+)'/;

/** The DataDirError for an error thrown while starting, when it is a filesystem error under `dataDir`; else null. */
export function startupFsError(err: unknown, dataDir: string): DataDirError | null {
  if (!(err instanceof Error)) return null;
  const m = ERRNO_MESSAGE.exec(err.message);
  if (m === null) return null;
  const root = resolve(dataDir);
  const path = resolve(m[2]);
  if (path !== root && !path.startsWith(`${root}/`)) return null;
  return fsError(Object.assign(new Error(err.message), { code: m[1] }), m[2], dataDir);
}

type EntryKind = 'dir' | 'file' | 'missing' | 'dangling';

function entryKind(path: string, dataDir: string): EntryKind {
  try {
    return statSync(path).isDirectory() ? 'dir' : 'file';
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') {
      try {
        return lstatSync(path).isSymbolicLink() ? 'dangling' : 'missing';
      } catch {
        return 'missing';
      }
    }
    if (e.code === 'ENOTDIR') return 'missing'; // an ancestor is a file: found on the way up
    throw fsError(e, path, dataDir);
  }
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function accessWords(path: string): string {
  try {
    return statSync(path).isDirectory() ? 'writable' : 'readable and writable';
  } catch {
    return 'reachable';
  }
}

/** `uid 65534; owned by uid 0, mode 0755` for a message. */
function who(path: string): string {
  try {
    const s = statSync(path);
    return `uid ${uid()}; ${path} is owned by uid ${s.uid}, mode ${(s.mode & 0o7777).toString(8).padStart(4, '0')}`;
  } catch {
    return `uid ${uid()}`;
  }
}

function uid(): string {
  return process.getuid === undefined ? '?' : String(process.getuid());
}

function firstLine(s: string): string {
  const nl = s.indexOf('\n');
  return nl < 0 ? s : s.slice(0, nl);
}

function isErrno(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string';
}
