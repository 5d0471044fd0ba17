/**
 * Windowed forms of the count-table ops (histogram, hour_of_day_histogram,
 * dow_hour_histogram, event_type_mix): one WindowAgg over a Tally, a sparse
 * key -> count map plus the total of accepted events, so a bucket of the window
 * (val_window.ts) costs one entry per cell it saw, never the op's full table
 * (up to 1025 histogram cells). The lifetime forms keep their dense tables in
 * buffer.ts; both answer through the same output functions.
 */
import type { JsonValue, Value } from '../types';
import { categoryOf, dowHourIndex, HistogramCfg, histogramOut, MixCfg, mixOut, timeHistogramOut, utcHour } from './buffer';
import type { WindowAgg } from './val_window';
import { isNum } from './values';

type Scalar = string | number | boolean;

/** Counts per key, and every accepted event in `total` (kept in a cell or not). */
export class Tally {
  readonly map: Map<string | number, number>;
  total: number;
  constructor() {
    this.map = new Map();
    this.total = 0;
  }
}

/** What a tally op decides per event. */
export interface TallyRule {
  accepts(x: Value | undefined): boolean;
  /** The cell of an accepted value at time t; null = counted in the total only. */
  key(v: Scalar, t: number): string | number | null;
  /** Most keys held: a new key past it is dropped (still counted in the total). */
  readonly maxKeys: number;
  result(a: Tally): JsonValue;
}

export class TallyAgg implements WindowAgg<Tally> {
  readonly rule: TallyRule;
  constructor(rule: TallyRule) {
    this.rule = rule;
  }
  accepts(x: Value | undefined): x is Scalar {
    return this.rule.accepts(x);
  }
  empty(): Tally {
    return new Tally();
  }
  clear(a: Tally): Tally {
    a.map.clear();
    a.total = 0;
    return a;
  }
  add(a: Tally, v: Scalar, t: number): Tally {
    a.total++;
    const k = this.rule.key(v, t);
    if (k !== null) this.count(a, k, 1);
    return a;
  }
  private count(a: Tally, k: string | number, n: number): void {
    const prev = a.map.get(k);
    if (prev !== undefined) a.map.set(k, prev + n);
    else if (a.map.size < this.rule.maxKeys) a.map.set(k, n);
  }
  merge(into: Tally, from: Tally): Tally {
    into.total += from.total;
    for (const [k, n] of from.map) this.count(into, k, n);
    return into;
  }
  result(a: Tally): JsonValue {
    return this.rule.result(a);
  }
  save(a: Tally): unknown {
    return [a.total, [...a.map]];
  }
  load(saved: unknown): Tally {
    const [total, entries] = saved as [number, Array<[string | number, number]>];
    const a = new Tally();
    a.total = total;
    for (const [k, n] of entries) a.map.set(k, n);
    return a;
  }
}

const cellOf = (a: Tally) => (i: number): number => a.map.get(i) ?? 0;

export function histogramRule(cfg: HistogramCfg): TallyRule {
  return {
    accepts: isNum,
    key: (v) => (cfg.edges.length === 0 ? 0 : cfg.cell(v as number)),
    maxKeys: Infinity,
    result: (a) => histogramOut(cfg, cellOf(a)),
  };
}

export function timeHistogramRule(dow: boolean): TallyRule {
  return {
    accepts: () => true,
    key: (_v, t) => (dow ? dowHourIndex(t) : utcHour(t)),
    maxKeys: Infinity,
    result: (a) => timeHistogramOut(dow, cellOf(a)),
  };
}

export function mixRule(cfg: MixCfg): TallyRule {
  return {
    accepts: (x) => x !== null && x !== undefined && (typeof x !== 'number' || Number.isFinite(x)),
    key: (v) => {
      const c = categoryOf(v);
      return cfg.allow !== null && !cfg.allow.has(c) ? null : c;
    },
    maxKeys: cfg.maxCategories,
    result: (a) => mixOut(a.map as Map<string, number>, a.total),
  };
}
