/**
 * CPU and memory of a process from /proc (Linux). /proc/<pid>/stat sums every
 * thread of the process, so the server's shard workers (threads) are counted.
 * On a system without /proc the readers return null and the report says n/a.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second for utime/stime; 100 on every Linux we know of. */
const CLK_TCK_FALLBACK = 100;

let clkTck: number | null = null;

function ticksPerSecond(): number {
  if (clkTck === null) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || CLK_TCK_FALLBACK;
    } catch {
      clkTck = CLK_TCK_FALLBACK;
    }
  }
  return clkTck;
}

export interface CpuTimes {
  /** seconds */
  user: number;
  sys: number;
  /** Waited-for children (cutime + cstime), seconds: how we account wrk's CPU. */
  childUser: number;
  childSys: number;
}

/** utime, stime, cutime, cstime of pid ('self' for this process), or with `tid` of that one thread of it. */
export function cpuTimes(pid: number | 'self', tid: number | null = null): CpuTimes | null {
  let text: string;
  try {
    text = readFileSync(tid === null ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces: count fields after its closing paren.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state); utime is field 14.
  const t = ticksPerSecond();
  return {
    user: Number(rest[11]) / t,
    sys: Number(rest[12]) / t,
    childUser: Number(rest[13]) / t,
    childSys: Number(rest[14]) / t,
  };
}

/** Peak resident set (VmHWM) in bytes, or null. */
export function peakRssBytes(pid: number): number | null {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** CPU spent between two samples. */
export interface CpuUse {
  user: number;
  sys: number;
  /** (user + sys) / wall, as % of one core. */
  pctOfCore: number;
}

export function cpuBetween(a: CpuTimes | null, b: CpuTimes | null, wallSeconds: number): CpuUse | null {
  if (a === null || b === null || wallSeconds <= 0) return null;
  const user = b.user - a.user;
  const sys = b.sys - a.sys;
  return { user, sys, pctOfCore: ((user + sys) / wallSeconds) * 100 };
}

/** Children's CPU (cutime/cstime) between two samples of this process. */
export function childCpuBetween(a: CpuTimes | null, b: CpuTimes | null, wallSeconds: number): CpuUse | null {
  if (a === null || b === null || wallSeconds <= 0) return null;
  const user = b.childUser - a.childUser;
  const sys = b.childSys - a.childSys;
  return { user, sys, pctOfCore: ((user + sys) / wallSeconds) * 100 };
}

/** CPU seconds (user + sys) of one thread of pid: the main thread when tid = pid (the server's front). */
export function threadCpuSeconds(pid: number, tid: number = pid): number | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / ticksPerSecond();
}

/** ns on CPU per thread of `pid` (schedstat: finer than the clock ticks of /proc/<pid>/stat), by tid. */
export function threadCpuNs(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(Number(t), Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]));
    } catch { /* thread gone */ }
  }
  return out;
}
