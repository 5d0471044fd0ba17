/** Process-wide figures (one set for all threads), read on the front at scrape time. */
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessStats {
  cpuUserSeconds: number;
  cpuSystemSeconds: number;
  residentBytes: number;
  startTimeSeconds: number;
  /** -1 where /proc is unavailable. */
  openFds: number;
  maxFds: number;
}

const startTimeSeconds = Math.round((Date.now() - process.uptime() * 1000) / 10) / 100;

function openFds(): number {
  try { return readdirSync('/proc/self/fd').length; } catch { return -1; }
}

function maxFds(): number {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m === null ? -1 : Number(m[1]);
  } catch { return -1; }
}

export function processStats(): ProcessStats {
  const cpu = process.cpuUsage();
  return {
    cpuUserSeconds: cpu.user / 1e6,
    cpuSystemSeconds: cpu.system / 1e6,
    residentBytes: process.memoryUsage.rss(),
    startTimeSeconds,
    openFds: openFds(),
    maxFds: maxFds(),
  };
}
