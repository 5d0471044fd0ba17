/**
 * Structural parsing of one register node (spec 2.1, 2.2, DESIGN.md section 5):
 * shape, kinds, names, schema types, per-source settings and the v0 rejections
 * (joins, unions, event time, session windows). Schema propagation, expressions
 * and aggregations are checked later by compile.ts, against upstream schemas.
 */
import { SfError } from '../errors';
import { NAME_LENGTH_MAX, SCHEMA_FIELDS_MAX } from '../limits';
import { isFieldType, type FieldMap, type FieldType } from '../types';
import type { ChainOpDef, DerivedEventNodeDef, EventNodeDef, NodeDef, TableNodeDef } from './model';
import { isValidName, NAME_RULE } from './model';
import { parseDuration } from '../ops/duration';
import { didYouMean } from '../util/near_name';

const CHAIN_OPS = ['filter', 'with_columns', 'map', 'select', 'drop', 'rename', 'cast', 'fillna'];

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const REJECTED_KINDS = new Set(['upsert', 'delete', 'retract']);

const EVENT_KEYS = new Set(['kind', 'name', 'schema', 'dedupe_key', 'dedupe_window', 'dedupe_window_ms',
  'keep_events_for', 'keep_events_for_ms', 'cold_after', 'cold_after_ms', 'validators', 'description', 'renamed_from']);
const DERIVATION_KEYS = new Set(['kind', 'name', 'output_kind', 'upstreams', 'ops', 'schema', 'key', 'table_primary_key',
  'agg', 'description', 'renamed_from']);
/** A `kind: table` node takes the derivation's fields too (spec 2.2: kind table is accepted for aggregation-output nodes). */
const TABLE_KEYS = DERIVATION_KEYS;

function fail(code: ConstructorParameters<typeof SfError>[0], path: string, message: string): never {
  throw new SfError(code, message, { path });
}

/** Keys rejected in any node or op, checked before anything else so v0 rejections win. */
function rejectV0Keys(o: Obj, path: string): void {
  if ('event_time_field' in o) fail('unknown_field_event_time_v0', `${path}.event_time_field`, 'event_time_field is not supported in v0');
  if ('tolerate_delay_ms' in o) fail('unknown_field_tolerate_delay_v0', `${path}.tolerate_delay_ms`, 'tolerate_delay_ms is not supported in v0');
  for (const k of ['session_gap', 'session_window', 'session_timeout']) {
    if (k in o) fail('session_windows_not_supported_in_v0', `${path}.${k}`, 'session windows are not supported in v0');
  }
}

function parseName(o: Obj, path: string, what = 'name'): string {
  const name = o[what];
  if (typeof name !== 'string') fail('invalid_registration', `${path}.${what}`, `${what} must be a string`);
  if (!isValidName(name) || name.length > NAME_LENGTH_MAX) {
    fail('schema_invalid', `${path}.${what}`, `${what} ${NAME_RULE}, at most ${NAME_LENGTH_MAX} characters`);
  }
  return name;
}

function checkKeys(o: Obj, allowed: Set<string>, path: string): void {
  for (const k of Object.keys(o)) {
    if (!allowed.has(k)) fail('schema_invalid', `${path}.${k}`, `unknown key ${JSON.stringify(k)} in this node`);
  }
}

function stringList(v: unknown, path: string, code: 'schema_invalid' | 'table_key_invalid' = 'schema_invalid'): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) fail(code, path, 'must be an array of strings');
  return v as string[];
}

/** Duration setting given as a duration string (`dedupe_window`) or integer ms (`dedupe_window_ms`). */
function durationSetting(o: Obj, key: string, path: string): number | null {
  const s = o[key];
  const ms = o[`${key}_ms`];
  if (s !== undefined) {
    const v = parseDuration(s);
    if (v === null || v <= 0) fail('schema_invalid', `${path}.${key}`, `${key} must be a positive duration like 30s, 5m, 1h`);
    return v;
  }
  if (ms !== undefined) {
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms <= 0) fail('schema_invalid', `${path}.${key}_ms`, `${key}_ms must be a positive integer`);
    return ms;
  }
  return null;
}

export function parseSchemaFields(schema: unknown, path: string, index: number): { fields: FieldMap; optional: string[] } {
  if (!isObj(schema)) fail('schema_invalid', `${path}.schema`, 'schema must be an object with fields and optional_fields');
  const fieldsRaw = schema.fields;
  if (!isObj(fieldsRaw)) fail('schema_invalid', `${path}.schema.fields`, 'schema.fields must be an object of field name -> type');
  const names = Object.keys(fieldsRaw);
  if (names.length > SCHEMA_FIELDS_MAX) fail('schema_invalid', `${path}.schema.fields`, `at most ${SCHEMA_FIELDS_MAX} fields`);
  const fields: FieldMap = Object.create(null);
  for (const f of names) {
    const fieldPath = `descriptors[${index}].schema.${f}`;
    if (f === 'event_time' || f === 'event_time_ms') fail('event_time_not_supported_in_v0', fieldPath, 'an event_time field is not supported in v0 (time is processing time)');
    if (!isValidName(f)) fail('schema_invalid', fieldPath, `field name ${NAME_RULE}`);
    const t = fieldsRaw[f];
    if (!isFieldType(t)) fail('unknown_field_type', fieldPath, `unknown field type ${JSON.stringify(t)}; allowed: str, f64, i64, bool, bytes, datetime`);
    fields[f] = t as FieldType;
  }
  const optional = schema.optional_fields === undefined ? [] : stringList(schema.optional_fields, `${path}.schema.optional_fields`);
  for (const f of optional) {
    if (!(f in fields)) fail('schema_invalid', `${path}.schema.optional_fields`, `optional field ${JSON.stringify(f)} is not declared in schema.fields`);
  }
  for (const k of Object.keys(schema)) {
    if (k !== 'fields' && k !== 'optional_fields') fail('schema_invalid', `${path}.schema.${k}`, `unknown key ${JSON.stringify(k)} in schema`);
  }
  return { fields, optional: [...new Set(optional)] };
}

function parseEvent(o: Obj, path: string, index: number, name: string): EventNodeDef {
  checkKeys(o, EVENT_KEYS, path);
  const { fields, optional } = parseSchemaFields(o.schema, path, index);
  if (Object.keys(fields).length === 0) fail('schema_invalid', `${path}.schema.fields`, 'an event needs at least one field');
  let dedupeKey: string | null = null;
  if (o.dedupe_key !== undefined && o.dedupe_key !== null) {
    if (typeof o.dedupe_key !== 'string' || !(o.dedupe_key in fields)) {
      fail('schema_invalid', `${path}.dedupe_key`, 'dedupe_key must name a declared field');
    }
    dedupeKey = o.dedupe_key;
  }
  const dedupeWindowMs = durationSetting(o, 'dedupe_window', path);
  if (dedupeKey !== null && dedupeWindowMs === null) fail('schema_invalid', `${path}.dedupe_window`, 'dedupe_window is required when dedupe_key is set');
  const validators = o.validators === undefined ? [] : stringList(o.validators, `${path}.validators`);
  return {
    kind: 'event', name, fields, optional, dedupeKey,
    dedupeWindowMs: dedupeWindowMs ?? 0,
    keepEventsForMs: durationSetting(o, 'keep_events_for', path),
    coldAfterMs: durationSetting(o, 'cold_after', path),
    validators,
  };
}

function pairs(v: unknown, path: string, what: string): Array<[string, string]> {
  if (!isObj(v)) fail('schema_invalid', path, `${what} must be an object`);
  const out: Array<[string, string]> = [];
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string') fail('schema_invalid', `${path}.${k}`, `${what} values must be strings`);
    out.push([k, x]);
  }
  return out;
}

/** A field reference that is never read as a keyword or function (expressions.md 1). */
function fieldRef(name: string): string {
  return `\`${name.replace(/`/g, '``')}\``;
}

const CAST_TARGETS = new Set(['str', 'int', 'float', 'bool']);

/**
 * The peer's `{"op":"cast","type_map":{field: target}}`: each field replaced by
 * `cast(field, target)` (same targets and semantics as the expression's cast).
 */
function castExprs(v: unknown, path: string): Array<[string, string]> {
  return pairs(v, path, 'type_map').map(([f, t]) => {
    if (!CAST_TARGETS.has(t)) fail('invalid_cast_target', `${path}.${f}`, `cast target ${JSON.stringify(t)} is not one of str, int, float, bool`);
    return [f, `cast(${fieldRef(f)}, ${t})`];
  });
}

/**
 * The peer's `{"op":"fillna","defaults":{field: value}}`: each field replaced by
 * `coalesce(field, value)` for a string, number or bool value. Unlike the peer,
 * an absent field is filled too (rows here do not tell absent from null).
 */
function fillnaExprs(v: unknown, path: string): Array<[string, string]> {
  if (!isObj(v)) fail('schema_invalid', path, 'defaults must be an object of field -> value');
  return Object.entries(v).map(([f, x]): [string, string] => {
    let lit: string;
    // A double-quoted expression string: only `\` and `"` need escaping (raw text is kept).
    if (typeof x === 'string') lit = `"${x.replace(/[\\"]/g, '\\$&')}"`;
    else if (typeof x === 'boolean') lit = String(x);
    else if (typeof x === 'number' && Number.isFinite(x)) lit = Number.isInteger(x) ? String(x) : x.toExponential();
    else fail('schema_invalid', `${path}.${f}`, 'a default must be a string, a finite number or a bool');
    return [f, `coalesce(${fieldRef(f)}, ${lit})`];
  });
}

/** One chain op of a derivation or table (`nodes[i].ops[j]`). */
function parseChainOp(raw: unknown, path: string): ChainOpDef {
  if (!isObj(raw)) fail('schema_invalid', path, 'op must be an object with an "op" string');
  rejectV0Keys(raw, path);
  const op = raw.op;
  if (typeof op !== 'string') fail('invalid_registration', `${path}.op`, 'op must be a string');
  switch (op) {
    case 'join': fail('feature_removed_no_joins_v0', path, 'joins are not supported in v0');
    case 'union': fail('feature_removed_no_unions_v0', path, 'unions are not supported in v0');
    case 'session':
    case 'session_window': fail('session_windows_not_supported_in_v0', path, 'session windows are not supported in v0');
    case 'filter':
      if (typeof raw.expr !== 'string') fail('schema_invalid', `${path}.expr`, 'filter needs an "expr" string');
      return { op, expr: raw.expr };
    case 'with_columns':
    case 'map':
      return { op: 'with_columns', exprs: pairs(raw.exprs, `${path}.exprs`, 'exprs') };
    case 'cast':
      return { op: 'with_columns', exprs: castExprs(raw.type_map, `${path}.type_map`) };
    case 'fillna':
      return { op: 'with_columns', exprs: fillnaExprs(raw.defaults, `${path}.defaults`) };
    case 'select':
    case 'drop':
      return { op, fields: stringList(raw.fields, `${path}.fields`) };
    case 'rename':
      return { op, mapping: pairs(raw.mapping, `${path}.mapping`, 'mapping') };
    default:
      fail('unknown_op', `${path}.op`, `unknown chain op ${JSON.stringify(op)}${didYouMean(op, CHAIN_OPS)}; supported: filter, with_columns (map), select, drop, rename, cast, fillna`);
  }
}

function parseUpstream(o: Obj, path: string): string {
  const ups = o.upstreams;
  if (!Array.isArray(ups) || ups.length === 0 || ups.some((u) => typeof u !== 'string')) {
    fail('invalid_registration', `${path}.upstreams`, 'upstreams must be a non-empty array of names');
  }
  if (ups.length > 1) {
    fail('invalid_registration', `${path}.upstreams`, 'a node takes exactly one upstream in v0 (joins and unions are not supported in v0)');
  }
  return ups[0] as string;
}

function parseAggMap(v: unknown, path: string): TableNodeDef['agg'] {
  if (!isObj(v) || Object.keys(v).length === 0) fail('schema_invalid', `${path}.agg`, 'agg must be a non-empty object of feature name -> {op, params}');
  const out: TableNodeDef['agg'] = [];
  for (const [feat, spec] of Object.entries(v)) {
    const fpath = `${path}.agg.${feat}`;
    if (!isValidName(feat)) fail('schema_invalid', fpath, `feature name ${NAME_RULE}`);
    if (!isObj(spec)) fail('schema_invalid', fpath, 'aggregation spec must be an object {op, params}');
    rejectV0Keys(spec, fpath);
    if (typeof spec.op !== 'string') fail('invalid_registration', `${fpath}.op`, 'aggregation op must be a string');
    if (spec.op.startsWith('session')) fail('session_windows_not_supported_in_v0', `${fpath}.op`, 'session windows are not supported in v0');
    const params = spec.params === undefined ? {} : spec.params;
    if (!isObj(params)) fail('schema_invalid', `${fpath}.params`, 'params must be an object');
    rejectV0Keys(params, `${fpath}.params`);
    if (typeof params.window === 'string' && params.window.startsWith('session')) {
      fail('session_windows_not_supported_in_v0', `${fpath}.params.window`, 'session windows are not supported in v0');
    }
    out.push([feat, { op: spec.op, params }]);
  }
  return out;
}

function parseKey(v: unknown, path: string): string[] {
  if (!Array.isArray(v) || v.length === 0) fail('table_key_invalid', `${path}.key`, 'key must be a non-empty array of field names');
  if (v.some((x) => typeof x !== 'string')) fail('table_key_invalid', `${path}.key`, 'key elements must be strings');
  if (new Set(v).size !== v.length) fail('table_key_invalid', `${path}.key`, 'key fields must be distinct');
  return v as string[];
}

function parseOps(o: Obj, path: string): ChainOpDef[] {
  if (o.ops === undefined) return [];
  if (!Array.isArray(o.ops)) fail('schema_invalid', `${path}.ops`, 'ops must be an array');
  return o.ops.map((op, j) => parseChainOp(op, `${path}.ops[${j}]`));
}

/** Peer compatibility: a table derivation may end its ops with {op:"group_by", keys, agg}. */
function splitGroupBy(o: Obj): Obj {
  const ops = o.ops;
  if (!Array.isArray(ops) || ops.length === 0) return o;
  const last = ops[ops.length - 1];
  if (!isObj(last) || last.op !== 'group_by') return o;
  return { ...o, ops: ops.slice(0, -1), key: o.key ?? last.keys, agg: o.agg ?? last.agg };
}

function parseTable(o: Obj, path: string, name: string): TableNodeDef {
  const upstream = parseUpstream(o, path);
  const ops = parseOps(o, path);
  const key = parseKey(o.key ?? o.table_primary_key, path);
  // The peer's SDK sends the key twice (table_primary_key and group_by keys): they must agree.
  if (o.key !== undefined && o.table_primary_key !== undefined && JSON.stringify(o.key) !== JSON.stringify(o.table_primary_key)) {
    fail('table_key_invalid', `${path}.table_primary_key`, `table_primary_key ${JSON.stringify(o.table_primary_key)} differs from the key ${JSON.stringify(o.key)}`);
  }
  return { kind: 'table', name, upstream, ops, key, agg: parseAggMap(o.agg, path) };
}

function parseDerivation(o: Obj, path: string, index: number, name: string): DerivedEventNodeDef | TableNodeDef {
  checkKeys(o, DERIVATION_KEYS, path);
  const out = o.output_kind;
  if (out === undefined) fail('invalid_registration', `${path}.output_kind`, 'output_kind is required: event or table');
  if (out === 'table') return parseTable(splitGroupBy(o), path, name);
  if (out !== 'event') fail('bad_return_type', `${path}.output_kind`, `output_kind must be "event" or "table", got ${JSON.stringify(out)}`);
  const upstream = parseUpstream(o, path);
  const ops = parseOps(o, path);
  const declaredFields = o.schema === undefined ? null : parseSchemaFields(o.schema, path, index).fields;
  return { kind: 'derived', name, upstream, ops, declaredFields };
}

/** Parses payload node `index`. Throws SfError with a path into the payload. */
export function parseNode(raw: unknown, index: number): NodeDef {
  const path = `nodes[${index}]`;
  if (!isObj(raw)) fail('invalid_registration', path, 'node must be an object');
  rejectV0Keys(raw, path);
  const kind = raw.kind;
  if (typeof kind !== 'string') fail('invalid_registration', `${path}.kind`, 'kind must be a string: event, derivation or table');
  if (REJECTED_KINDS.has(kind)) fail('unsupported_node_kind', `${path}.kind`, `kind ${JSON.stringify(kind)} is not supported in v0 (events only)`);
  if (kind !== 'event' && kind !== 'derivation' && kind !== 'table') {
    fail('unsupported_node_kind', `${path}.kind`, `kind ${JSON.stringify(kind)} is not supported; use event, derivation or table`);
  }
  const name = parseName(raw, path);
  if (kind === 'event') return parseEvent(raw, path, index, name);
  if (kind === 'table') {
    checkKeys(raw, TABLE_KEYS, path);
    if (raw.output_kind !== undefined && raw.output_kind !== 'table') {
      fail('schema_invalid', `${path}.output_kind`, `a kind "table" node has output_kind "table" (or none), got ${JSON.stringify(raw.output_kind)}`);
    }
    return parseTable(splitGroupBy(raw), path, name);
  }
  return parseDerivation(raw, path, index, name);
}

export function upstreamOf(def: NodeDef): string | null {
  return def.kind === 'event' ? null : def.upstream;
}
