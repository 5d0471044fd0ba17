/**
 * Server metrics, rendered as Prometheus text (version 0.0.4) on the admin sidecar.
 * Counters are plain numbers bumped on the front thread; nothing here allocates
 * per request.
 */

/** Push latency buckets, seconds (arrival of the request to the ack written). */
const LATENCY_BUCKETS_S = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1] as const;

export class Histogram {
  readonly counts = new Float64Array(LATENCY_BUCKETS_S.length + 1);
  sum = 0;
  count = 0;

  observe(seconds: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS_S.length && seconds > LATENCY_BUCKETS_S[i]) i++;
    this.counts[i]++;
    this.sum += seconds;
    this.count++;
  }

  render(name: string, help: string): string {
    const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} histogram`];
    let cum = 0;
    for (let i = 0; i < LATENCY_BUCKETS_S.length; i++) {
      cum += this.counts[i];
      lines.push(`${name}_bucket{le="${LATENCY_BUCKETS_S[i]}"} ${cum}`);
    }
    cum += this.counts[LATENCY_BUCKETS_S.length];
    lines.push(`${name}_bucket{le="+Inf"} ${cum}`, `${name}_sum ${this.sum}`, `${name}_count ${this.count}`);
    return lines.join('\n');
  }
}

export class Metrics {
  pushTotal = 0;
  pushReplayTotal = 0;
  getTotal = 0;
  batchGetTotal = 0;
  batchGetEntriesTotal = 0;
  registerTotal = 0;
  resetTotal = 0;
  tcpConnections = 0;
  httpRequestsTotal = 0;
  readonly errors = new Map<string, number>();
  readonly pushLatency = new Histogram();
  readonly startedMs = Date.now();

  error(code: string): void {
    this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
  }

  render(gauges: Record<string, number>): string {
    const out: string[] = [];
    const counter = (name: string, help: string, v: number): void => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`, `${name} ${v}`);
    };
    const gauge = (name: string, help: string, v: number): void => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name} ${v}`);
    };
    counter('streamfeat_push_total', 'Pushes acknowledged (including dedupe replays).', this.pushTotal);
    counter('streamfeat_push_replay_total', 'Pushes answered as idempotent dedupe replays.', this.pushReplayTotal);
    counter('streamfeat_get_total', 'Single-key gets answered.', this.getTotal);
    counter('streamfeat_batch_get_total', 'Batch gets answered.', this.batchGetTotal);
    counter('streamfeat_batch_get_entries_total', 'Entries inside answered batch gets.', this.batchGetEntriesTotal);
    counter('streamfeat_register_total', 'Successful registrations (including dry runs).', this.registerTotal);
    counter('streamfeat_reset_total', 'Successful resets.', this.resetTotal);
    counter('streamfeat_http_requests_total', 'HTTP requests with a body received on the data plane.', this.httpRequestsTotal);
    out.push('# HELP streamfeat_errors_total Error responses by code.', '# TYPE streamfeat_errors_total counter');
    for (const [code, n] of [...this.errors].sort()) out.push(`streamfeat_errors_total{code="${code}"} ${n}`);
    out.push(this.pushLatency.render('streamfeat_push_latency_seconds', 'Push latency from request to ack, seconds.'));
    gauge('streamfeat_tcp_connections', 'Open framed-TCP connections.', this.tcpConnections);
    gauge('streamfeat_uptime_seconds', 'Seconds since start.', (Date.now() - this.startedMs) / 1000);
    for (const [k, v] of Object.entries(gauges)) gauge(`streamfeat_${k}`, k.replace(/_/g, ' '), v);
    return `${out.join('\n')}\n`;
  }
}
