/**
 * Forget requests (docs/wire.md "Forgetting an entity"): which entities a body
 * names, resolved under the front's registry, and the sink that gathers the shards'
 * answers. The request logic that dispatches them is Front.forget.
 *
 *   {"table": "T", "key": K}           the entity K of table T
 *   {"tables": ["A", "B"], "key": K}   the entity K of each of these tables
 *   {"tables": "*", "key": K}          the entity K of every table whose key K can be read as
 *
 * A table's entity key is its own key (composite keys as arrays, as in /get). With
 * "*", a table is skipped when K cannot be read against its key (another arity or
 * type), and a composite table is only tried with an array (the "a|b" convenience
 * of /get would make a string match one-field and two-field tables at once).
 */
import { SfError } from '../errors';
import { KEY_BYTES_MAX } from '../limits';
import type { CompiledRegistry, TablePlan } from '../registry/compile';
import { parseWireKey, preview, shardOf } from '../registry/key';
import { FORGET_REMOVED, type ErrorPayload, type ItemOut } from '../protocol/messages';
import { unknownNameHint } from '../util/near_name';
import type { Sink } from './channel';
import type { Reply } from './reply';

type Obj = Record<string, unknown>;

/** Top-level members of a forget body. */
const FORGET_KEYS = new Set(['table', 'tables', 'key']);
/** `tables` naming every table. */
export const EVERY_TABLE = '*';

/** The entities one forget removes, and the shard that owns each key. */
export interface ResolvedForget {
  /** The tables the forget reaches, in the order answered, and each one's canonical key and shard. */
  tables: TablePlan[];
  keys: string[];
  shardOf: number[];
  /** The key as the caller sent it (JSON text) when the forget named every table, else null. */
  everyKey: string | null;
}

/** Reads and resolves a forget body for `shards` shards; throws SfError (nothing is removed then). */
export function resolveForget(body: unknown, reg: CompiledRegistry, shards: number): ResolvedForget {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw shapeError('');
  const b = body as Obj;
  for (const k in b) if (!FORGET_KEYS.has(k)) throw shapeError(k, `unknown member ${JSON.stringify(k)}`);
  const one = 'table' in b;
  if (one === ('tables' in b)) throw shapeError('table', 'name the table with "table", or several with "tables" (a list, or "*" for every table), not both');
  if (!('key' in b)) throw shapeError('key', 'the body needs a "key"');
  const key = b.key;
  let tables: TablePlan[];
  let keys: string[];
  let everyKey: string | null = null;
  if (one) {
    const t = tableOf(reg, b.table, 'table');
    tables = [t];
    keys = [keyOf(t, key)];
  } else if (b.tables === EVERY_TABLE) {
    ({ tables, keys } = everyTableOf(reg, key));
    everyKey = JSON.stringify(key);
  } else {
    const names = b.tables;
    if (!Array.isArray(names) || names.length === 0) throw shapeError('tables', '"tables" must be a non-empty list of table names, or "*"');
    tables = [];
    keys = [];
    const seen = new Set<TablePlan>();
    for (let i = 0; i < names.length; i++) {
      const t = tableOf(reg, names[i], `tables[${i}]`);
      if (seen.has(t)) continue; // named twice: forgotten once
      seen.add(t);
      tables.push(t);
      keys.push(keyOf(t, key));
    }
  }
  const owners = keys.map((k) => shardOf(k, shards));
  return { tables, keys, shardOf: owners, everyKey };
}

/** The registered table `name` names (path `at` in errors). */
function tableOf(reg: CompiledRegistry, name: unknown, at: string): TablePlan {
  if (typeof name !== 'string') throw shapeError(at, 'a table name is a string');
  const t = reg.tables.get(name);
  if (t === undefined) throw new SfError('unknown_table', `table ${JSON.stringify(name)} is not registered${unknownNameHint(name, reg.tables.keys(), 'registered tables', 'no tables are registered')}`, { path: at });
  return t;
}

/** Table `t`'s canonical key read from `key` (throws key_shape_mismatch or key_parse_failure with path `key`). */
function keyOf(t: TablePlan, key: unknown): string {
  return withinKeyBytes(parseWireKey(key, t.keyFields, t.keyTypes, 'key'));
}

/** A canonical key no entity can have (over KEY_BYTES_MAX, as a push would refuse) is key_parse_failure. */
function withinKeyBytes(k: string): string {
  if (k.length * 3 > KEY_BYTES_MAX && Buffer.byteLength(k) > KEY_BYTES_MAX) {
    throw new SfError('key_parse_failure', `the key is ${Buffer.byteLength(k)} bytes; a key is at most ${KEY_BYTES_MAX} bytes (KEY_BYTES_MAX)`, { path: 'key' });
  }
  return k;
}

/** "*": every table whose key `key` can be read as, in registry order; key_shape_mismatch when none. */
function everyTableOf(reg: CompiledRegistry, key: unknown): { tables: TablePlan[]; keys: string[] } {
  if (key === null || key === undefined || (typeof key === 'object' && !Array.isArray(key))) {
    throw new SfError('key_shape_mismatch', `key must be a scalar or an array of key parts, got ${preview(key)}`, { path: 'key' });
  }
  const tables: TablePlan[] = [];
  const keys: string[] = [];
  for (const t of reg.tableList) {
    if (t.keyFields.length > 1 && !Array.isArray(key)) continue;
    let k: string;
    try {
      k = parseWireKey(key, t.keyFields, t.keyTypes, 'key');
    } catch {
      continue; // this table's key has another shape or type
    }
    tables.push(t);
    keys.push(withinKeyBytes(k));
  }
  if (tables.length === 0) {
    const shapes = reg.tableList.map((t) => `${t.name} (${t.keyFields.map((f, i) => `${f}: ${t.keyTypes[i]}`).join(', ')})`);
    const known = shapes.length === 0 ? 'no tables are registered' : `table keys: ${shapes.slice(0, 8).join('; ')}${shapes.length > 8 ? '; ...' : ''}`;
    throw new SfError('key_shape_mismatch', `no registered table has a key that ${preview(key)} can be read as (${known})`, { path: 'key' });
  }
  return { tables, keys };
}

function shapeError(path: string, why = 'expected {"table": name, "key": key} or {"tables": [names] | "*", "key": key}'): SfError {
  return new SfError('unsupported_request_shape', why, { path });
}

/** What a ForgetCtx needs of the front. */
export interface ForgetHost {
  fail(reply: Reply, e: ErrorPayload, withVersion?: boolean): void;
  forgotten(rows: number): void;
}

/**
 * Gathers one forget's shard answers (a string of FORGET_REMOVED / FORGET_NOT_HELD
 * per entry the shard got, or an error): answered once every shard has, with the
 * rows removed per table, or with the first error (the entities of the shards that
 * succeeded are gone; a retry finds nothing there and removes the rest).
 */
export class ForgetCtx implements Sink {
  readonly #removed: Uint8Array;
  #pending: number;
  #error: ErrorPayload | null = null;

  constructor(
    readonly host: ForgetHost,
    readonly reply: Reply,
    readonly plan: ResolvedForget,
    /** Shards the forget was sent to. */
    shards: number,
    readonly lsn: number,
    readonly version: number,
  ) {
    this.#removed = new Uint8Array(plan.tables.length);
    this.#pending = shards;
  }

  /** `tag`: the shard that answered; its entries are those of plan.shardOf `tag`, in order. */
  done(out: ItemOut, tag: number): void {
    if (typeof out === 'string') {
      const owners = this.plan.shardOf;
      for (let i = 0, j = 0; i < owners.length; i++) if (owners[i] === tag) this.#removed[i] = out[j++] === FORGET_REMOVED ? 1 : 0;
    } else if (out !== null && 'code' in out) {
      this.#error ??= out;
    }
    if (--this.#pending > 0) return;
    if (this.#error !== null) { this.host.fail(this.reply, this.#error); return; }
    let total = 0;
    let tables = '';
    const names = this.plan.tables;
    for (let i = 0; i < names.length; i++) {
      total += this.#removed[i];
      // Table names are identifiers (registry/model.ts isValidName): no escaping needed.
      tables += `${i > 0 ? ',' : ''}"${names[i].name}":${this.#removed[i]}`;
    }
    this.host.forgotten(total);
    this.reply.ok(`{"removed":${total},"tables":{${tables}},"ack_lsn":${this.lsn},"registry_version":${this.version}}`);
  }
}
