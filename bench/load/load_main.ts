/**
 * Entry of a load child process (forked by bench/children.ts): receives one
 * Job over IPC, runs it, reports measure_start / measure_end markers (the
 * parent samples the server's /proc counters on them) and the result, exits.
 */
import { runAutocannon } from './autocannon_driver';
import { LoadDriver, type Mark } from './driver';
import { freshness } from './freshness';
import type { ChildMsg, Job, JobResult } from './jobs';
import { preload } from './preload';

function send(m: ChildMsg): Promise<void> {
  return new Promise((resolve) => process.send!(m, undefined, undefined, () => resolve()));
}

const mark: Mark = (m) => { void send({ t: m }); };

function run(job: Job): Promise<JobResult> {
  switch (job.kind) {
    case 'load': return new LoadDriver(job).run(mark);
    case 'autocannon': return runAutocannon(job, mark);
    case 'preload': return preload(job);
    case 'freshness': return freshness(job, mark);
  }
}

// The bench parent went away (interrupted): stop loading a server nobody measures.
process.on('disconnect', () => process.exit(2));

process.once('message', (job: Job) => {
  run(job).then(
    async (result) => { await send({ t: 'result', result }); process.exit(0); },
    async (err: unknown) => { await send({ t: 'error', message: String((err as Error)?.stack ?? err) }); process.exit(1); },
  );
});
