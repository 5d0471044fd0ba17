/**
 * Responsiveness checks of the hardening tests (the bar: "a concurrent /ping
 * answers in well under 300 ms"): /ping while a hostile request is served, and the
 * front thread's CPU time, which a loaded CI box does not inflate the way it does
 * wall time.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { post, type TestServer } from './server';

/** Far above a /ping on an idle server (~1 ms) and far below the 300 ms the issue allows, with room for a loaded CI box. */
export const PING_BUDGET_MS = 250;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** /ping every 10 ms while `work` runs; returns the slowest answer (ms). */
export async function slowestPingDuring(srv: TestServer, work: Promise<unknown>): Promise<number> {
  let done = false;
  let worst = 0;
  const pinger = (async () => {
    while (!done) {
      const t = performance.now();
      const r = await post(srv.base, '/ping', {});
      assert.equal(r.status, 200);
      worst = Math.max(worst, performance.now() - t);
      await sleep(10);
    }
  })();
  try {
    await work;
  } finally {
    done = true;
    await pinger;
  }
  return worst;
}

/** Attempts of a responsiveness check: a loaded CI box can slow one run; the stalls replayed here (300-900 ms) fail every run. */
export const RESPONSIVE_ATTEMPTS = 3;

/**
 * Runs `work` (a fresh request per call) while pinging, up to RESPONSIVE_ATTEMPTS times,
 * until one run keeps the slowest /ping under PING_BUDGET_MS; returns every run's result
 * for the caller to check.
 */
export async function responsiveDuring<T>(srv: TestServer, work: () => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  const worst: number[] = [];
  for (let i = 0; i < RESPONSIVE_ATTEMPTS; i++) {
    const w = work();
    worst.push(await slowestPingDuring(srv, w));
    results.push(await w);
    if (worst[i] < PING_BUDGET_MS) return results;
  }
  assert.fail(`slowest concurrent /ping per attempt: ${worst.map((w) => w.toFixed(1)).join(', ')} ms (budget ${PING_BUDGET_MS})`);
}

/** CPU time of the server's front (main) thread so far, ms (Linux /proc). */
export function frontCpuMs(srv: TestServer): number {
  const pid = srv.proc.pid!;
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // utime and stime are fields 14 and 15
  return (Number(f[11]) + Number(f[12])) * 10; // clock ticks of 10 ms (CLK_TCK 100)
}
