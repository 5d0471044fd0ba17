/**
 * The subset of node:fs the durability library uses, as an interface, so that
 * tests (and the lead's ENOSPC/EIO tests) can inject faults without touching the
 * real disk layer. Everything is synchronous: a shard is its own thread and a
 * batch must be on disk before its acks are posted.
 */
import * as nodeFs from 'node:fs';

export interface StatLike {
  size: number;
  isDirectory(): boolean;
}

export interface FsLike {
  openSync(path: string, flags: string | number, mode?: number): number;
  /** pwrite-style: writes `length` bytes of `buffer` from `offset` at file `position`. */
  writeSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number;
  /** pread-style: reads up to `length` bytes at file `position` into `buffer` from `offset`; 0 at end of file. */
  readSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number;
  fdatasyncSync(fd: number): void;
  fsyncSync(fd: number): void;
  closeSync(fd: number): void;
  ftruncateSync(fd: number, length: number): void;
  readFileSync(path: string): Buffer;
  readdirSync(path: string): string[];
  renameSync(from: string, to: string): void;
  unlinkSync(path: string): void;
  mkdirSync(path: string, options: { recursive: true }): void;
  statSync(path: string): StatLike;
}

/** node:fs itself, narrowed to FsLike. */
export const realFs: FsLike = {
  openSync: (path, flags, mode) => nodeFs.openSync(path, flags, mode),
  writeSync: (fd, buffer, offset, length, position) => nodeFs.writeSync(fd, buffer, offset, length, position),
  readSync: (fd, buffer, offset, length, position) => nodeFs.readSync(fd, buffer, offset, length, position),
  fdatasyncSync: (fd) => nodeFs.fdatasyncSync(fd),
  fsyncSync: (fd) => nodeFs.fsyncSync(fd),
  closeSync: (fd) => nodeFs.closeSync(fd),
  ftruncateSync: (fd, length) => nodeFs.ftruncateSync(fd, length),
  readFileSync: (path) => nodeFs.readFileSync(path),
  readdirSync: (path) => nodeFs.readdirSync(path),
  renameSync: (from, to) => nodeFs.renameSync(from, to),
  unlinkSync: (path) => nodeFs.unlinkSync(path),
  mkdirSync: (path, options) => {
    nodeFs.mkdirSync(path, options);
  },
  statSync: (path) => nodeFs.statSync(path),
};

export type FaultCode = 'ENOSPC' | 'EIO';

export interface FaultyFs extends FsLike {
  /**
   * While set, a write first lands half of its bytes and returns that short count
   * (what a filling disk does), and the next write throws `code`. A write of one
   * byte throws at once. null switches faults off.
   */
  failWrites(code: FaultCode | null): void;
  /** While set, fdatasyncSync and fsyncSync (files and directories) throw `code`. */
  failSyncs(code: FaultCode | null): void;
  /** While set, ftruncateSync throws `code` (to exercise the failed-rollback paths). */
  failTruncates(code: FaultCode | null): void;
  /** Number of faults thrown so far (all kinds). */
  readonly faultCount: number;
}

/** An errno-style error like the ones node:fs throws. */
export function fsError(code: FaultCode, syscall: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`${code}: injected fault, ${syscall}`);
  err.code = code;
  err.errno = code === 'ENOSPC' ? -28 : -5;
  err.syscall = syscall;
  return err;
}

/** Wraps `base` with switchable ENOSPC/EIO faults (see FaultyFs). */
export function faultyFs(base: FsLike): FaultyFs {
  let writeFault: FaultCode | null = null;
  let syncFault: FaultCode | null = null;
  let truncateFault: FaultCode | null = null;
  let shortWriteDone = false;
  let faults = 0;
  const fail = (code: FaultCode, syscall: string): never => {
    faults++;
    throw fsError(code, syscall);
  };
  return {
    ...base,
    writeSync(fd, buffer, offset, length, position) {
      if (writeFault === null) return base.writeSync(fd, buffer, offset, length, position);
      if (!shortWriteDone && length > 1) {
        shortWriteDone = true;
        return base.writeSync(fd, buffer, offset, length >>> 1, position);
      }
      shortWriteDone = false;
      return fail(writeFault, 'write');
    },
    fdatasyncSync(fd) {
      if (syncFault !== null) fail(syncFault, 'fdatasync');
      base.fdatasyncSync(fd);
    },
    fsyncSync(fd) {
      if (syncFault !== null) fail(syncFault, 'fsync');
      base.fsyncSync(fd);
    },
    ftruncateSync(fd, length) {
      if (truncateFault !== null) fail(truncateFault, 'ftruncate');
      base.ftruncateSync(fd, length);
    },
    failWrites(code) {
      writeFault = code;
      shortWriteDone = false;
    },
    failSyncs(code) {
      syncFault = code;
    },
    failTruncates(code) {
      truncateFault = code;
    },
    get faultCount() {
      return faults;
    },
  };
}
