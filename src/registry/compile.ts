/**
 * Compiles a registry state into the immutable plans the hot path runs, once per
 * registry version, so that a push looks nothing up by string. Every thread compiles the same state itself, since
 * functions cannot cross threads: the front needs push validators, chains and
 * key functions; shards need chains, keys, `where` predicates and op factories.
 *
 *   EventPlan (one per pushable event: sources and derived events)
 *     └─ feeds: TableFeed[]  = (table, composed chain from this event, key fn)
 *   TablePlan
 *     └─ features: FeaturePlan[] = (op factory, where, field accessor, signature)
 *
 * Incremental: a register usually changes a few nodes of a large registry, and
 * compiling every expression, predicate, validator and op again stalled the
 * front thread (and each shard) for 100+ ms per register.
 * Each node's compiled artefacts (NodeArtefact) are kept on the CompiledRegistry
 * under a key hashing the node's JSON and its upstream's key, so the key covers
 * everything upstream that shapes the node. The next compile on the same thread
 * (`previous`) reuses every artefact whose key is unchanged and compiles only
 * changed nodes and their dependents. Artefacts are immutable (functions,
 * validators, FeaturePlans), so versions share them safely; what is mutable or
 * positional is rebuilt every time: EventPlans (feeds, per-thread scratch rows)
 * and a TablePlan whose index moved.
 */
import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { compileAgg, aggSignature } from '../ops';
import type { OpFactory } from '../ops/op';
import { compilePredicate, expressionFields } from '../expr';
import { SfError } from '../errors';
import type { FieldMap, FieldType, Row, Value } from '../types';
import { compileChain, type CompiledChain, type RowFn } from './chain';
import { makeKeyFn, type KeyFn } from './key';
import type { NodeDef, RegistryState, TableNodeDef } from './model';
import { parseNode } from './node_parse';
import { PushValidator } from './push_validator';
import { combineErrors } from './register_errors';
import { checkNodeBytes, checkRegistryLimits } from './registry_limits';
import { withPath } from './with_path';
import { unknownNameHint } from '../util/near_name';
import { encodeWire, isWire, nodeCount, wireNodeText, type RegistrySource, type RegistryWire } from './wire';

export interface CompileOptions {
  memoryGovEnforce: boolean;
  /** Build push validators (the front and the coordinator need them; shards do not). */
  pushValidators: boolean;
  /** Error path prefix of a node (the coordinator maps names to payload indexes). */
  pathOf?: (name: string, index: number) => string;
  /**
   * Check the registry size limits (registry_limits.ts). The coordinator does, so a
   * registry over them is never accepted; other threads compile what it accepted
   * (and what an older version persisted) without re-judging it.
   */
  enforceLimits?: boolean;
  /**
   * Compile each feature's op, where and signature (default true). The front only
   * routes pushes and checks gets (feature names, keys), so it skips them: a
   * register then costs the front thread its chains and validators, not one
   * predicate per feature of the whole registry (shards and the coordinator,
   * which do compile features, run off the front thread).
   */
  features?: boolean;
  /**
   * The registry this thread compiled last: unchanged nodes reuse its artefacts.
   * Only artefacts are taken from it (never the registry itself), so holding the
   * new version does not keep older ones alive.
   */
  previous?: CompiledRegistry | null;
}

/** Stands in for an op on threads that compile feature names only (the front): no state of any form. */
const NAME_ONLY: OpFactory = { op: 'name_only', field: null, wantsMiss: false, object: null };

export class FeaturePlan {
  /** `"name":` as JSON text, for writing rows without building objects. */
  readonly jsonKey: string;
  constructor(
    readonly name: string,
    readonly index: number,
    readonly factory: OpFactory,
    readonly where: ((row: Row) => boolean) | null,
    readonly get: ((row: Row) => Value | undefined) | null,
    /** Equal signatures across versions: the shard keeps this feature's state. */
    readonly signature: string,
  ) {
    this.jsonKey = `${JSON.stringify(name)}:`;
  }
}

/** Where a table's column values are written (wal/push_record.ts PushFrameWriter). */
export interface ValueSink {
  value(v: Value | undefined): void;
}

/** Writes a row's values of TablePlan.columns, in order (generated per table: front/routing.ts). */
export type ColumnWriter = (r: Row, sink: ValueSink) => void;

/** Sets column `j` of TablePlan.columns in a row (generated per table: shard/state/push_apply.ts). */
export type ColumnSetter = (r: Row, j: number, v: Value | undefined) => void;

export class TablePlan {
  readonly featureIndex: Map<string, number>;
  /** Built on first use by the front (front/routing.ts), then reused for every push. */
  columnWriter: ColumnWriter | null = null;
  /** Built on first use by the shard (shard/state/push_apply.ts), then reused for every record. */
  columnSetter: ColumnSetter | null = null;
  /** The same plan at another position (a reused table whose index moved). */
  at(index: number): TablePlan {
    return index === this.index ? this : new TablePlan(this.name, index, this.keyFields, this.keyTypes, this.features, this.keySignature, this.columns);
  }

  constructor(
    readonly name: string,
    readonly index: number,
    readonly keyFields: readonly string[],
    readonly keyTypes: readonly FieldType[],
    readonly features: readonly FeaturePlan[],
    /** Key columns + the chain from the root: a change re-keys every entity. */
    readonly keySignature: string,
    /**
     * Every column a feature of this table reads (op input fields, columns named by
     * params such as geo lat/lon, columns of `where`), in a fixed order: the values a
     * PUSH record carries per feed (wal/push_record.ts). Computed the same way with or
     * without compiled features, so the front and the shards agree on it.
     */
    readonly columns: readonly string[],
  ) {
    this.featureIndex = new Map(features.map((f, i) => [f.name, i]));
  }
}

/**
 * A table fed by an event: `from` is the derived row it starts from (an index into
 * the event's `derivs`; 0 is the pushed row) and `chain` the table's own ops.
 */
export class TableFeed {
  constructor(readonly table: TablePlan, readonly from: number, readonly chain: RowFn | null, readonly key: KeyFn) {}
}

/** A derived event evaluated for a push: its own chain over the row of `parent` (an earlier index). */
export class DerivStep {
  constructor(readonly chain: RowFn | null, readonly parent: number) {}
}

export class EventPlan {
  feeds: TableFeed[] = [];
  /**
   * Derived events below this one that feed a table, in topological order, [0] =
   * this event. A push evaluates each once and every feed starts from its row, so
   * a chain of depth d feeding d tables costs O(d) steps per push, not O(d²).
   */
  derivs: DerivStep[] = [new DerivStep(null, -1)];
  readonly #derivRows: Array<Row | null> = [];
  readonly #feedRows: Array<Row | null> = [];
  /** Fields whose pushed strings are normalised to epoch ms (row_text.ts). */
  readonly datetimeFields: readonly string[];
  constructor(
    readonly name: string,
    readonly index: number,
    readonly fields: FieldMap,
    readonly optional: readonly string[],
    readonly validator: PushValidator | null,
    readonly dedupeField: string | null,
    readonly dedupeWindowMs: number,
    readonly coldAfterMs: number | null,
    /** True for a derived event (pushable by name, output of a chain). */
    readonly derived: boolean,
  ) {
    this.datetimeFields = Object.keys(fields).filter((f) => fields[f] === 'datetime');
  }

  /**
   * The row each feed receives (null: a filter dropped it), index for index with
   * `feeds`. The returned array is reused by the next call on this thread.
   */
  feedRows(row: Row): ReadonlyArray<Row | null> {
    const derivs = this.derivs;
    const d = this.#derivRows;
    d[0] = row;
    for (let j = 1; j < derivs.length; j++) {
      const p = d[derivs[j].parent];
      const c = derivs[j].chain;
      d[j] = p === null ? null : c === null ? p : c(p);
    }
    const feeds = this.feeds;
    const out = this.#feedRows;
    out.length = feeds.length;
    for (let i = 0; i < feeds.length; i++) {
      const p = d[feeds[i].from];
      const c = feeds[i].chain;
      out[i] = p === null ? null : c === null ? p : c(p);
    }
    d.fill(null); // rows are not kept past the push
    return out;
  }
}

/**
 * Something register accepted but the client should know: a declared `str`
 * column that the ops compute as another type (the produced type wins). The
 * register answer lists these as `warnings` (docs/registry.md).
 */
export interface CompileNote {
  code: 'declared_type_overridden';
  path: string;
  message: string;
}

export class CompiledRegistry {
  /** Notes of this compile, for the register answer. */
  notes: readonly CompileNote[] = [];
  /** This version as other threads receive it: the wire it was compiled from, or encoded once on demand (wireOf). */
  wire: RegistryWire | null = null;
  constructor(
    readonly version: number,
    readonly state: RegistryState,
    readonly defs: ReadonlyMap<string, NodeDef>,
    readonly events: ReadonlyMap<string, EventPlan>,
    readonly tables: ReadonlyMap<string, TablePlan>,
    /** Feature name -> tables that have it (feature_not_in_table vs feature_not_found). */
    readonly featureTables: ReadonlyMap<string, readonly string[]>,
    /** Node name -> what compiling it produced, for the next compile on this thread. */
    readonly artefacts: ReadonlyMap<string, NodeArtefact>,
    /** The options the artefacts were compiled under (optionsKey). */
    readonly optionsKey: string,
    /** Each node's JSON text, index for index with state.nodes (the next compile's reuse; wire.ts). */
    readonly texts: readonly string[],
  ) {
    this.eventList = [...events.values()];
    this.tableList = [...tables.values()];
    this.eventList.forEach((e, i) => assert.equal(e.index, i, 'event indexes follow compile order'));
    this.tableList.forEach((t, i) => assert.equal(t.index, i, 'table indexes follow compile order'));
  }

  /** By EventPlan.index: PUSH records name events by index (wal/push_record.ts). */
  readonly eventList: readonly EventPlan[];
  /** By TablePlan.index: PUSH records and gets name tables by index. */
  readonly tableList: readonly TablePlan[];
}

/**
 * Everything compiling one node produced. Immutable, and a function of `key` and
 * the compile options only, so a later compile reuses it whole.
 */
export interface NodeArtefact {
  /** Hash of the node's JSON and its upstream's key (null for a source event). */
  readonly key: string;
  readonly def: NodeDef;
  /** Schema of the rows this node outputs (events: as declared). */
  readonly fields: FieldMap;
  readonly optional: string[];
  /** Own chain (derived events and tables). */
  readonly chain: RowFn | null;
  /** Stable description of everything that shapes rows reaching this node. */
  readonly sig: string;
  /** Push validator (events and derived events, on threads that build them). */
  readonly validator: PushValidator | null;
  /** Notes, with paths relative to the node's path (re-prefixed per compile: indexes move). */
  readonly notes: readonly CompileNote[];
  readonly table: { readonly plan: TablePlan; readonly keyFn: KeyFn } | null;
}

/** What the artefacts depend on besides the node: compiles under other options never share them. */
function optionsKey(opts: CompileOptions): string {
  return JSON.stringify([opts.memoryGovEnforce, opts.pushValidators, opts.features !== false]);
}

/** Upstream name as written in the raw node (parse checks it; used only to chain keys). */
function rawUpstream(raw: Record<string, unknown>): string | null {
  const ups = raw.upstreams;
  return Array.isArray(ups) && typeof ups[0] === 'string' ? ups[0] : null;
}

/**
 * An event source's lineage signature is its name only: which fields it has and
 * their types enter the signatures of the features that read them (readTypes),
 * so adding a field keeps every state. A renamed source changes this; the shard
 * compares across a rename by recompiling the old registry under the new names
 * (state.ts install).
 */
function eventSignature(name: string): string {
  return sha(JSON.stringify(['event', name]));
}

function sha(s: string): string {
  return createHash('sha1').update(s).digest('base64url').slice(0, 16);
}

function accessor(field: string | null): ((row: Row) => Value | undefined) | null {
  if (field === null) return null;
  // A generated accessor with the name inlined: V8 caches the property lookup.
  return new Function('r', `return r[${JSON.stringify(field)}];`) as (row: Row) => Value | undefined;
}

/**
 * The columns a feature reads: the op's input field, every normalized param
 * naming a column (geo ops read lat_field/lon_field, defaults included: `agg` is
 * aggSignature's output, op name then the params as JSON) and the columns of its
 * `where`. Sorted. Needs no compiled op, so the front (which compiles feature
 * names only) gets the same list as the shards (TablePlan.columns).
 */
function featureColumns(agg: string, whereSrc: string | null, fields: FieldMap): string[] {
  const cols = new Set<string>();
  const brace = agg.indexOf('{');
  const params = brace < 0 ? {} : JSON.parse(agg.slice(brace)) as Record<string, unknown>;
  for (const v of Object.values(params)) if (typeof v === 'string' && v in fields) cols.add(v);
  if (whereSrc !== null) for (const c of expressionFields(whereSrc, fields)) cols.add(c);
  return [...cols].filter((c) => c in fields).sort();
}

/**
 * Signature part of a feature: the type of every column it reads, as the table's
 * chain delivers them (featureColumns). A type change of a column a feature does
 * not read (or a new field) leaves the feature's state in place.
 */
function readTypes(cols: readonly string[], fields: FieldMap): Array<[string, FieldType]> {
  return cols.map((c) => [c, fields[c]]);
}

/** Union of the features' columns, in first-seen order (TablePlan.columns). */
function tableColumns(perFeature: ReadonlyArray<readonly string[]>): string[] {
  const out = new Set<string>();
  for (const cols of perFeature) for (const c of cols) out.add(c);
  return [...out];
}

/** Yields after each feature: a 100-feature table is many slices, not one. */
function* compileTable(def: TableNodeDef, up: NodeArtefact, index: number, path: string, opts: CompileOptions, sigOut: { sig: string }): Generator<void, { plan: TablePlan; chain: CompiledChain }> {
  const chain = compileChain(def.ops, up.fields, up.optional, path);
  const keyTypes: FieldType[] = def.key.map((k) => {
    const t = chain.fields[k];
    if (t === undefined) throw new SfError('table_key_invalid', `key field ${JSON.stringify(k)} is not a column of the upstream schema${unknownNameHint(k, Object.keys(chain.fields), 'upstream columns')}`, { path: `${path}.key` });
    if (t === 'f64') throw new SfError('table_key_invalid', `key field ${JSON.stringify(k)} is f64; floats are not entity keys`, { path: `${path}.key` });
    return t;
  });
  // Rows reaching the table (upstream lineage + own chain) and how they are keyed,
  // including the key columns' types: any change re-keys every entity.
  const keySignature = sha(JSON.stringify([up.sig, def.ops, def.key, keyTypes]));
  sigOut.sig = keySignature;
  const errors: SfError[] = [];
  const features: FeaturePlan[] = [];
  const columns: string[][] = [];
  if (opts.features === false) {
    for (const [name, spec] of def.agg) {
      features.push(new FeaturePlan(name, features.length, NAME_ONLY, null, null, ''));
      const whereSrc = (spec.params as Record<string, unknown> | undefined)?.where;
      columns.push(featureColumns(aggSignature(spec), typeof whereSrc === 'string' ? whereSrc : null, chain.fields));
    }
    return { plan: new TablePlan(def.name, index, def.key, keyTypes, features, keySignature, tableColumns(columns)), chain };
  }
  for (const [name, spec] of def.agg) {
    const fpath = `${path}.agg.${name}`;
    try {
      const factory = withPath(fpath, () => compileAgg(spec, { fields: chain.fields, path: fpath, memoryGovEnforce: opts.memoryGovEnforce }));
      const whereSrc = spec.params.where;
      if (whereSrc !== undefined && typeof whereSrc !== 'string') throw new SfError('schema_invalid', 'where must be an expression string', { path: `${fpath}.params.where` });
      const where = whereSrc === undefined ? null : withPath(`${fpath}.params.where`, () => compilePredicate(whereSrc, chain.fields));
      const agg = aggSignature(spec);
      const cols = featureColumns(agg, whereSrc ?? null, chain.fields);
      // The op reads `field` as x: it must be among the columns a PUSH record carries.
      assert(factory.field === null || cols.includes(factory.field), `feature ${name}: input field ${factory.field} not among its columns`);
      columns.push(cols);
      const signature = sha(JSON.stringify([keySignature, agg, whereSrc ?? null, readTypes(cols, chain.fields)]));
      features.push(new FeaturePlan(name, features.length, factory, where, accessor(factory.field), signature));
    } catch (err) {
      if (!(err instanceof SfError)) throw err;
      errors.push(err);
    }
    yield;
  }
  if (errors.length > 0) throw combineErrors(errors);
  return { plan: new TablePlan(def.name, index, def.key, keyTypes, features, keySignature, tableColumns(columns)), chain };
}

/** Compiles the whole state. Throws one SfError (with an `errors` list when there are several failures). */
export function compileRegistry(source: RegistrySource, opts: CompileOptions): CompiledRegistry {
  const steps = compileSteps(source, opts);
  for (;;) {
    const r = steps.next();
    if (r.done === true) return r.value;
  }
}

/**
 * compileRegistry in slices, for threads that must keep serving while a large
 * registry compiles (the front between requests, a shard between batches):
 * `step(ms)` compiles for about `ms` and returns true once `result` is set. A
 * compile error is thrown by the step that meets it. One unit of work is a node
 * or a feature, so a slice overruns its budget by at most one of them.
 */
export class SlicedCompile {
  readonly #steps: Generator<void, CompiledRegistry>;
  #result: CompiledRegistry | null = null;
  #failed = false;
  #error: unknown = null;

  constructor(readonly source: RegistrySource, opts: CompileOptions) {
    this.#steps = compileSteps(source, opts);
  }

  get version(): number {
    return this.source.version;
  }

  /** Compiled, or failed (finish() then throws the error). */
  get done(): boolean {
    return this.#result !== null || this.#failed;
  }

  /** Compiles for about `budgetMs`; true once done. */
  step(budgetMs: number): boolean {
    if (this.done) return true;
    const end = performance.now() + budgetMs;
    try {
      for (;;) {
        const r = this.#steps.next();
        if (r.done === true) { this.#result = r.value; return true; }
        if (performance.now() >= end) return false;
      }
    } catch (err) {
      this.#failed = true;
      this.#error = err;
      return true;
    }
  }

  /** The compiled registry, compiling what is left at once; throws the compile's error. */
  finish(): CompiledRegistry {
    this.step(Infinity);
    if (this.#result === null) throw this.#error;
    return this.#result;
  }
}

/** `reg` as other threads receive it (encoded from its texts the first time it is asked for). */
export function wireOf(reg: CompiledRegistry): RegistryWire {
  reg.wire ??= encodeWire(reg.version, reg.texts);
  return reg.wire;
}

/**
 * The raw node objects of `previous` by their JSON text: a node whose text did not
 * change is not parsed again (a wire carries text). Built in steps (yields).
 */
function* previousByText(previous: CompiledRegistry | null | undefined): Generator<void, Map<string, Record<string, unknown>>> {
  const byText = new Map<string, Record<string, unknown>>();
  if (previous === undefined || previous === null) return byText;
  const { texts, state } = previous;
  for (let i = 0; i < texts.length; i++) {
    byText.set(texts[i], state.nodes[i]);
    if ((i & 255) === 255) yield;
  }
  return byText;
}

/** The compile, yielding after each node and feature (SlicedCompile). */
function* compileSteps(source: RegistrySource, opts: CompileOptions): Generator<void, CompiledRegistry> {
  const pathOf = opts.pathOf ?? ((_n: string, i: number) => `nodes[${i}]`);
  const optKey = optionsKey(opts);
  const reusable = opts.previous !== undefined && opts.previous !== null && opts.previous.optionsKey === optKey ? opts.previous.artefacts : null;
  const outs = new Map<string, NodeArtefact>();
  const defs = new Map<string, NodeDef>();
  const events = new Map<string, EventPlan>();
  const tables = new Map<string, TablePlan>();
  const errors: SfError[] = [];
  const notes: CompileNote[] = [];
  const keys = new Map<string, string>();
  const reused: Array<NodeArtefact | null> = [];
  const parsed: Array<NodeDef | null> = [];
  const count = nodeCount(source);
  const wire = isWire(source) ? source : null;
  const known = wire === null ? null : yield* previousByText(opts.previous);
  const texts: string[] = [];
  const raws: Array<Record<string, unknown>> = [];
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    // One node per step, reused or not: hashing a large unchanged node is work too.
    let raw: Record<string, unknown>;
    let text: string;
    if (wire === null) {
      raw = (source as RegistryState).nodes[i];
      text = JSON.stringify(raw);
    } else {
      text = wireNodeText(wire, i);
      raw = known!.get(text) ?? JSON.parse(text) as Record<string, unknown>;
    }
    texts.push(text);
    raws.push(raw);
    const name = typeof raw.name === 'string' ? raw.name : '';
    if (opts.enforceLimits === true) bytes += checkNodeBytes(text, bytes, pathOf(name, i));
    const up = rawUpstream(raw);
    const key = sha(`${up === null ? '' : keys.get(up) ?? ''}\n${text}`);
    keys.set(name, key);
    const prior = reusable?.get(name);
    reused.push(prior !== undefined && prior.key === key ? prior : null);
    if (reused[i] !== null) parsed.push(reused[i]!.def);
    else {
      try {
        parsed.push(parseNode(raw, i));
      } catch (err) {
        if (!(err instanceof SfError)) throw err;
        errors.push(err);
        parsed.push(null);
      }
    }
    yield;
  }
  const state: RegistryState = wire === null ? source as RegistryState : { version: wire.version, nodes: raws };
  if (opts.enforceLimits === true && errors.length === 0) checkRegistryLimits(parsed as NodeDef[], pathOf);
  for (let i = 0; i < parsed.length; i++) {
    const def = parsed[i];
    if (def === null) continue;
    defs.set(def.name, def);
    const path = pathOf(def.name, i);
    const prior = reused[i];
    if (prior !== null) {
      // Unchanged node and upstream: same artefacts; only positions are this compile's.
      outs.set(def.name, prior);
      for (const n of prior.notes) notes.push({ ...n, path: path + n.path });
      if (prior.table !== null) tables.set(def.name, prior.table.plan.at(tables.size));
      else events.set(def.name, eventPlan(prior, events.size));
      continue;
    }
    const key = keys.get(def.name)!;
    try {
      if (def.kind === 'event') {
        const validator = opts.pushValidators ? new PushValidator(def.fields, def.optional, def.validators, path) : null;
        if (!opts.pushValidators) def.validators.forEach((src, j) => withPath(`${path}.validators[${j}]`, () => compilePredicate(src, def.fields)));
        const art: NodeArtefact = { key, def, fields: def.fields, optional: def.optional, chain: null, sig: eventSignature(def.name), validator, notes: [], table: null };
        events.set(def.name, eventPlan(art, events.size));
        outs.set(def.name, art);
        yield;
        continue;
      }
      const found = outs.get(def.upstream);
      const up = found === undefined || found.table !== null ? undefined : found;
      if (up === undefined) {
        if (tables.has(def.upstream) || defs.get(def.upstream)?.kind === 'table') {
          throw new SfError('aggregation_on_table_not_supported', `upstream ${JSON.stringify(def.upstream)} is a table; aggregating a table is not supported in v0`, { path: `${path}.upstreams[0]` });
        }
        throw new SfError('missing_upstream', `upstream ${JSON.stringify(def.upstream)} is neither in the payload nor registered${unknownNameHint(def.upstream, [...outs].filter(([, o]) => o.table === null).map(([n]) => n), 'events')}`, { path: `${path}.upstreams[0]` });
      }
      if (def.kind === 'derived') {
        const chain = compileChain(def.ops, up.fields, up.optional, path);
        const own: CompileNote[] = [];
        if (def.declaredFields !== null) checkDeclared(def.declaredFields, chain.fields, path, own);
        notes.push(...own);
        const validator = opts.pushValidators ? new PushValidator(chain.fields, chain.optional, [], path) : null;
        const art: NodeArtefact = { key, def, fields: chain.fields, optional: chain.optional, chain: chain.fn, sig: sha(JSON.stringify([up.sig, def.ops])), validator, notes: own.map((n) => ({ ...n, path: n.path.slice(path.length) })), table: null };
        events.set(def.name, eventPlan(art, events.size));
        outs.set(def.name, art);
        yield;
        continue;
      }
      const sigOut = { sig: '' };
      const { plan, chain } = yield* compileTable(def, up, tables.size, path, opts, sigOut);
      tables.set(def.name, plan);
      outs.set(def.name, { key, def, fields: chain.fields, optional: chain.optional, chain: chain.fn, sig: sigOut.sig, validator: null, notes: [], table: { plan, keyFn: makeKeyFn(def.key) } });
    } catch (err) {
      if (!(err instanceof SfError)) throw err;
      if (err.detail.errors !== undefined) {
        for (const item of err.detail.errors) errors.push(new SfError(err.code, item.message, { path: item.path }));
      } else errors.push(err);
    }
  }
  if (errors.length > 0) throw combineErrors(errors);
  yield* wireFeeds(outs, events, tables);
  const featureTables = new Map<string, string[]>();
  for (const t of tables.values()) {
    for (const f of t.features) {
      const had = featureTables.get(f.name);
      if (had === undefined) featureTables.set(f.name, [t.name]);
      else had.push(t.name);
    }
  }
  const compiled = new CompiledRegistry(state.version, state, defs, events, tables, featureTables, outs, optKey, texts);
  compiled.wire = wire;
  compiled.notes = notes;
  return compiled;
}

/** A fresh EventPlan (its feeds and scratch rows belong to one version) over a node's artefacts. */
function eventPlan(a: NodeArtefact, index: number): EventPlan {
  const d = a.def;
  return d.kind === 'event'
    ? new EventPlan(d.name, index, d.fields, d.optional, a.validator, d.dedupeKey, d.dedupeWindowMs, d.coldAfterMs, false)
    : new EventPlan(d.name, index, a.fields, a.optional, a.validator, null, 0, null, true);
}

/**
 * A derived event's declared `schema` against what its ops produce. Different
 * columns: bad_return_type (the declared shape is wrong). A declared `str` for a
 * column the ops compute as another type is accepted and the produced type wins:
 * spec 2.1 lets client libraries declare any type they cannot map as `str`, and
 * the peer's SDK declares computed columns that way (a note says so). Any other
 * type difference is a real contradiction: schema_mismatch.
 */
function checkDeclared(declared: FieldMap, produced: FieldMap, path: string, notes: CompileNote[]): void {
  const a = Object.keys(declared).sort();
  const b = Object.keys(produced).sort();
  if (a.length !== b.length || a.some((k, i) => k !== b[i])) {
    throw new SfError('bad_return_type', `declared schema ${JSON.stringify(declared)} does not have the columns the ops produce ${JSON.stringify(produced)}`, { path: `${path}.schema` });
  }
  for (const col of a) {
    const d = declared[col];
    const p = produced[col];
    if (d === p) continue;
    const cpath = `${path}.schema.${col}`;
    if (d === 'str') {
      notes.push({ code: 'declared_type_overridden', path: cpath, message: `column ${col} is declared str but the ops produce ${p}; it is ${p}` });
      continue;
    }
    throw new SfError('schema_mismatch', `column ${col} is declared ${d} but the ops produce ${p}`, { path: cpath });
  }
}

/**
 * For every table, a feed on its upstream and on each ancestor event. Each event
 * evaluates a derived event once per push (EventPlan.derivs) and a table starts
 * from the row of its upstream: no composed chain repeats a shared prefix.
 */
function* wireFeeds(outs: Map<string, NodeArtefact>, events: Map<string, EventPlan>, tables: Map<string, TablePlan>): Generator<void, void> {
  const derivIndex = new Map<EventPlan, Map<string, number>>();
  /** Index of derived event `name` in `ev.derivs`, adding it and its ancestors below `ev`. */
  const indexIn = (ev: EventPlan, name: string): number => {
    let m = derivIndex.get(ev);
    if (m === undefined) { m = new Map([[ev.name, 0]]); derivIndex.set(ev, m); }
    const path: string[] = [];
    let cur = name;
    while (!m.has(cur)) {
      path.push(cur);
      cur = (outs.get(cur)!.def as { upstream: string }).upstream;
    }
    let parent = m.get(cur)!;
    for (let i = path.length - 1; i >= 0; i--) {
      ev.derivs.push(new DerivStep(outs.get(path[i])!.chain, parent));
      parent = ev.derivs.length - 1;
      m.set(path[i], parent);
    }
    return parent;
  };
  for (const [name, plan] of tables) {
    const art = outs.get(name)!;
    const def = art.def as TableNodeDef;
    const keyFn = art.table!.keyFn;
    const own = art.chain;
    let cur: string | null = def.upstream;
    while (cur !== null) {
      const out = outs.get(cur);
      if (out === undefined) break;
      const ev = events.get(cur);
      if (ev !== undefined) ev.feeds.push(new TableFeed(plan, indexIn(ev, def.upstream), own, keyFn));
      if (out.def.kind !== 'derived') break;
      cur = out.def.upstream;
    }
    yield; // a table below a deep chain gets one feed per ancestor event
  }
}
