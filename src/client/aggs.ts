/**
 * Aggregation builders, one per op of the catalogue (spec 2.3, peer-facts 1.5,
 * DESIGN.md 3). Each returns an Agg that serialises to `{"op", "params"}` with
 * the input column in `params.field` (DESIGN.md 5).
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
import type { InputValue, InputValues } from './typed';
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

/**
 * One aggregation. `Out` is the type of its value in a feature row and `Field` the
 * column it reads (never for ops without one): types only, so that table() can
 * check the column exists upstream and get() can type the row (typed.ts).
 */
export class Agg<Out = unknown, Field extends string = string> {
  readonly op: string;
  readonly params: Record<string, JsonValue>;
  declare readonly __out?: Out;
  declare readonly __field?: Field;

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

function make<Out, F extends string = never>(op: string, field: F | null, params?: AggParams): Agg<Out, F> {
  return new Agg<Out, F>(op, wireParams(field, params));
}

type FieldAgg<Out> = <F extends string>(field: F, params?: AggParams) => Agg<Out, F>;
type PlainAgg<Out> = (params?: AggParams) => Agg<Out, never>;

const fieldOp = <Out>(op: string): FieldAgg<Out> => (field, params) => make<Out, typeof field>(op, field, params);
const plainOp = <Out>(op: string): PlainAgg<Out> => (params) => make<Out>(op, null, params);

/** Value types of the rows (docs/ops.md "value in /get"): null where the op has no value yet. */
type Num = number | null;

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
  count: plainOp<number>('count'),
  sum: fieldOp<Num>('sum'),
  mean: fieldOp<Num>('mean'),
  avg: fieldOp<Num>('mean'),
  min: fieldOp<InputValue>('min'),
  max: fieldOp<InputValue>('max'),
  var: fieldOp<Num>('var'),
  variance: fieldOp<Num>('var'),
  std: fieldOp<Num>('std'),
  stddev: fieldOp<Num>('std'),
  /** Matching events / all events reaching the table; `where` gates the numerator. */
  ratio: (where: Expr | string, params?: AggParams) => make<Num>('ratio', null, { ...params, where }),

  // Point values.
  first: fieldOp<InputValue>('first'),
  last: fieldOp<InputValue>('last'),
  firstN: <F extends string>(field: F, n: number, params?: AggParams) => make<InputValues, F>('first_n', field, { ...params, n }),
  lastN: <F extends string>(field: F, n: number, params?: AggParams) => make<InputValues, F>('last_n', field, { ...params, n }),
  lag: <F extends string>(field: F, n = 1, params?: AggParams) => make<InputValue, F>('lag', field, { ...params, n }),

  // Recency.
  firstSeen: plainOp<Num>('first_seen'),
  lastSeen: plainOp<Num>('last_seen'),
  age: plainOp<Num>('age'),
  hasSeen: plainOp<boolean>('has_seen'),
  timeSince: plainOp<Num>('time_since'),
  timeSinceLastN: (n: number, params?: AggParams) => make<Num>('time_since_last_n', null, { ...params, n }),
  firstSeenInWindow: (window: Duration, params?: AggParams) => make<boolean>('first_seen_in_window', null, { ...params, window }),

  // Streaks.
  streak: plainOp<number>('streak'),
  maxStreak: plainOp<number>('max_streak'),
  negativeStreak: plainOp<number>('negative_streak'),

  // Decay.
  ewma: <F extends string>(field: F, halfLife: Duration, params?: AggParams) => make<Num, F>('ewma', field, { ...params, half_life: halfLife }),
  ema: <F extends string>(field: F, halfLife: Duration, params?: AggParams) => make<Num, F>('ewma', field, { ...params, half_life: halfLife }),
  ewvar: <F extends string>(field: F, halfLife: Duration, params?: AggParams) => make<Num, F>('ewvar', field, { ...params, half_life: halfLife }),
  ewZscore: <F extends string>(field: F, halfLife: Duration, params?: AggParams) =>
    make<Num, F>('ew_zscore', field, { ...params, half_life: halfLife }),
  decayedSum: <F extends string>(field: F, halfLife: Duration, params?: AggParams) =>
    make<Num, F>('decayed_sum', field, { ...params, half_life: halfLife }),
  decayedCount: (halfLife: Duration, params?: AggParams) => make<number>('decayed_count', null, { ...params, half_life: halfLife }),
  twa: fieldOp<Num>('twa'),

  // Velocity, rates and change.
  rateOfChange: fieldOp<Num>('rate_of_change'),
  interArrivalStats: plainOp<Num>('inter_arrival_stats'),
  burstCount: (subWindow: Duration, params?: AggParams) => make<number>('burst_count', null, { ...params, sub_window: subWindow }),
  deltaFromPrev: fieldOp<Num>('delta_from_prev'),
  trend: fieldOp<Num>('trend'),
  trendResidual: fieldOp<Num>('trend_residual'),
  outlierCount: fieldOp<number>('outlier_count'),
  valueChangeCount: fieldOp<number>('value_change_count'),
  /** Sum of the field per second over the window. */
  velocity: <F extends string>(field: F, window: Duration, params?: AggParams) => make<number, F>('velocity', field, { ...params, window }),
  /** Events per second over the window. */
  rate: (window: Duration, params?: AggParams) => make<number>('rate', null, { ...params, window }),
  zScore: fieldOp<Num>('z_score'),

  // Sketches.
  nUnique: fieldOp<number>('n_unique'),
  countDistinct: fieldOp<number>('n_unique'),
  quantile: <F extends string>(field: F, q: number, params?: AggParams) => make<Num, F>('quantile', field, { ...params, q }),
  percentile: <F extends string>(field: F, q: number, params?: AggParams) => make<Num, F>('quantile', field, { ...params, q }),
  topK: fieldOp<Array<{ value: JsonValue; count: number }>>('top_k'),
  bloomMember: fieldOp<boolean>('bloom_member'),
  entropy: fieldOp<number>('entropy'),

  // Buffers and histograms.
  histogram: <F extends string>(field: F, buckets: number[], params?: AggParams) => make<Record<string, number>, F>('histogram', field, { ...params, buckets }),
  hourOfDayHistogram: plainOp<number[]>('hour_of_day_histogram'),
  dowHourHistogram: plainOp<Record<string, number>>('dow_hour_histogram'),
  seasonalDeviation: fieldOp<Num>('seasonal_deviation'),
  eventTypeMix: fieldOp<Record<string, number>>('event_type_mix'),
  mostRecentN: <F extends string>(field: F, n: number, params?: AggParams) => make<InputValues, F>('most_recent_n', field, { ...params, n }),
  reservoirSample: <F extends string>(field: F, samples: number, params?: AggParams) =>
    make<InputValues, F>('reservoir_sample', field, { ...params, samples }),

  // Geo (lat_field / lon_field default to the columns `lat` / `lon` server-side).
  geoVelocity: plainOp<Num>('geo_velocity'),
  geoDistance: plainOp<number>('geo_distance'),
  geoSpread: plainOp<Num>('geo_spread'),
  distanceFromHome: plainOp<Num>('distance_from_home'),

  /** Any op by name, for ops newer than this client (its value is untyped JSON). */
  op: <F extends string = never>(op: string, field: F | null = null, params?: AggParams) => make<JsonValue, F>(op, field, params),
};
