/**
 * Declarative builders: users describe events, derived events and tables in
 * TypeScript and never hand-write register JSON (issue 7 item 2).
 *
 *   const Txn = event('Txn', { card_id: String, amount: Number, country: optional(String) },
 *                     { dedupe_key: 'txn_id', dedupe_window: '1h' });
 *   const Big = Txn.filter(col('amount').gt(100)).as('BigTxn');        // derived event
 *   const Stats = table('CardStats', { from: Txn, key: 'card_id',
 *                   features: { n_1h: agg.count({ window: '1h' }) } });
 *
 * An unnamed chain (`Txn.filter(...)`) is a value, not a node: it can feed a
 * table (its ops become the table's `ops`) or be named with `.as(name)`, but
 * registering it as is fails with `invalid_descriptor` (spec 2.2: anonymous
 * chains are not addressable). Joins, unions and class-form tables exist as
 * names only, to fail with their coded errors (spec 7.2, 9.1).
 *
 * Every builder carries the row type it produces (typed.ts): `event()` infers
 * it from the field declarations, chain ops derive it, `table()` checks its key
 * and aggregated fields against it and carries the feature row type to get().
 */
import { Agg, durationText } from './aggs';
import type { Duration } from './aggs';
import { StreamfeatError } from './errors';
import { exprText } from './expr';
import type { Expr } from './expr';
import { buildSchema } from './schema';
import type { FieldsSpec } from './schema';
import type { AggValue, ColumnOf, EventRow, KeyOf, OptionalNames, Renamed, Simplify, WithColumns } from './typed';
import type { KeyInput, NativeData } from './values';
import type { FeatureRow, WireAggSpec, WireChainOp, WireDerivedEventNode, WireEventNode, WireTableNode } from './wire';
import type { JsonValue } from '../types';

export interface EventSettings {
  /** More optional fields, besides those declared with optional(...). */
  optional?: readonly string[];
  dedupe_key?: string;
  dedupeKey?: string;
  dedupe_window?: Duration;
  dedupeWindow?: Duration;
  keep_events_for?: Duration;
  keepEventsFor?: Duration;
  /** Idle-eviction threshold: an entity idle this long is cold. */
  cold_after?: Duration;
  coldAfter?: Duration;
  /** Boolean expressions every push must satisfy (validation_failed otherwise). */
  validators?: Array<Expr | string>;
}

/**
 * Shared base of everything chain ops hang off: sources, derived events, chains, refs.
 * `Row` is the row type it produces (an event's push data; NativeData when untyped).
 */
export abstract class Stream<Row extends object = NativeData> {
  /** The named node this stream starts from (itself for named nodes). */
  abstract readonly source: NamedSource;
  /** Chain ops applied after `source` (empty for named nodes). */
  abstract readonly ops: readonly WireChainOp[];
  declare readonly __row?: Row;

  filter(predicate: Expr | string): Chain<Row> {
    return this.then({ op: 'filter', expr: exprText(predicate) });
  }

  withColumns<const C extends Record<string, Expr | string>>(columns: C): Chain<WithColumns<Row, C>> {
    const exprs: Record<string, string> = {};
    for (const name of Object.keys(columns)) exprs[name] = exprText(columns[name]);
    return this.then({ op: 'with_columns', exprs });
  }

  select<const K extends ColumnOf<Row>>(...fields: Array<K | readonly K[]>): Chain<Simplify<Pick<Row, K>>> {
    return this.then({ op: 'select', fields: (fields as Array<string | string[]>).flat() });
  }

  drop<const K extends ColumnOf<Row>>(...fields: Array<K | readonly K[]>): Chain<Simplify<Omit<Row, K>>> {
    return this.then({ op: 'drop', fields: (fields as Array<string | string[]>).flat() });
  }

  rename<const M extends { [K in ColumnOf<Row>]?: string }>(mapping: M): Chain<Renamed<Row, M>> {
    return this.then({ op: 'rename', mapping: { ...mapping } as Record<string, string> });
  }

  /** Names this stream as a derived event (output_kind "event") that can be pushed to and feed tables. */
  as(name: string): DerivedEvent<Row> {
    return new DerivedEvent<Row>(name, this.source, this.ops);
  }

  /** Cross-stream joins are not supported in v0. Always throws `joins_not_supported`. */
  join(..._args: unknown[]): never {
    throw new StreamfeatError('joins_not_supported', 'joins are not supported in v0');
  }

  /** Unions are not supported in v0. Always throws `unions_not_supported_in_v0`. */
  union(..._args: unknown[]): never {
    throw new StreamfeatError('unions_not_supported_in_v0', 'unions are not supported in v0');
  }

  private then<R extends object>(op: WireChainOp): Chain<R> {
    return new Chain<R>(this.source, [...this.ops, op]);
  }
}

/** A named node other nodes can start from. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type NamedSource = EventSource<any> | DerivedEvent<any> | Ref<any>;

export class EventSource<Row extends object = NativeData> extends Stream<Row> {
  readonly name: string;
  readonly fields: FieldsSpec;
  readonly settings: EventSettings;
  readonly ops: readonly WireChainOp[] = [];

  constructor(name: string, fields: FieldsSpec, settings: EventSettings = {}) {
    super();
    this.name = name;
    this.fields = fields;
    this.settings = settings;
  }

  get source(): EventSource<Row> {
    return this;
  }

  /** The dedupe field, if any (the client retries pushes of such events). */
  get dedupeKey(): string | undefined {
    return this.settings.dedupe_key ?? this.settings.dedupeKey;
  }

  toNode(): WireEventNode {
    const s = this.settings;
    const node: WireEventNode = { kind: 'event', name: this.name, schema: buildSchema(this.fields, s.optional) };
    const dedupeKey = this.dedupeKey;
    if (dedupeKey !== undefined) node.dedupe_key = dedupeKey;
    setDuration(node, 'dedupe_window', s.dedupe_window ?? s.dedupeWindow);
    setDuration(node, 'keep_events_for', s.keep_events_for ?? s.keepEventsFor);
    setDuration(node, 'cold_after', s.cold_after ?? s.coldAfter);
    if (s.validators !== undefined && s.validators.length > 0) node.validators = s.validators.map(exprText);
    return node;
  }
}

/** A named chain over one upstream (kind "derivation", output_kind "event"); pushed with its chain's output row. */
export class DerivedEvent<Row extends object = NativeData> extends Stream<Row> {
  readonly name: string;
  readonly upstream: NamedSource;
  readonly chainOps: readonly WireChainOp[];

  constructor(name: string, upstream: NamedSource, ops: readonly WireChainOp[]) {
    super();
    this.name = name;
    this.upstream = upstream;
    this.chainOps = ops;
  }

  get source(): DerivedEvent<Row> {
    return this;
  }

  get ops(): readonly WireChainOp[] {
    return [];
  }

  toNode(): WireDerivedEventNode {
    return {
      kind: 'derivation',
      name: this.name,
      output_kind: 'event',
      upstreams: [this.upstream.name],
      ops: this.chainOps.map(copyOp),
    };
  }
}

/** An unnamed chain: usable as a table's `from` or named with `.as()`; not registrable. */
export class Chain<Row extends object = NativeData> extends Stream<Row> {
  readonly source: NamedSource;
  readonly ops: readonly WireChainOp[];

  constructor(source: NamedSource, ops: readonly WireChainOp[]) {
    super();
    this.source = source;
    this.ops = ops;
  }
}

/** A node registered elsewhere, named only (nothing of it is sent on register); `Row` if the caller gives it. */
export class Ref<Row extends object = NativeData> extends Stream<Row> {
  readonly name: string;
  readonly ops: readonly WireChainOp[] = [];

  constructor(name: string) {
    super();
    this.name = name;
  }

  get source(): Ref<Row> {
    return this;
  }
}

/**
 * Feature name -> aggregation over a column of `Row`, or a raw `{op, params}` spec
 * (unchecked; an Agg is not one, else any Agg would pass as a raw spec).
 */
export type Features<Row extends object = NativeData> = Record<string, Agg<unknown, ColumnOf<Row>> | (WireAggSpec & { readonly __field?: never })>;

export interface TableSpec<Row extends object = NativeData, K extends ColumnOf<Row> | readonly ColumnOf<Row>[] = ColumnOf<Row> | readonly ColumnOf<Row>[], F extends Features<Row> = Features<Row>> {
  /** The upstream: an event, a derived event, an unnamed chain over one, or a registered name. */
  from: Stream<Row> | string;
  /** Entity key field(s); a composite key is ordered. */
  key: K;
  /** Feature name -> aggregation. */
  features: F;
}

/** The feature row of a table with features F over an upstream row Row. */
export type FeatureRowOf<Row, F> = Simplify<{ -readonly [N in keyof F]: F[N] extends Agg<infer O, infer Fd> ? AggValue<O, Fd, Row> : JsonValue }>;

/**
 * A table. `Row` is its feature row (what get() answers for a key that received
 * events), `Key` what it is read by.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export class Table<Row extends object = FeatureRow, Key = KeyInput> {
  readonly name: string;
  readonly upstream: NamedSource;
  readonly chainOps: readonly WireChainOp[];
  readonly key: string[];
  readonly features: Record<string, Agg | WireAggSpec>;
  declare readonly __row?: Row;
  declare readonly __key?: Key;

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  constructor(name: string, spec: TableSpec<any, any, any>) {
    const from = typeof spec.from === 'string' ? new Ref(spec.from) : spec.from;
    this.name = name;
    this.upstream = from.source;
    this.chainOps = from.ops;
    this.key = typeof spec.key === 'string' ? [spec.key] : [...spec.key];
    this.features = spec.features;
  }

  toNode(): WireTableNode {
    const aggs: Record<string, WireAggSpec> = {};
    for (const name of Object.keys(this.features)) {
      const a = this.features[name];
      aggs[name] = a instanceof Agg ? a.toSpec() : { op: a.op, params: { ...(a.params ?? {}) } };
    }
    const node: WireTableNode = { kind: 'table', name: this.name, upstreams: [this.upstream.name], key: [...this.key], agg: aggs };
    if (this.chainOps.length > 0) node.ops = this.chainOps.map(copyOp);
    return node;
  }

  /** Tables cannot be joined in v0. Always throws `joins_not_supported`. */
  join(..._args: unknown[]): never {
    throw new StreamfeatError('joins_not_supported', 'joins are not supported in v0');
  }

  /** Tables cannot be unioned in v0. Always throws `unions_not_supported_in_v0`. */
  union(..._args: unknown[]): never {
    throw new StreamfeatError('unions_not_supported_in_v0', 'unions are not supported in v0');
  }
}

/**
 * The class form of a table (`class CardStats extends TableClass { ... }`) is
 * reserved for a later version (spec 9.1): constructing one, or passing any
 * class to register(), throws `svc_table_class_form_not_supported`.
 */
export abstract class TableClass {
  constructor() {
    throw classFormError();
  }
}

export function classFormError(): StreamfeatError {
  return new StreamfeatError(
    'svc_table_class_form_not_supported',
    'class-form table declarations are not supported in v0; use table(name, { from, key, features })',
  );
}

// ---- Entry points -------------------------------------------------------------

/** An event; its push data type is inferred from `fields` (and `settings.optional`). */
export function event<const F extends FieldsSpec, const S extends EventSettings = {}>(name: string, fields: F, settings?: S): EventSource<EventRow<F, OptionalNames<S>>> {
  return new EventSource(name, fields, settings);
}

export function derive<Row extends object>(name: string, from: Stream<Row>): DerivedEvent<Row>;
export function derive(name: string, from: string): DerivedEvent;
export function derive(name: string, from: Stream<object> | string): DerivedEvent<object> {
  const stream = typeof from === 'string' ? new Ref(from) : from;
  return stream.as(name);
}

/**
 * A table over a typed upstream: `key` must name its columns, every aggregation's
 * field must be one of them, and the table's row type follows from the features.
 * With `from: 'Name'` (or an untyped upstream) nothing is checked.
 */
export function table<Row extends object, const K extends ColumnOf<Row> | readonly ColumnOf<Row>[], const F extends Features<Row>>(
  name: string, spec: { from: Stream<Row>; key: K; features: F },
): Table<FeatureRowOf<Row, F>, KeyOf<Row, K>>;
export function table<const F extends Features>(name: string, spec: { from: string; key: string | readonly string[]; features: F }): Table<FeatureRowOf<NativeData, F>, KeyInput>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function table(name: string, spec: TableSpec<any, any, any>): Table<any, any> {
  return new Table(name, spec);
}

/**
 * A node registered earlier (by this or another client), to build on by name.
 * Give its row type to have tables and chains over it checked: `ref<{ user: string }>('Txn')`.
 */
export function ref<Row extends object = NativeData>(name: string): Ref<Row> {
  return new Ref<Row>(name);
}

/** Class-form tables are not supported in v0. Always throws `svc_table_class_form_not_supported`. */
export function classForm(..._args: unknown[]): never {
  throw classFormError();
}

function setDuration(node: WireEventNode, key: 'dedupe_window' | 'keep_events_for' | 'cold_after', d: Duration | undefined): void {
  if (d !== undefined) node[key] = durationText(d);
}

function copyOp(op: WireChainOp): WireChainOp {
  return JSON.parse(JSON.stringify(op)) as WireChainOp;
}
