/**
 * autocannon through its programmatic API, closed loop, one request in flight
 * per connection (or `pipelining` of them: the http-engines scenario). setupRequest draws a fresh body (and, for the mix, the
 * route) for every request. autocannon's own histogram rounds to whole
 * milliseconds, so latencies are taken from its 'response' events (float ms)
 * into our microsecond histogram instead. A warmup run precedes the measured one.
 */
import { Rng } from '../keys';
import { BodyGen, workloadNamed } from '../workloads';
import type { Mark } from './driver';
import type { AutocannonJob, JobResult } from './jobs';
import { Stats } from './stats';
import { ReqKind } from './conns';

const HEADERS = { 'content-type': 'application/json' };
/** Per-request timeout, seconds (a stuck server shows as errors, not a hang). */
const TIMEOUT_S = 10;

export async function runAutocannon(job: AutocannonJob, mark: Mark): Promise<JobResult> {
  // Loaded here, not at the top: the other jobs must work without autocannon installed.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const autocannon = require('autocannon') as typeof import('autocannon');
  const gen = new BodyGen(workloadNamed(job.workload), job.dist, job.entities, job.getEntities, job.seed);
  const rng = new Rng(job.seed ^ 0x27d4eb2d);
  const setupRequest = (req: import('autocannon').Request): import('autocannon').Request => {
    let kind = job.mix;
    if (kind === 'mixed') kind = rng.next() < job.pushShare ? 'push' : 'get';
    if (kind === 'push') { req.path = '/push'; req.body = gen.push(); }
    else if (kind === 'get') { req.path = '/get'; req.body = gen.get(); }
    else { req.path = '/batch_get'; req.body = gen.batchGet(); }
    return req;
  };
  const once = (durationMs: number, stats: Stats | null): Promise<import('autocannon').Result> =>
    new Promise((resolve, reject) => {
      const inst = autocannon({
        url: `http://127.0.0.1:${job.port}`,
        connections: job.connections,
        duration: Math.max(1, Math.round(durationMs / 1000)),
        pipelining: job.pipelining,
        timeout: TIMEOUT_S,
        requests: [{ method: 'POST', headers: HEADERS, setupRequest }],
      }, (err, res) => (err ? reject(err) : resolve(res)));
      if (stats !== null) {
        // Response events carry no request kind; mixes are reported as one distribution.
        inst.on('response', (_client, status, _bytes, ms) => {
          const ok = status >= 200 && status < 300;
          stats.reply(ReqKind.Push, ok, ms * 1000, ok ? null : Buffer.from(`HTTP ${status}`));
        });
        inst.on('reqError', (e) => stats.failure(String(e.message)));
      }
    });
  if (job.warmupMs > 0) await once(job.warmupMs, null);
  const stats = new Stats();
  const cpu0 = process.cpuUsage();
  mark('measure_start');
  const res = await once(job.durationMs, stats);
  const cpu = process.cpuUsage(cpu0);
  mark('measure_end');
  // autocannon reconnects silently when the server closes a connection, losing
  // the requests in flight on it (uWS with -p N): those show only as requests
  // sent and never answered, so that count is reported (up to connections x
  // pipelining are legitimately in flight when the run stops).
  const answered = stats.ok + stats.errors;
  const out = stats.result(res.duration, cpu, {
    connections: job.connections, pipelining: job.pipelining, timeouts: res.timeouts, autocannon_errors: res.errors,
    unanswered: Math.max(0, res.requests.sent - answered),
  });
  // The one kind recorded is the whole mix: name it after the job.
  out.kinds = {};
  return out;
}
