/**
 * The public face of the op catalogue: validate an aggregation spec
 * `{op, params}` at register time and compile it into an OpFactory; list the
 * op-strings; compute a feature's semantic signature. The per-op table is in
 * defs.ts, the semantics in the family files, the user-facing table in docs/ops.md.
 */
import { SfError } from '../errors';
import { unknownNameHint } from '../util/near_name';
import type { FieldMap } from '../types';
import { OP_DEFS, type OpDef, type WindowRule } from './defs';
import { durationKey, parseDuration } from './duration';
import type { OpFactory } from './op';
import { ParamReader, show } from './params';


export interface AggContext {
  /** Schema of the row that reaches the table (after its chain). */
  fields: FieldMap;
  /** Error path prefix for this feature, e.g. "nodes[2].agg.total". */
  path: string;
  /** False when SERVICE_MEMORY_GOV_ENFORCE=0 (skips unbounded_op_in_lifetime_mode). */
  memoryGovEnforce: boolean;
}

const BY_NAME: ReadonlyMap<string, OpDef> = (() => {
  const m = new Map<string, OpDef>();
  for (const d of OP_DEFS) {
    for (const n of [d.name, ...d.aliases]) {
      if (m.has(n)) throw new Error(`op catalogue: duplicate op-string ${n}`);
      m.set(n, d);
    }
  }
  return m;
})();

/** Every accepted op-string, aliases included, in catalogue order. */
export const OP_NAMES: readonly string[] = Object.freeze(OP_DEFS.flatMap((d) => [d.name, ...d.aliases]));

/** Alias -> canonical name; null if the op-string is not in the catalogue. */
export function canonicalOp(name: string): string | null {
  const d = typeof name === 'string' ? BY_NAME.get(name) : undefined;
  return d === undefined ? null : d.name;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Validates an aggregation spec and returns its compiled factory. Throws SfError
 * with the spec codes. `params.where` is compiled by the registry and ignored here.
 */
export function compileAgg(spec: unknown, ctx: AggContext): OpFactory {
  if (!isPlainObject(spec)) {
    throw new SfError('invalid_registration', 'an aggregation spec must be an object {op, params}', { path: ctx.path });
  }
  const op = spec.op;
  if (typeof op !== 'string') {
    throw new SfError('invalid_registration', `aggregation "op" must be a string, got ${show(op)}`, { path: `${ctx.path}.op` });
  }
  const def = BY_NAME.get(op);
  if (def === undefined) {
    throw new SfError('unknown_op', `op "${op}" is not in the catalogue${unknownNameHint(op, BY_NAME.keys(), 'ops')} (docs/ops.md lists every op)`, { path: `${ctx.path}.op` });
  }
  const params = spec.params === undefined ? {} : spec.params;
  if (!isPlainObject(params)) {
    throw new SfError('invalid_registration', 'aggregation "params" must be an object', { path: `${ctx.path}.params` });
  }
  const r = new ParamReader(params, ctx.path, ctx.fields);
  const windowMs = checkWindow(def, r);
  const factory = def.build({ r, windowMs, enforce: ctx.memoryGovEnforce });
  r.finish(def.name);
  return factory;
}

/** Applies the op's window rule (see WindowRule); returns the window in ms, 0 for lifetime. */
function checkWindow(def: OpDef, r: ParamReader): number {
  const w = r.window();
  switch (def.window) {
    case 'none':
      if (w.kind !== 'none') r.fail('window_not_supported', 'window', `${def.name} is lifetime-only and takes no window`);
      return 0;
    case 'required':
      if (w.kind === 'none') {
        r.fail('aggregation_invalid_window', 'window', `${def.name} needs a window (a duration such as "1h", or "forever")`);
      }
      break;
    case 'finite':
      if (w.kind !== 'ms') r.fail('aggregation_invalid_window', 'window', `${def.name} needs a finite window such as "5m"`);
      break;
    case 'lifetime':
      if (w.kind === 'ms') {
        r.fail('aggregation_invalid_window', 'window', `${def.name} keeps lifetime state and takes no window (omit it or use "forever")`);
      }
      return 0;
    case 'optional':
      break;
  }
  return w.kind === 'ms' ? w.ms : 0;
}

/** Param spellings that mean the same thing (peer compatibility). */
const PARAM_ALIASES: Readonly<Record<string, string>> = {
  expected_n: 'capacity',
  target_fpr: 'fpr',
  lat: 'lat_field',
  lon: 'lon_field',
};
/** Params that carry no meaning (see ParamReader). */
const MEANINGLESS = new Set(['precision', 'baseline_window']);
const DURATION_PARAMS = new Set(['window', 'half_life', 'sub_window']);
const LIFETIME_RULES: ReadonlySet<WindowRule> = new Set(['optional', 'required', 'lifetime']);

/**
 * A stable string for the semantics of a feature: canonical op plus params with
 * aliases resolved, durations in ms, defaults filled in, the absent window of a
 * lifetime-capable op spelled "forever", and keys sorted. `where` is included
 * verbatim (trimmed). Equal signatures = the same state can carry over.
 */
export function aggSignature(spec: unknown): string {
  if (!isPlainObject(spec)) return `invalid:${stableJson(spec)}`;
  const opRaw = spec.op;
  const def = typeof opRaw === 'string' ? BY_NAME.get(opRaw) : undefined;
  const params = isPlainObject(spec.params) ? spec.params : {};
  const norm: Record<string, unknown> = {};
  for (const key of Object.keys(params)) {
    let v = params[key];
    if (v === undefined || MEANINGLESS.has(key)) continue;
    const name = PARAM_ALIASES[key] ?? key;
    if (name !== key && Object.prototype.hasOwnProperty.call(params, name)) continue; // the canonical spelling wins
    if (DURATION_PARAMS.has(name) && v !== 'forever') {
      const ms = parseDuration(v);
      if (ms !== null) v = durationKey(ms);
    }
    if (name === 'where' && typeof v === 'string') v = v.trim();
    norm[name] = v;
  }
  if (def !== undefined) {
    for (const [k, v] of Object.entries(def.defaults)) if (!(k in norm)) norm[k] = v;
    if (def.name === 'reservoir_sample' && !('samples' in norm) && 'k' in norm) {
      norm.samples = norm.k;
      delete norm.k;
    }
    if (!('window' in norm) && LIFETIME_RULES.has(def.window)) norm.window = 'forever';
  }
  const op = def !== undefined ? def.name : `unknown:${String(opRaw)}`;
  return `${op}${stableJson(norm)}`;
}

/** JSON with object keys sorted at every level. */
function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (isPlainObject(v)) {
    const keys = Object.keys(v).filter((k) => v[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson(v[k])}`).join(',')}}`;
  }
  const s = JSON.stringify(v);
  return s === undefined ? 'null' : s;
}
