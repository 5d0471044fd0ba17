/**
 * Freshness: how long after a push's ack a read reflects it. Each probe
 * connection pushes one event about a key no other request uses, and on the
 * ack polls /get for that key back-to-back until the row is non-empty. The
 * sample is (reply time of the first reflecting get) - (ack time), so it
 * includes one get round trip; `polls` says how many gets that took. An
 * optional fixed-rate push load runs on other connections meanwhile.
 */
import { performance } from 'node:perf_hooks';
import { Histogram } from '../hist';
import { BodyGen, workloadNamed } from '../workloads';
import { connectAll, ReqKind, type Conn } from './conns';
import { LoadDriver, sleep, DRAIN_MS_MAX, type Mark } from './driver';
import type { FreshnessJob, JobResult } from './jobs';
import { Stats } from './stats';

/** A probe that has not seen its push after this long counts as never fresh. */
const POLL_MS_MAX = 5_000;
/** Connections of the background push load. */
const BG_CONNECTIONS = 8;

export async function freshness(job: FreshnessJob, mark: Mark): Promise<JobResult> {
  const gen = new BodyGen(workloadNamed(job.workload), job.dist, job.entities, job.getEntities, job.seed);
  let stats = new Stats();
  let polls = new Histogram();
  let never = 0;
  let firstPollHits = 0;
  let measuring = false;
  let stopping = false;
  let inflight = 0;
  let onDrained: (() => void) | null = null;
  // Keys above the load's key space: rows nobody else writes.
  let nextKey = job.entities + 1;

  const startProbe = (c: Conn): void => {
    if (stopping) return;
    c.tag = nextKey++;
    c.polls = 0;
    c.sentAt = performance.now();
    inflight++;
    c.send(ReqKind.Push, gen.push(c.tag));
  };
  const poll = (c: Conn): void => {
    c.polls++;
    inflight++;
    c.send(ReqKind.Get, gen.get(c.tag));
  };
  const onReply = (c: Conn, ok: boolean, payload: Buffer | null): void => {
    inflight--;
    const now = performance.now();
    if (stopping && inflight === 0 && onDrained !== null) onDrained();
    if (!ok) {
      if (measuring) stats.reply(c.kind, false, 0, payload);
      startProbe(c);
      return;
    }
    if (c.kind === ReqKind.Push) {
      c.intendedAt = now; // the ack
      if (stopping) return;
      poll(c);
      return;
    }
    let reflected = false;
    try {
      const row = JSON.parse(payload === null ? '{}' : payload.toString('utf8')) as Record<string, unknown>;
      reflected = Object.keys(row).length > 0;
    } catch {
      reflected = false;
    }
    if (reflected) {
      if (measuring) {
        stats.reply(ReqKind.Get, true, (now - c.intendedAt) * 1000, null);
        polls.record(c.polls);
        if (c.polls === 1) firstPollHits++;
      }
      startProbe(c);
    } else if (now - c.intendedAt > POLL_MS_MAX) {
      if (measuring) never++;
      startProbe(c);
    } else if (!stopping) {
      poll(c);
    }
  };
  const conns = await connectAll(job.transport, job.port, job.probes, onReply, (_c, why) => {
    if (!stopping) stats.failure(why);
  });
  const bg = job.bgRate > 0
    ? new LoadDriver({
      kind: 'load', transport: 'tcp', port: job.bgPort, mix: 'push', pushShare: 1, connections: BG_CONNECTIONS,
      warmupMs: job.warmupMs, durationMs: job.durationMs, rate: job.bgRate,
      workload: job.workload, dist: job.dist, entities: job.entities, getEntities: job.getEntities, seed: job.seed + 1,
    }).run(() => {})
    : null;
  for (const c of conns) startProbe(c);
  await sleep(job.warmupMs);
  stats = new Stats();
  polls = new Histogram();
  never = 0;
  firstPollHits = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  measuring = true;
  mark('measure_start');
  await sleep(job.durationMs);
  measuring = false;
  const elapsedS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  mark('measure_end');
  stopping = true;
  if (inflight > 0) await Promise.race([new Promise<void>((r) => { onDrained = r; }), sleep(DRAIN_MS_MAX)]);
  for (const c of conns) c.close();
  const bgResult = bg === null ? null : await bg;
  const p = polls.summary();
  return stats.result(elapsedS, cpu, {
    never_fresh: never,
    first_poll_share: stats.ok === 0 ? 0 : firstPollHits / stats.ok,
    polls_p50: p.p50,
    polls_p99: p.p99,
    polls_max: p.max,
    bg_rate_target: job.bgRate,
    bg_ok: bgResult?.ok ?? 0,
    bg_errors: bgResult?.errors ?? 0,
  });
}
