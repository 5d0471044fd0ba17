/**
 * Preload for get-only loads: one push for each entity 0..count-1 over
 * pipelined framed TCP (PRELOAD_DEPTH requests in flight per connection), so
 * that gets drawn from that prefix hit real rows.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { encodeFrame, FrameDecoder, OP_ERROR_RESPONSE, OP_PUSH } from '../../src/protocol/frame';
import { Histogram } from '../hist';
import { BodyGen, workloadNamed } from '../workloads';
import type { JobResult, PreloadJob } from './jobs';

/** Requests in flight per preload connection (the server allows 1024). */
const PRELOAD_DEPTH = 32;
const REPLY_BYTES_MAX = 1024 * 1024;

export async function preload(job: PreloadJob): Promise<JobResult> {
  const gen = new BodyGen(workloadNamed(job.workload), job.dist, job.entities, job.getEntities, job.seed);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  let done = 0;
  let errors = 0;
  let firstError: string | null = null;
  await new Promise<void>((resolve, reject) => {
    if (job.count === 0) return resolve();
    for (let i = 0; i < job.connections; i++) {
      const s = net.connect({ port: job.port, host: '127.0.0.1' });
      const decoder = new FrameDecoder(REPLY_BYTES_MAX);
      let inflight = 0;
      const pump = (): void => {
        while (inflight < PRELOAD_DEPTH && next < job.count) {
          s.write(encodeFrame(OP_PUSH, gen.push(next++)));
          inflight++;
        }
        if (inflight === 0) s.end();
      };
      s.setNoDelay(true);
      s.on('connect', pump);
      s.on('error', (e) => reject(new Error(`preload connection: ${e.message}`)));
      s.on('data', (d: Buffer) => {
        decoder.push(d);
        for (;;) {
          const r = decoder.next();
          if (r.kind !== 'frame') break;
          inflight--;
          done++;
          if (r.frame.op === OP_ERROR_RESPONSE) {
            errors++;
            firstError ??= r.frame.payload.toString('utf8', 0, 300);
          }
        }
        if (done === job.count) resolve();
        else pump();
      });
    }
  });
  const elapsedS = (performance.now() - t0) / 1000;
  return {
    requests: done,
    ok: done - errors,
    errors,
    firstError,
    elapsedS,
    hist: new Histogram().toJSON(),
    kinds: {},
    cpuUser: process.cpuUsage(cpu0).user / 1e6,
    cpuSys: process.cpuUsage(cpu0).system / 1e6,
    extra: { preloaded: done, rate: elapsedS > 0 ? done / elapsedS : 0 },
  };
}
