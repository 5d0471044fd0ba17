/**
 * Parent side of the load children: forks bench/load/load_main.js, sends the
 * job, calls back on the measure markers (so that the caller samples the
 * server's CPU over exactly the child's window) and resolves with the result.
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import type { ChildMsg, Job, JobResult } from './load/jobs';
import { trackChild } from './procs';

const LOAD_MAIN = join(__dirname, 'load', 'load_main.js');
/** Slack over the job's own duration before the child is presumed stuck. */
const CHILD_SLACK_MS = 60_000;

export interface Markers {
  onStart?: () => void;
  onEnd?: () => void;
}

export function runChild(job: Job, markers: Markers = {}, expectedMs = 0): Promise<JobResult> {
  return new Promise((resolve, reject) => {
    const child = fork(LOAD_MAIN, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] });
    trackChild(child);
    let settled = false;
    const finish = (err: Error | null, r?: JobResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        if (child.exitCode === null) child.kill('SIGKILL');
        reject(err);
      } else {
        resolve(r!);
      }
    };
    const timer = setTimeout(() => finish(new Error(`load child (${job.kind}) did not finish within ${expectedMs + CHILD_SLACK_MS} ms`)),
      expectedMs + CHILD_SLACK_MS);
    child.on('message', (m: ChildMsg) => {
      if (m.t === 'measure_start') markers.onStart?.();
      else if (m.t === 'measure_end') markers.onEnd?.();
      else if (m.t === 'result') finish(null, m.result);
      else finish(new Error(`load child (${job.kind}) failed: ${m.message}`));
    });
    // 'close' (not 'exit'): fires after the IPC channel is drained, so a result sent just before exiting is not lost.
    child.on('close', (code) => finish(new Error(`load child (${job.kind}) exited with code ${code} without a result`)));
    child.on('error', (e) => finish(e));
    child.send(job);
  });
}
