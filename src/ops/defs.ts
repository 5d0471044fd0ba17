/**
 * The operator catalogue: one entry per canonical op with its aliases, its
 * window rule, its parameter defaults (also used by aggSignature) and a build
 * function that reads and checks the params and returns the compiled factory.
 * The semantics of each op live in its family file; docs/ops.md has the table.
 */
import { SfError } from '../errors';
import { BUFFER_N_MAX, BURST_SLOTS_MAX, CATEGORIES_MAX, HISTOGRAM_EDGES_MAX, LIST_BUCKETS_PER_WINDOW, MOTION_BUCKETS_PER_WINDOW, SAMPLES_MAX, SKETCH_BUCKETS_PER_WINDOW, STR_BUCKETS_PER_WINDOW, TOP_K_K_DEFAULT, TOP_K_K_MAX } from '../limits';
import type { FieldType } from '../types';
import { HistogramCfg, HistogramState, MixCfg, MixState, ReservoirState, SeasonalState, TimeHistogramState } from './buffer';
import { DecayedFixed, EwOut, EwFixed, TwaAgg } from './decay';
import { Factory, type StoredState } from './factory';
import { GeoOut, GeoPathAgg, GeoPathState, GeoSpreadAgg, GeoSpreadState, HomeState } from './geo';
import {
  BurstState,
  DeltaState,
  InterArrivalAgg,
  InterArrivalFixed,
  OutlierState,
  outlierFlagsCfg,
  RateOfChangeState,
  TrendAgg,
  ValueChangeAgg,
} from './motion';
import { CountFixed, ExtremeFixed, MomentOut, MomentsFixed, RatioFixed, StrExtremeLife, SumFixed } from './num_life';
import type { FixedOp } from './fixed';
import { Input, NumKind, NumWindowCfg, NumWindowState } from './num_window';
import type { ParamReader } from './params';
import { PointAgg, PointOut } from './point';
import { RecencyFixed, RecencyOut, StreakOut, StreakState, TimeSinceLastNState } from './recency';
import { BloomMemberState, DistinctAgg, EntropyAgg, QuantileAgg, StrExtremeAgg, TopKAgg } from './sketch_ops';
import { bloomGeometry, BLOOM_CAPACITY_DEFAULT, BLOOM_CAPACITY_MAX, BLOOM_FPR_DEFAULT, QUANTILE_DEFAULT_CONFIG } from './sketch';
import { histogramRule, mixRule, TallyAgg, timeHistogramRule, type TallyRule } from './tally';
import { ValLifeState, ValWindowCfg, ValWindowState, type WindowAgg } from './val_window';
import { ANY_TYPES, NUMERIC_TYPES, ORDERED_TYPES } from './values';

/**
 * How an op treats `window`:
 *   optional  absent or "forever" = lifetime state; a duration = sliding window
 *   required  must be given (spec 2.4); "forever" is an explicit lifetime and fine
 *   finite    must be a duration (the window is part of the value: rate, velocity, ...)
 *   lifetime  state is lifetime by nature: "forever" accepted, a duration -> aggregation_invalid_window
 *   none      no window at all, not even "forever" -> window_not_supported (bloom_member, spec 2.4)
 */
export type WindowRule = 'optional' | 'required' | 'finite' | 'lifetime' | 'none';

export interface BuildCtx {
  r: ParamReader;
  /** Window in ms, 0 for lifetime. */
  windowMs: number;
  enforce: boolean;
}

export interface OpDef {
  name: string;
  aliases: readonly string[];
  window: WindowRule;
  /** Defaults applied when a param is absent (normalized names; used by aggSignature too). */
  defaults: Readonly<Record<string, unknown>>;
  build(c: BuildCtx): Factory;
}

const ENTROPY_CATEGORIES_DEFAULT = 1024;
const MIX_CATEGORIES_DEFAULT = 256;
const HOME_SAMPLES_DEFAULT = 100;
const OUTLIER_SIGMA_DEFAULT = 3;
const QUANTILE_Q_DEFAULT = 0.5;
/** Bounds used when SERVICE_MEMORY_GOV_ENFORCE=0 and the bound param is missing. */
const UNGOVERNED_N_DEFAULT = 10;
const UNGOVERNED_LAG_DEFAULT = 1;

const FIELD = ['field'];

function f(name: string, field: string | null, make: () => StoredState, wantsMiss = false): Factory {
  return new Factory(name, field, wantsMiss, make);
}

/** A lifetime op of a fixed number of doubles (fixed.ts): a slab row per entity in the shard. */
function fixed(name: string, field: string | null, op: FixedOp, wantsMiss = false): Factory {
  return new Factory(name, field, wantsMiss, null, null, op);
}

/** The bound `key` of a buffer op (spec 2.4): required when memory governance is on. */
function bound(c: BuildCtx, op: string, keys: string[], max: number, ungoverned: number): number {
  const v = c.r.int(keys, 1, max, null);
  if (v !== null) return v;
  // Windowed, the bound is part of the answer (last n of the window), not a memory guard.
  if (c.windowMs !== 0) c.r.fail('aggregation_invalid_param', keys[0], `${op} needs params.${keys[0]} (1..${max})`);
  if (c.enforce) {
    c.r.fail('unbounded_op_in_lifetime_mode', null, `${op} keeps values without a window: params.${keys[0]} (1..${max}) is required`);
  }
  return ungoverned;
}

function numWindow(name: string, kind: NumKind, input: Input, field: string | null, c: BuildCtx, wantsMiss = false): Factory {
  const cfg = new NumWindowCfg(kind, input, c.windowMs);
  // ratio also counts misses (events failing its where): it keeps a ring of its own, as an object.
  if (wantsMiss) return new Factory(name, field, wantsMiss, () => new NumWindowState(cfg));
  return new Factory(name, field, wantsMiss, null, { num: cfg, val: null });
}

function valOp<A>(name: string, field: string | null, agg: WindowAgg<A>, c: BuildCtx, buckets: number, numeric: boolean): Factory {
  if (c.windowMs === 0) {
    // A timeless agg is its values in order: the shard keeps a few of them as cells before it needs the object.
    const exact = agg.timeless === true && field !== null ? (agg as WindowAgg<unknown>) : null;
    return new Factory(name, field, false, () => new ValLifeState(agg), null, null, null, null, exact);
  }
  const cfg = new ValWindowCfg(agg, c.windowMs, buckets, numeric);
  return new Factory(name, field, false, null, { num: null, val: cfg as ValWindowCfg<unknown> });
}

function fieldOf(c: BuildCtx, types: readonly FieldType[]): string {
  return c.r.column(FIELD, types, null);
}

// ---------------------------------------------------------------- core

function countDef(): OpDef {
  return {
    name: 'count',
    aliases: [],
    window: 'optional',
    defaults: {},
    build(c) {
      const field = c.r.raw('field') === null ? null : c.r.column(FIELD, ANY_TYPES, null);
      if (c.windowMs === 0) return fixed('count', field, new CountFixed(field !== null));
      return numWindow('count', NumKind.Count, field === null ? Input.Event : Input.Present, field, c);
    },
  };
}

function sumLikeDef(name: string, aliases: string[], kind: NumKind.Sum | NumKind.Mean): OpDef {
  return {
    name,
    aliases,
    window: 'required',
    defaults: {},
    build(c) {
      const field = fieldOf(c, NUMERIC_TYPES);
      if (c.windowMs === 0) return fixed(name, field, new SumFixed(kind === NumKind.Mean));
      return numWindow(name, kind, Input.Number, field, c);
    },
  };
}

function extremeDef(name: 'min' | 'max'): OpDef {
  const isMax = name === 'max';
  return {
    name,
    aliases: [],
    window: 'required',
    defaults: {},
    build(c) {
      const field = fieldOf(c, ORDERED_TYPES);
      if (c.r.fields[field] === 'str') {
        if (c.windowMs === 0) return f(name, field, () => new StrExtremeLife(isMax));
        return valOp(name, field, new StrExtremeAgg(isMax), c, STR_BUCKETS_PER_WINDOW, false);
      }
      if (c.windowMs === 0) return fixed(name, field, new ExtremeFixed(isMax));
      return numWindow(name, isMax ? NumKind.Max : NumKind.Min, Input.Number, field, c);
    },
  };
}

function momentDef(name: string, aliases: string[], rule: WindowRule, out: MomentOut): OpDef {
  const kind = out === MomentOut.Var ? NumKind.Var : out === MomentOut.Std ? NumKind.Std : NumKind.ZScore;
  return {
    name,
    aliases,
    window: rule,
    defaults: {},
    build(c) {
      const field = fieldOf(c, NUMERIC_TYPES);
      if (c.windowMs === 0) return fixed(name, field, new MomentsFixed(out));
      return numWindow(name, kind, Input.Number, field, c);
    },
  };
}

function ratioDef(): OpDef {
  return {
    name: 'ratio',
    aliases: [],
    window: 'optional',
    defaults: {},
    build(c) {
      if (c.windowMs === 0) return fixed('ratio', null, new RatioFixed(), true);
      return numWindow('ratio', NumKind.Ratio, Input.Event, null, c, true);
    },
  };
}

function perSecondDef(name: 'rate' | 'velocity'): OpDef {
  return {
    name,
    aliases: [],
    window: 'finite',
    defaults: {},
    build(c) {
      if (name === 'rate') return numWindow(name, NumKind.Rate, Input.Event, null, c);
      return numWindow(name, NumKind.Velocity, Input.Number, fieldOf(c, NUMERIC_TYPES), c);
    },
  };
}

// ---------------------------------------------------------------- point and buffers of values

/** first / last: lifetime kept values, or the same answer over the values of a sliding window. */
function pointDef(name: 'first' | 'last'): OpDef {
  return windowableDef(name, (c) => {
    const field = fieldOf(c, ANY_TYPES);
    const agg = new PointAgg(1, name === 'last', PointOut.One);
    if (c.windowMs === 0) return new Factory(name, field, false, null, null, null, agg);
    return valOp(name, field, agg, c, LIST_BUCKETS_PER_WINDOW, false);
  });
}

function simpleFieldDef(name: string, types: readonly FieldType[], make: (c: BuildCtx) => () => StoredState): OpDef {
  return {
    name,
    aliases: [],
    window: 'lifetime',
    defaults: {},
    build(c) {
      const field = fieldOf(c, types);
      return f(name, field, make(c));
    },
  };
}

/**
 * The point ops bounded by `n` (first_n, last_n, most_recent_n, lag): lifetime kept
 * values (a slab per feature in the shard, kept_column.ts), or over a sliding window
 * the same answer over the window's values, each window bucket keeping at most n
 * (+1 for lag) values. The same PointAgg describes both.
 */
function keptDef(name: string, ungoverned: number, agg: (n: number) => PointAgg): OpDef {
  return {
    name,
    aliases: [],
    window: 'optional',
    defaults: {},
    build(c) {
      const field = fieldOf(c, ANY_TYPES);
      const n = bound(c, name, ['n'], BUFFER_N_MAX, ungoverned);
      if (c.windowMs === 0) return new Factory(name, field, false, null, null, null, agg(n));
      return valOp(name, field, agg(n), c, LIST_BUCKETS_PER_WINDOW, false);
    },
  };
}

/** time_since_last_n: lifetime, bounded by `n`, no field (an object per entity). */
function timeSinceLastNDef(): OpDef {
  return {
    name: 'time_since_last_n',
    aliases: [],
    window: 'lifetime',
    defaults: {},
    build(c) {
      const n = bound(c, 'time_since_last_n', ['n'], BUFFER_N_MAX, UNGOVERNED_N_DEFAULT);
      return f('time_since_last_n', null, () => new TimeSinceLastNState(n));
    },
  };
}

// ---------------------------------------------------------------- recency, streaks

function recencyDef(name: string, out: RecencyOut): OpDef {
  return {
    name,
    aliases: [],
    window: out === RecencyOut.SeenInWindow ? 'finite' : 'lifetime',
    defaults: {},
    build(c) {
      const w = c.windowMs;
      return fixed(name, null, new RecencyFixed(out, w));
    },
  };
}

function streakDef(name: string, out: StreakOut): OpDef {
  return {
    name,
    aliases: [],
    window: 'lifetime',
    defaults: {},
    build() {
      return f(name, null, () => new StreakState(out), true);
    },
  };
}

// ---------------------------------------------------------------- decay

function decayDef(name: string, aliases: string[], make: (h: number) => FixedOp, hasField = true): OpDef {
  return {
    name,
    aliases,
    window: 'lifetime',
    defaults: {},
    build(c) {
      const field = hasField ? fieldOf(c, NUMERIC_TYPES) : null;
      const h = c.r.duration('half_life', 'aggregation_invalid_half_life');
      return fixed(name, field, make(h));
    },
  };
}

// ---------------------------------------------------------------- change over time

/** An op without aliases or defaults whose window is optional (lifetime when absent). */
function windowableDef(name: string, build: (c: BuildCtx) => Factory): OpDef {
  return { name, aliases: [], window: 'optional', defaults: {}, build };
}

/** A change-over-time op over a mergeable summary: lifetime, or a bucketed sliding window. */
function motionDef<A>(name: string, types: readonly FieldType[] | null, agg: () => WindowAgg<A>, life: (() => FixedOp) | null = null): OpDef {
  return windowableDef(name, (c) => {
    const field = types === null ? null : fieldOf(c, types);
    // Lifetime with a slab-row form (same answers and save format): no object per entity.
    if (c.windowMs === 0 && life !== null) return fixed(name, field, life());
    // inter_arrival_stats (no field) keeps 0s in the value ring: a double array too.
    return valOp(name, field, agg(), c, MOTION_BUCKETS_PER_WINDOW, types === NUMERIC_TYPES || types === null);
  });
}

/** rate_of_change / delta_from_prev: the last two values; windowed = both inside the window (exact). */
function lastPairDef(name: string, make: (windowMs: number) => StoredState): OpDef {
  return windowableDef(name, (c) => {
    const w = c.windowMs;
    return f(name, fieldOf(c, NUMERIC_TYPES), () => make(w));
  });
}

function burstDef(): OpDef {
  return {
    name: 'burst_count',
    aliases: [],
    window: 'optional',
    defaults: {},
    build(c) {
      const sub = c.r.duration('sub_window', 'aggregation_invalid_sub_window');
      const w = c.windowMs;
      if (w !== 0) {
        if (sub >= w) c.r.fail('aggregation_invalid_sub_window', 'sub_window', 'sub_window must be smaller than window');
        if (w / sub > BURST_SLOTS_MAX) {
          c.r.fail('aggregation_invalid_sub_window', 'sub_window', `sub_window must be at least window / ${BURST_SLOTS_MAX}`);
        }
      }
      return f('burst_count', null, () => new BurstState(sub, w));
    },
  };
}

function outlierDef(): OpDef {
  return {
    name: 'outlier_count',
    aliases: [],
    window: 'optional',
    defaults: { sigma: OUTLIER_SIGMA_DEFAULT },
    build(c) {
      const field = fieldOf(c, NUMERIC_TYPES);
      const sigma = c.r.openNum(['sigma'], 0, Infinity, OUTLIER_SIGMA_DEFAULT, 'aggregation_invalid_param');
      const flags = outlierFlagsCfg(c.windowMs);
      return f('outlier_count', field, () => new OutlierState(sigma, flags));
    },
  };
}

// ---------------------------------------------------------------- sketches

function nUniqueDef(): OpDef {
  return {
    name: 'n_unique',
    aliases: ['count_distinct'],
    window: 'optional',
    defaults: {},
    build(c) {
      return valOp('n_unique', fieldOf(c, ANY_TYPES), new DistinctAgg(), c, SKETCH_BUCKETS_PER_WINDOW, false);
    },
  };
}

function quantileDef(): OpDef {
  return {
    name: 'quantile',
    aliases: ['percentile'],
    window: 'optional',
    defaults: { q: QUANTILE_Q_DEFAULT },
    build(c) {
      const field = fieldOf(c, NUMERIC_TYPES);
      const q = c.r.openNum(['q'], 0, 1, QUANTILE_Q_DEFAULT, 'invalid_percentile_q');
      return valOp('quantile', field, new QuantileAgg(q, QUANTILE_DEFAULT_CONFIG), c, SKETCH_BUCKETS_PER_WINDOW, true);
    },
  };
}

function topKDef(): OpDef {
  return {
    name: 'top_k',
    aliases: [],
    window: 'optional',
    defaults: { k: TOP_K_K_DEFAULT },
    build(c) {
      const field = fieldOf(c, ANY_TYPES);
      const k = c.r.int(['k'], 1, TOP_K_K_MAX, TOP_K_K_DEFAULT, 'invalid_top_k_k') as number;
      return valOp('top_k', field, new TopKAgg(k), c, SKETCH_BUCKETS_PER_WINDOW, false);
    },
  };
}

function bloomDef(): OpDef {
  return {
    name: 'bloom_member',
    aliases: [],
    window: 'none',
    defaults: { capacity: BLOOM_CAPACITY_DEFAULT, fpr: BLOOM_FPR_DEFAULT },
    build(c) {
      const field = fieldOf(c, ANY_TYPES);
      const capacity = c.r.int(['capacity', 'expected_n'], 1, BLOOM_CAPACITY_MAX, BLOOM_CAPACITY_DEFAULT) as number;
      const fpr = c.r.openNum(['fpr', 'target_fpr'], 0, 1, BLOOM_FPR_DEFAULT, 'invalid_bloom_fpr');
      let geometry;
      try {
        geometry = bloomGeometry(capacity, fpr);
      } catch (err) {
        if (err instanceof SfError) c.r.fail(err.code, err.code === 'invalid_bloom_fpr' ? 'fpr' : 'capacity', err.message);
        throw err;
      }
      return new Factory('bloom_member', field, false, () => new BloomMemberState(geometry), null, null, null, geometry);
    },
  };
}

function entropyDef(): OpDef {
  return {
    name: 'entropy',
    aliases: [],
    window: 'optional',
    defaults: { max_categories: ENTROPY_CATEGORIES_DEFAULT },
    build(c) {
      const field = fieldOf(c, ANY_TYPES);
      const cap = c.r.int(['max_categories'], 1, CATEGORIES_MAX, ENTROPY_CATEGORIES_DEFAULT) as number;
      return valOp('entropy', field, new EntropyAgg(cap), c, SKETCH_BUCKETS_PER_WINDOW, false);
    },
  };
}

// ---------------------------------------------------------------- distributions

/** The windowed form of a count-table op (tally.ts); its ring holds numbers when `numeric`. */
function tallyOp(name: string, field: string | null, rule: TallyRule, c: BuildCtx, numeric: boolean): Factory {
  return valOp(name, field, new TallyAgg(rule), c, LIST_BUCKETS_PER_WINDOW, numeric);
}

function histogramDef(): OpDef {
  return {
    name: 'histogram',
    aliases: [],
    window: 'optional',
    defaults: {},
    build(c) {
      const field = fieldOf(c, NUMERIC_TYPES);
      const r = c.r.raw('buckets');
      const edges: number[] = [];
      if (r !== null) {
        if (!Array.isArray(r.value) || r.value.length > HISTOGRAM_EDGES_MAX) {
          c.r.fail('aggregation_invalid_param', 'buckets', `buckets must be an array of at most ${HISTOGRAM_EDGES_MAX} numbers`);
        }
        const v = r.value as unknown[];
        for (let i = 0; i < v.length; i++) {
          const e = v[i];
          if (typeof e !== 'number' || !Number.isFinite(e) || (i > 0 && !(e > edges[i - 1]))) {
            c.r.fail('aggregation_invalid_param', 'buckets', 'buckets must be finite numbers in strictly increasing order');
          }
          edges.push(e as number);
        }
      }
      // A window bounds the state by itself: no edges then means the single cell "all".
      if (edges.length === 0 && c.enforce && c.windowMs === 0) {
        c.r.fail('unbounded_op_in_lifetime_mode', null, 'histogram needs params.buckets (a non-empty array of edges)');
      }
      const cfg = new HistogramCfg(edges);
      if (c.windowMs !== 0) return tallyOp('histogram', field, histogramRule(cfg), c, true);
      return f('histogram', field, () => new HistogramState(cfg));
    },
  };
}

function timeHistogramDef(name: string, dow: boolean): OpDef {
  return {
    name,
    aliases: [],
    window: 'optional',
    defaults: {},
    build(c) {
      if (c.windowMs !== 0) return tallyOp(name, null, timeHistogramRule(dow), c, true);
      return f(name, null, () => new TimeHistogramState(dow));
    },
  };
}

function mixDef(): OpDef {
  return {
    name: 'event_type_mix',
    aliases: [],
    window: 'optional',
    defaults: { max_categories: MIX_CATEGORIES_DEFAULT },
    build(c) {
      const field = fieldOf(c, ANY_TYPES);
      const cap = c.r.int(['max_categories'], 1, CATEGORIES_MAX, MIX_CATEGORIES_DEFAULT) as number;
      let allow: Set<string> | null = null;
      const r = c.r.raw('categories');
      if (r !== null) {
        const v = r.value;
        if (!Array.isArray(v) || v.length === 0 || v.length > CATEGORIES_MAX || !v.every((s) => typeof s === 'string')) {
          c.r.fail('aggregation_invalid_param', 'categories', `categories must be a non-empty array of at most ${CATEGORIES_MAX} strings`);
        }
        allow = new Set(v as string[]);
      }
      const cfg = new MixCfg(allow, cap);
      if (c.windowMs !== 0) return tallyOp('event_type_mix', field, mixRule(cfg), c, false);
      return f('event_type_mix', field, () => new MixState(cfg));
    },
  };
}

function reservoirDef(): OpDef {
  return {
    name: 'reservoir_sample',
    aliases: [],
    window: 'lifetime',
    defaults: {},
    build(c) {
      const field = fieldOf(c, ANY_TYPES);
      const n = bound(c, 'reservoir_sample', ['samples', 'k'], SAMPLES_MAX, UNGOVERNED_N_DEFAULT);
      return f('reservoir_sample', field, () => new ReservoirState(n));
    },
  };
}

// ---------------------------------------------------------------- geo

/**
 * A geo op. With `windowed` (geo_velocity, geo_distance, geo_spread) a sliding window
 * is optional: the lifetime answer over the points of the window, the longitude kept
 * as the window ring's aux column. distance_from_home stays lifetime: `samples`
 * already bounds its home to the latest points.
 */
function geoDef(
  name: string,
  make: (lonField: string, c: BuildCtx) => () => StoredState,
  windowed: (() => WindowAgg<unknown>) | null = null,
): OpDef {
  return {
    name,
    aliases: [],
    window: windowed === null ? 'lifetime' : 'optional',
    defaults: name === 'distance_from_home' ? { lat_field: 'lat', lon_field: 'lon', samples: HOME_SAMPLES_DEFAULT } : { lat_field: 'lat', lon_field: 'lon' },
    build(c) {
      const lat = c.r.column(['lat_field', 'lat'], NUMERIC_TYPES, 'lat');
      const lon = c.r.column(['lon_field', 'lon'], NUMERIC_TYPES, 'lon');
      if (c.windowMs === 0 || windowed === null) return f(name, lat, make(lon, c));
      const cfg = new ValWindowCfg(windowed(), c.windowMs, MOTION_BUCKETS_PER_WINDOW, true, lon);
      return f(name, lat, () => new ValWindowState(cfg));
    },
  };
}

// ---------------------------------------------------------------- the table

export const OP_DEFS: readonly OpDef[] = [
  countDef(),
  sumLikeDef('sum', [], NumKind.Sum),
  sumLikeDef('mean', ['avg'], NumKind.Mean),
  extremeDef('min'),
  extremeDef('max'),
  momentDef('var', ['variance'], 'required', MomentOut.Var),
  momentDef('std', ['stddev'], 'required', MomentOut.Std),
  ratioDef(),
  perSecondDef('rate'),
  perSecondDef('velocity'),
  pointDef('first'),
  pointDef('last'),
  keptDef('first_n', UNGOVERNED_N_DEFAULT, (n) => new PointAgg(n, false, PointOut.All)),
  keptDef('last_n', UNGOVERNED_N_DEFAULT, (n) => new PointAgg(n, true, PointOut.All)),
  keptDef('most_recent_n', UNGOVERNED_N_DEFAULT, (n) => new PointAgg(n, true, PointOut.All)),
  keptDef('lag', UNGOVERNED_LAG_DEFAULT, (n) => new PointAgg(n + 1, true, PointOut.Lag, n)),
  recencyDef('first_seen', RecencyOut.FirstSeen),
  recencyDef('last_seen', RecencyOut.LastSeen),
  recencyDef('age', RecencyOut.Age),
  recencyDef('has_seen', RecencyOut.HasSeen),
  recencyDef('time_since', RecencyOut.TimeSince),
  timeSinceLastNDef(),
  recencyDef('first_seen_in_window', RecencyOut.SeenInWindow),
  streakDef('streak', StreakOut.Streak),
  streakDef('max_streak', StreakOut.MaxStreak),
  streakDef('negative_streak', StreakOut.Negative),
  decayDef('ewma', ['ema'], (h) => new EwFixed(EwOut.Ewma, h)),
  decayDef('ewvar', [], (h) => new EwFixed(EwOut.Ewvar, h)),
  decayDef('ew_zscore', [], (h) => new EwFixed(EwOut.EwZ, h)),
  decayDef('decayed_sum', [], (h) => new DecayedFixed(false, h)),
  decayDef('decayed_count', [], (h) => new DecayedFixed(true, h), false),
  motionDef('twa', NUMERIC_TYPES, () => new TwaAgg()),
  lastPairDef('rate_of_change', (w) => new RateOfChangeState(w)),
  motionDef('inter_arrival_stats', null, () => new InterArrivalAgg(), () => new InterArrivalFixed()),
  burstDef(),
  lastPairDef('delta_from_prev', (w) => new DeltaState(w)),
  motionDef('trend', NUMERIC_TYPES, () => new TrendAgg(false)),
  motionDef('trend_residual', NUMERIC_TYPES, () => new TrendAgg(true)),
  outlierDef(),
  motionDef('value_change_count', ANY_TYPES, () => new ValueChangeAgg()),
  momentDef('z_score', [], 'optional', MomentOut.ZScore),
  nUniqueDef(),
  quantileDef(),
  topKDef(),
  bloomDef(),
  entropyDef(),
  histogramDef(),
  timeHistogramDef('hour_of_day_histogram', false),
  timeHistogramDef('dow_hour_histogram', true),
  simpleFieldDef('seasonal_deviation', NUMERIC_TYPES, () => () => new SeasonalState()),
  mixDef(),
  reservoirDef(),
  geoDef('geo_velocity', (lon) => () => new GeoPathState(GeoOut.Velocity, lon), () => new GeoPathAgg(GeoOut.Velocity)),
  geoDef('geo_distance', (lon) => () => new GeoPathState(GeoOut.Distance, lon), () => new GeoPathAgg(GeoOut.Distance)),
  geoDef('geo_spread', (lon) => () => new GeoSpreadState(lon), () => new GeoSpreadAgg()),
  geoDef('distance_from_home', (lon, c) => {
    const n = c.r.int(['samples'], 1, SAMPLES_MAX, HOME_SAMPLES_DEFAULT) as number;
    return () => new HomeState(lon, n);
  }),
];
