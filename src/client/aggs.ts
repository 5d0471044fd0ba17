/**
 * Aggregation builders, one per op of the catalogue (spec 2.3; docs/ops.md).
 * Each returns an Agg that serialises to `{"op", "params"}` with the input column
 * in `params.field` (the wire shape of a feature, docs/ops.md).
 *
 * Aliases (`avg`, `variance`, `stddev`, `countDistinct`, `percentile`, `ema`)
 * emit the canonical op name, so a table registered through an alias diffs as
 * unchanged against one registered through the canonical name.
 *
 * Parameters keep their wire names (`half_life`, `sub_window`, `lat_field`, ...);
 * the camelCase spellings (`halfLife`, ...) are accepted too. The client does
 * not range-check values: the server owns those rules and answers with their
 * codes (invalid_percentile_q, invalid_top_k_k, ...).
 */
import type { JsonValue } from '../types';
import { exprText } from './expr';
import type { Expr } from './expr';
import type { WireAggSpec } from './wire';

/** A duration: a window string (`90s`, `5m`, `forever`) or integer milliseconds. */
export type Duration = string | number;

export interface AggParams {
  window?: Duration;
  where?: Expr | string;
  half_life?: Duration;
  halfLife?: Duration;
  sub_window?: Duration;
  subWindow?: Duration;
  q?: number;
  k?: number;
  fpr?: number;
  capacity?: number;
  sigma?: number;
  n?: number;
  buckets?: number[];
  samples?: number;
  lat_field?: string;
  latField?: string;
  lon_field?: string;
  lonField?: string;
  categories?: string[];
  max_categories?: number;
  maxCategories?: number;
}

const CAMEL_TO_WIRE: Record<string, string> = {
  halfLife: 'half_life',
  subWindow: 'sub_window',
  latField: 'lat_field',
  lonField: 'lon_field',
  maxCategories: 'max_categories',
};

const DURATION_PARAMS = new Set(['window', 'half_life', 'sub_window']);

export class Agg {
  readonly op: string;
  readonly params: Record<string, JsonValue>;

  constructor(op: string, params: Record<string, JsonValue>) {
    this.op = op;
    this.params = params;
  }

  toSpec(): WireAggSpec {
    return { op: this.op, params: { ...this.params } };
  }

  toJSON(): WireAggSpec {
    return this.toSpec();
  }
}

/** Duration string for the wire: strings as written, numbers as `<n>ms`. */
export function durationText(d: Duration): string {
  if (typeof d === 'string') return d;
  if (!Number.isInteger(d) || d <= 0) throw new TypeError(`a duration in ms must be a positive integer, got ${d}`);
  return `${d}ms`;
}

/** Normalises params to wire names; `field` (if any) comes first. */
export function wireParams(field: string | null, params: AggParams | undefined): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  if (field !== null) out.field = field;
  if (params === undefined) return out;
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    const name = CAMEL_TO_WIRE[k] ?? k;
    if (name === 'where') out.where = exprText(v as Expr | string);
    else if (DURATION_PARAMS.has(name)) out[name] = durationText(v as Duration);
    else out[name] = v as JsonValue;
  }
  return out;
}

function make(op: string, field: string | null, params?: AggParams): Agg {
  return new Agg(op, wireParams(field, params));
}

type FieldAgg = (field: string, params?: AggParams) => Agg;
type PlainAgg = (params?: AggParams) => Agg;

const fieldOp = (op: string): FieldAgg => (field, params) => make(op, field, params);
const plainOp = (op: string): PlainAgg => (params) => make(op, null, params);

/** Canonical op names the builders emit, by family (one builder each, below). */
export const AGG_OPS = {
  core: ['count', 'sum', 'mean', 'min', 'max', 'var', 'std', 'ratio'],
  point: ['first', 'last', 'first_n', 'last_n', 'lag'],
  recency: ['first_seen', 'last_seen', 'age', 'has_seen', 'time_since', 'time_since_last_n', 'first_seen_in_window'],
  streak: ['streak', 'max_streak', 'negative_streak'],
  decay: ['ewma', 'ewvar', 'ew_zscore', 'decayed_sum', 'decayed_count', 'twa'],
  velocity: [
    'rate_of_change', 'inter_arrival_stats', 'burst_count', 'delta_from_prev', 'trend', 'trend_residual',
    'outlier_count', 'value_change_count', 'velocity', 'rate', 'z_score',
  ],
  sketch: ['n_unique', 'quantile', 'top_k', 'bloom_member', 'entropy'],
  buffer: [
    'histogram', 'hour_of_day_histogram', 'dow_hour_histogram', 'seasonal_deviation', 'event_type_mix',
    'most_recent_n', 'reservoir_sample',
  ],
  geo: ['geo_velocity', 'geo_distance', 'geo_spread', 'distance_from_home'],
} as const;

/** Alias op names -> canonical names (spec 2.3, 9.4). */
export const AGG_ALIASES: Readonly<Record<string, string>> = {
  avg: 'mean',
  variance: 'var',
  stddev: 'std',
  count_distinct: 'n_unique',
  percentile: 'quantile',
  ema: 'ewma',
};

/**
 * The builders. Positional arguments are the parameters an op cannot do
 * without (its field, `n`, `q`, `half_life`, ...); everything else goes in params.
 */
export const agg = {
  // Core.
  count: plainOp('count'),
  sum: fieldOp('sum'),
  mean: fieldOp('mean'),
  avg: fieldOp('mean'),
  min: fieldOp('min'),
  max: fieldOp('max'),
  var: fieldOp('var'),
  variance: fieldOp('var'),
  std: fieldOp('std'),
  stddev: fieldOp('std'),
  /** Matching events / all events reaching the table; `where` gates the numerator. */
  ratio: (where: Expr | string, params?: AggParams) => make('ratio', null, { ...params, where }),

  // Point values.
  first: fieldOp('first'),
  last: fieldOp('last'),
  firstN: (field: string, n: number, params?: AggParams) => make('first_n', field, { ...params, n }),
  lastN: (field: string, n: number, params?: AggParams) => make('last_n', field, { ...params, n }),
  lag: (field: string, n = 1, params?: AggParams) => make('lag', field, { ...params, n }),

  // Recency.
  firstSeen: plainOp('first_seen'),
  lastSeen: plainOp('last_seen'),
  age: plainOp('age'),
  hasSeen: plainOp('has_seen'),
  timeSince: plainOp('time_since'),
  timeSinceLastN: (n: number, params?: AggParams) => make('time_since_last_n', null, { ...params, n }),
  firstSeenInWindow: (window: Duration, params?: AggParams) => make('first_seen_in_window', null, { ...params, window }),

  // Streaks.
  streak: plainOp('streak'),
  maxStreak: plainOp('max_streak'),
  negativeStreak: plainOp('negative_streak'),

  // Decay.
  ewma: (field: string, halfLife: Duration, params?: AggParams) => make('ewma', field, { ...params, half_life: halfLife }),
  ema: (field: string, halfLife: Duration, params?: AggParams) => make('ewma', field, { ...params, half_life: halfLife }),
  ewvar: (field: string, halfLife: Duration, params?: AggParams) => make('ewvar', field, { ...params, half_life: halfLife }),
  ewZscore: (field: string, halfLife: Duration, params?: AggParams) =>
    make('ew_zscore', field, { ...params, half_life: halfLife }),
  decayedSum: (field: string, halfLife: Duration, params?: AggParams) =>
    make('decayed_sum', field, { ...params, half_life: halfLife }),
  decayedCount: (halfLife: Duration, params?: AggParams) => make('decayed_count', null, { ...params, half_life: halfLife }),
  twa: fieldOp('twa'),

  // Velocity, rates and change.
  rateOfChange: fieldOp('rate_of_change'),
  interArrivalStats: plainOp('inter_arrival_stats'),
  burstCount: (subWindow: Duration, params?: AggParams) => make('burst_count', null, { ...params, sub_window: subWindow }),
  deltaFromPrev: fieldOp('delta_from_prev'),
  trend: fieldOp('trend'),
  trendResidual: fieldOp('trend_residual'),
  outlierCount: fieldOp('outlier_count'),
  valueChangeCount: fieldOp('value_change_count'),
  /** Sum of the field per second over the window. */
  velocity: (field: string, window: Duration, params?: AggParams) => make('velocity', field, { ...params, window }),
  /** Events per second over the window. */
  rate: (window: Duration, params?: AggParams) => make('rate', null, { ...params, window }),
  zScore: fieldOp('z_score'),

  // Sketches.
  nUnique: fieldOp('n_unique'),
  countDistinct: fieldOp('n_unique'),
  quantile: (field: string, q: number, params?: AggParams) => make('quantile', field, { ...params, q }),
  percentile: (field: string, q: number, params?: AggParams) => make('quantile', field, { ...params, q }),
  topK: fieldOp('top_k'),
  bloomMember: fieldOp('bloom_member'),
  entropy: fieldOp('entropy'),

  // Buffers and histograms.
  histogram: (field: string, buckets: number[], params?: AggParams) => make('histogram', field, { ...params, buckets }),
  hourOfDayHistogram: plainOp('hour_of_day_histogram'),
  dowHourHistogram: plainOp('dow_hour_histogram'),
  seasonalDeviation: fieldOp('seasonal_deviation'),
  eventTypeMix: fieldOp('event_type_mix'),
  mostRecentN: (field: string, n: number, params?: AggParams) => make('most_recent_n', field, { ...params, n }),
  reservoirSample: (field: string, samples: number, params?: AggParams) =>
    make('reservoir_sample', field, { ...params, samples }),

  // Geo (lat_field / lon_field default to the columns `lat` / `lon` server-side).
  geoVelocity: plainOp('geo_velocity'),
  geoDistance: plainOp('geo_distance'),
  geoSpread: plainOp('geo_spread'),
  distanceFromHome: plainOp('distance_from_home'),

  /** Any op by name, for ops newer than this client. */
  op: (op: string, field: string | null = null, params?: AggParams) => make(op, field, params),
};
