/**
 * The descriptor budget, decided once at start (server.ts, before the data-plane
 * listeners bind): every connection costs a descriptor, and a process at its
 * RLIMIT_NOFILE cannot open the next WAL segment or snapshot file, so every push
 * would answer wal_unavailable. The HTTP and TCP connection caps are lowered so
 * that, with both full, the reserve (FD_RESERVE_*) is still free for the data dir
 * and the threads. Node raises the soft limit to the hard one when it starts, so the
 * limit read here is what the process really has (docs/security.md "Descriptors").
 */
import { readdirSync, readFileSync } from 'node:fs';
import { FD_CONNECTIONS_MIN, FD_RESERVE_FRACTION, FD_RESERVE_MIN, FD_RESERVE_PER_SHARD } from './limits';
import { StartupError } from './startup_error';

export interface FdBudget {
  /** RLIMIT_NOFILE (soft) of the process; null when it cannot be read (then the caps are as configured). */
  limit: number | null;
  /** Descriptors open when the budget was made (threads, WAL files, stdio). */
  inUse: number;
  reserve: number;
  httpConnectionsMax: number;
  tcpConnectionsMax: number;
  /** Settings whose value was lowered to fit, with the value asked for. */
  lowered: Array<{ setting: string; asked: number; got: number }>;
}

/** The soft `Max open files` of this process (Linux /proc), or null. */
export function nofileLimit(): number | null {
  try {
    const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (m === null) return null;
    return m[1] === 'unlimited' ? null : Number(m[1]);
  } catch {
    return null;
  }
}

/** Descriptors this process has open (Linux /proc; the directory listing's own descriptor included, one too many at worst). */
export function openDescriptors(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return 0;
  }
}

/**
 * The caps for `limit` descriptors with `inUse` open: each listener gets what it asked
 * for when both fit; otherwise each gets at least half of what is available, and the
 * other half goes to whichever asked for more. Throws a StartupError when a listener
 * would get fewer than FD_CONNECTIONS_MIN.
 */
export function descriptorBudget(limit: number | null, inUse: number, shards: number, httpAsked: number, tcpAsked: number): FdBudget {
  if (limit === null) return { limit, inUse, reserve: 0, httpConnectionsMax: httpAsked, tcpConnectionsMax: tcpAsked, lowered: [] };
  const reserve = Math.max(FD_RESERVE_MIN + FD_RESERVE_PER_SHARD * shards, Math.ceil(limit * FD_RESERVE_FRACTION));
  const available = limit - inUse - reserve;
  const half = Math.floor(available / 2);
  if (half < FD_CONNECTIONS_MIN) {
    throw new StartupError(`the descriptor limit (RLIMIT_NOFILE) is ${limit}: with ${inUse} open and ${reserve} kept for the data dir and threads, `
      + `${Math.max(0, available)} are left for connections, fewer than ${FD_CONNECTIONS_MIN} per listener; raise it (ulimit -n, LimitNOFILE= in systemd)`);
  }
  const tcp = Math.min(tcpAsked, Math.max(half, available - httpAsked));
  const http = Math.min(httpAsked, available - tcp);
  const lowered: FdBudget['lowered'] = [];
  if (http < httpAsked) lowered.push({ setting: 'http-connections-max', asked: httpAsked, got: http });
  if (tcp < tcpAsked) lowered.push({ setting: 'tcp-connections-max', asked: tcpAsked, got: tcp });
  return { limit, inUse, reserve, httpConnectionsMax: http, tcpConnectionsMax: tcp, lowered };
}
