/**
 * One server per data directory: two servers writing the same
 * WAL segments corrupt them (lsn_regression, a shutdown snapshot lost). At boot the
 * server creates `<data>/streamfeat.lock` holding its pid and the process start time
 * (written to a private file first, then hard-linked into place: link fails if the
 * name exists, and the lock is never seen half written); a second server finds it, sees the holder alive, and
 * stops with a StartupError naming the pid. A lock left by a dead process (kill -9,
 * power loss) is taken over: the holder is dead when its pid does not exist, is a
 * zombie or has SIGKILL pending (killed, not yet reaped: see finished()), or exists
 * with another start time (the pid was reused after a reboot or in a container).
 * Removed at clean shutdown.
 */
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fsError } from './data_dir';
import { StartupError } from './startup_error';

export const LOCK_FILE = 'streamfeat.lock';

interface Holder {
  pid: number;
  /** Start time of the process in clock ticks since boot (/proc/<pid>/stat field 22); null off Linux. */
  start: string | null;
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses); null off Linux or when gone. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

function startTimeOf(pid: number): string | null {
  return statFields(pid)?.[19] ?? null;
}

/** SIGKILL's bit in the pending-signal masks of /proc/<pid>/status (signal n is bit n - 1). */
const SIGKILL_BIT = 1n << 8n;

/**
 * A process that exists but will never run again: a zombie (Z, exited and not yet
 * reaped by its parent) or a dead task (X), or one with SIGKILL pending, which is
 * tearing down (no user code runs after SIGKILL is pending). A server restarted
 * right after `kill -9` finds its predecessor in one of these states for as long
 * as the parent has not reaped it, and must not wait for that.
 */
function finished(pid: number): boolean {
  const state = statFields(pid)?.[0];
  if (state === 'Z' || state === 'X' || state === 'x') return true;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    for (const m of status.matchAll(/^(?:ShdPnd|SigPnd):\s*([0-9a-f]+)$/gm)) {
      if ((BigInt(`0x${m[1]}`) & SIGKILL_BIT) !== 0n) return true;
    }
  } catch { /* gone, or not Linux */ }
  return false;
}

function alive(h: Holder): boolean {
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false; // ESRCH: no such process
  }
  if (finished(h.pid)) return false;
  if (h.start === null) return true;
  const now = startTimeOf(h.pid);
  return now === null || now === h.start;
}

function readHolder(path: string): Holder | null {
  try {
    const h = JSON.parse(readFileSync(path, 'utf8')) as Partial<Holder>;
    return typeof h.pid === 'number' ? { pid: h.pid, start: typeof h.start === 'string' ? h.start : null } : null;
  } catch {
    return null; // gone, or half written by a holder that died while writing it
  }
}

export interface DataDirLock {
  release(): void;
}

export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE);
  const me: Holder = { pid: process.pid, start: startTimeOf(process.pid) };
  const mine = `${path}.${process.pid}`;
  try {
    writeFileSync(mine, JSON.stringify(me));
  } catch (err) {
    throw fsError(err as NodeJS.ErrnoException, mine, dataDir);
  }
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(mine, path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw fsError(err as NodeJS.ErrnoException, path, dataDir);
        const holder = readHolder(path);
        if (holder !== null && alive(holder)) {
          throw new StartupError(`data dir ${dataDir} is in use by another streamfeat server (pid ${holder.pid}, lock file ${path}); stop it first, or use another --data-dir`);
        }
        // Stale: move it aside under a name only we use, then link ours. Two servers taking
        // over the same stale lock both rename; only one rename finds the file, the other retries.
        const aside = `${path}.stale.${process.pid}`;
        try {
          renameSync(path, aside);
          unlinkSync(aside);
        } catch { /* another starter moved it first */ }
        continue;
      }
      return {
        release(): void {
          const h = readHolder(path);
          if (h !== null && h.pid === me.pid) {
            try { unlinkSync(path); } catch { /* already gone */ }
          }
        },
      };
    }
  } finally {
    try { unlinkSync(mine); } catch { /* not created */ }
  }
  throw new StartupError(`could not take over the stale lock file ${path}; remove it if no streamfeat server uses ${dataDir}`);
}
