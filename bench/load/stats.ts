/** Counters and latency histograms of one measured window, per request kind. */
import { Histogram } from '../hist';
import { KIND_NAMES, ReqKind } from './conns';
import type { JobResult, KindResult } from './jobs';

/** Characters of the first error reply kept for the report. */
const ERROR_TEXT_MAX = 300;

export class Stats {
  hist: Histogram;
  kindHists: Histogram[];
  kindOk: number[];
  kindErrors: number[];
  ok: number;
  errors: number;
  firstError: string | null;

  constructor() {
    this.hist = new Histogram();
    this.kindHists = [new Histogram(), new Histogram(), new Histogram()];
    this.kindOk = [0, 0, 0];
    this.kindErrors = [0, 0, 0];
    this.ok = 0;
    this.errors = 0;
    this.firstError = null;
  }

  /** Latency of successful replies only (as wrk and autocannon do); errors are counted. */
  reply(kind: ReqKind, ok: boolean, latencyUs: number, payload: Buffer | null): void {
    if (ok) {
      this.ok++;
      this.kindOk[kind]++;
      this.hist.record(latencyUs);
      this.kindHists[kind].record(latencyUs);
      return;
    }
    this.errors++;
    this.kindErrors[kind]++;
    if (this.firstError === null) {
      this.firstError = `${KIND_NAMES[kind]}: ${payload === null ? '(no body)' : payload.toString('utf8', 0, Math.min(payload.length, ERROR_TEXT_MAX))}`;
    }
  }

  failure(why: string): void {
    this.errors++;
    if (this.firstError === null) this.firstError = why;
  }

  result(elapsedS: number, cpu: NodeJS.CpuUsage, extra: Record<string, number> = {}): JobResult {
    const kinds: JobResult['kinds'] = {};
    for (let k = 0; k < KIND_NAMES.length; k++) {
      if (this.kindOk[k] + this.kindErrors[k] === 0) continue;
      const r: KindResult = { ok: this.kindOk[k], errors: this.kindErrors[k], hist: this.kindHists[k].toJSON() };
      kinds[KIND_NAMES[k]] = r;
    }
    return {
      requests: this.ok + this.errors,
      ok: this.ok,
      errors: this.errors,
      firstError: this.firstError,
      elapsedS,
      hist: this.hist.toJSON(),
      kinds,
      cpuUser: cpu.user / 1e6,
      cpuSys: cpu.system / 1e6,
      extra,
    };
  }
}
