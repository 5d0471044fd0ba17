/**
 * Prometheus text exposition (format 0.0.4) writer. In-house rather than
 * prom-client: prom-client keeps one registry per thread and reads process
 * figures in whichever thread it runs, while our figures come from several
 * threads (front, coordinator, shards) as plain data; the front renders them
 * all here, with a `thread` or `shard` label (docs/metrics.md).
 */
import { strict as assert } from 'node:assert';
import { LATENCY_BUCKETS_S, type HistogramData } from './histogram';

export type Labels = Readonly<Record<string, string | number>>;
export type MetricType = 'counter' | 'gauge' | 'histogram';

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function labelText(labels: Labels | null, extra?: string): string {
  const parts: string[] = [];
  if (labels !== null) for (const [k, v] of Object.entries(labels)) parts.push(`${k}="${escapeLabel(String(v))}"`);
  if (extra !== undefined) parts.push(extra);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

export class PromText {
  readonly #lines: string[] = [];
  readonly #families = new Map<string, MetricType>();

  /** Declares a family once (HELP + TYPE); counters must be named `_total`. */
  family(name: string, type: MetricType, help: string): this {
    assert(!this.#families.has(name), `metric family ${name} declared twice`);
    assert(type !== 'counter' || name.endsWith('_total'), `counter ${name} must end in _total`);
    assert(type === 'counter' || !name.endsWith('_total'), `${type} ${name} must not end in _total`);
    this.#families.set(name, type);
    this.#lines.push(`# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, labels: Labels | null, value: number): this {
    assert(this.#families.has(name) && this.#families.get(name) !== 'histogram', `sample of undeclared family ${name}`);
    this.#lines.push(`${name}${labelText(labels)} ${formatValue(value)}`);
    return this;
  }

  /** A family with one sample: the common case. */
  single(name: string, type: Exclude<MetricType, 'histogram'>, help: string, value: number, labels: Labels | null = null): this {
    return this.family(name, type, help).sample(name, labels, value);
  }

  /** One histogram series (buckets cumulative, +Inf last, then _sum and _count). */
  histogram(name: string, labels: Labels | null, h: HistogramData): this {
    assert(this.#families.get(name) === 'histogram', `histogram series of undeclared family ${name}`);
    let cum = 0;
    for (let i = 0; i < LATENCY_BUCKETS_S.length; i++) {
      cum += h.counts[i];
      this.#lines.push(`${name}_bucket${labelText(labels, `le="${LATENCY_BUCKETS_S[i]}"`)} ${cum}`);
    }
    cum += h.counts[LATENCY_BUCKETS_S.length];
    this.#lines.push(`${name}_bucket${labelText(labels, 'le="+Inf"')} ${cum}`);
    this.#lines.push(`${name}_sum${labelText(labels)} ${formatValue(h.sum)}`, `${name}_count${labelText(labels)} ${h.count}`);
    return this;
  }

  text(): string {
    return `${this.#lines.join('\n')}\n`;
  }
}
