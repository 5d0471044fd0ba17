/**
 * Preload for get-only loads: one push for each entity 0..count-1 over
 * pipelined framed TCP (PRELOAD_DEPTH requests in flight per connection), so
 * that gets drawn from that prefix hit real rows. The soak prefills its key
 * space the same way (pipelinedPushes).
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
  const { done, errors, firstError } = await pipelinedPushes(job.port, job.count, job.connections, (i) => gen.push(i));
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

/**
 * Pushes `bodyOf(0..count-1)` over `connections` framed TCP connections,
 * PRELOAD_DEPTH in flight on each; resolves once every push is answered.
 */
export function pipelinedPushes(port: number, count: number, connections: number, bodyOf: (i: number) => string): Promise<{ done: number; errors: number; firstError: string | null }> {
  let next = 0;
  let done = 0;
  let errors = 0;
  let firstError: string | null = null;
  return new Promise((resolve, reject) => {
    if (count === 0) return resolve({ done, errors, firstError });
    for (let i = 0; i < connections; i++) {
      const s = net.connect({ port, host: '127.0.0.1' });
      const decoder = new FrameDecoder(REPLY_BYTES_MAX);
      let inflight = 0;
      const pump = (): void => {
        while (inflight < PRELOAD_DEPTH && next < count) {
          s.write(encodeFrame(OP_PUSH, bodyOf(next++)));
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
        if (done === count) resolve({ done, errors, firstError });
        else pump();
      });
    }
  });
}
