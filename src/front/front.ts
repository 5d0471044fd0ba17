/**
 * The front thread's request logic, transport-agnostic (requests.ts calls these
 * methods with a Reply for HTTP and TCP): push (with dedupe replay), get,
 * batch_get, forget, ping. Owns the compiled registry of the front, the LSN counter
 * (lsn.ts), dedupe (dedupe.ts: claim or replay, settle, reseed at boot), and one
 * channel per shard; flushes channels once per event-loop turn.
 * Registry changes, snapshots, drain and shard recovery are the control side
 * (control.ts, `front.control`); routing and PUSH records are routing.ts.
 *
 *   push: shape -> event plan -> validate -> chains/keys (once) -> dedupe -> LSN + time
 *         -> one PUSH record per owning shard (at least one) -> ack when all logged
 *         (pushBytes: the same for a common body, read from its bytes without JSON.parse)
 *   get:  shape -> table -> features (to indexes) -> key -> enqueue on the owning shard
 *   forget: shape -> tables and keys (forget.ts) -> LSN + time -> one FORGET record per
 *         owning shard -> answered when all logged and applied
 */
import type Piscina from 'piscina';
import { asSfError, SfError, type ErrorCode, type ErrorDetail } from '../errors';
import type { Logger } from '../log';
import type { Metrics } from '../admin/metrics';
import { compileRegistry, type CompiledRegistry } from '../registry/compile';
import { parseWireKey, shardOf } from '../registry/key';
import type { RegistryState } from '../registry/model';
import { ITEM_GET, type ErrorPayload, type NonPushItem } from '../protocol/messages';
import { ShardChannel, type Sink } from './channel';
import { dropFrames, targetCount, targetsOf } from './routing';
import { PushCore } from './push_core';
import { resolveFeatures } from './get_core';
import { PushText } from './push_text';
import { FrontControl, type ControlHost } from './control';
import { LsnCounter } from './lsn';
import { rowFromEnvelope } from '../registry/row_text';
import type { ClusterHooks, ResolvedGet } from './cluster_hooks';
import { BatchCtx, GetCtx, ServedBatch, ServedGet } from './sinks';
import type { ServedRowLog } from '../training/served_log';
import { PushDedupe } from './dedupe';
import { PushCtx, PushCtxPool, type PushDone } from './push';
import { ForgetCtx, resolveForget, type ForgetHost } from './forget';
import type { Reply } from './reply';
import type { Auth } from './auth';
import { DEDUPE_ENTRIES_MAX, KEY_BYTES_MAX, REQUEST_ID_BYTES_MAX, WAL_RECORD_BYTES_MAX } from '../limits';
import type { ServerClock } from '../clock';
import { VERSION } from '../version';
import { isObj, type Obj } from '../util/plain_object';

/**
 * The `request_id` of a get body or batch_get entry (docs/wire.md "Request ids"), as
 * the JSON text the served-row log writes; null when absent. A string of at most
 * REQUEST_ID_BYTES_MAX bytes or a safe integer; anything else is refused
 * (unsupported_request_shape), whether or not the log is on.
 */
function requestIdJson(body: unknown, path: string): string | null {
  const id = (body as Obj).request_id;
  if (id === undefined || id === null) return null;
  if (typeof id === 'string' && id.length <= REQUEST_ID_BYTES_MAX && Buffer.byteLength(id) <= REQUEST_ID_BYTES_MAX) return JSON.stringify(id);
  if (typeof id === 'number' && Number.isSafeInteger(id)) return String(id);
  throw new SfError('unsupported_request_shape', `request_id must be a string of at most ${REQUEST_ID_BYTES_MAX} bytes or an integer (REQUEST_ID_BYTES_MAX)`, { path: `${path}${path ? '.' : ''}request_id` });
}

/** `"server_version":"x.y.z"` of the ping answer, built once. */
const SERVER_VERSION_JSON = `"server_version":${JSON.stringify(VERSION)}`;


export interface FrontOptions {
  testMode: boolean;
  /** The served-row log (training/served_log.ts); null or absent = off. */
  servedLog?: ServedRowLog | null;
  /** Shared-token authentication for both transports; null = off (docs/security.md). */
  auth: Auth | null;
  memoryGovEnforce: boolean;
  batchGetEntriesMax: number;
  dedupeEntriesMax?: number;
}

export class Front implements PushDone, ControlHost, ForgetHost {
  #registry: CompiledRegistry;
  readonly channels: readonly ShardChannel[];
  /** Dedupe: claim or replay, settle, reseed (dedupe.ts). */
  readonly dedupe: PushDedupe;
  /** Registry changes, snapshots, drain, shard recovery (control.ts). */
  readonly control: FrontControl;
  /** Pushes and registry items take their LSNs here (lsn.ts). */
  readonly lsn: LsnCounter;
  /** Cluster mode's log sink, read router and registry path (src/cluster/); null on a single node. */
  #cluster: ClusterHooks | null = null;
  #lastT = 0;
  /** batch_get response budget groups (GetItem.g). */
  #batchSeq = 0;
  #flushScheduled = false;
  /** Envelope checks, validation, chains and keys of a push, reused by every push (push_core.ts). */
  readonly #core = new PushCore();
  /** Scratch of push routing and record writing, reused by every push (the core's). */
  readonly #route = this.#core.route;
  /** Reads common push bodies from their bytes, without JSON.parse (push_text.ts). */
  readonly #reader = new PushText();
  /** pushBytes(): where each shard's record began in its writer. */
  readonly #starts: number[] = [];
  /** Contexts of answered pushes, reused (push.ts PushCtxPool). */
  readonly #ctxPool = new PushCtxPool(this);
  readonly #flushAll = (): void => {
    this.#flushScheduled = false;
    for (let i = 0; i < this.channels.length; i++) this.channels[i].flush();
  };

  constructor(
    readonly opts: FrontOptions,
    readonly coordinator: Piscina,
    shardPools: Piscina[],
    initial: RegistryState,
    lastLsn: number,
    readonly metrics: Metrics,
    readonly log: Logger,
    /** Server time, owned here (clock/server_clock.ts): push times; the shards read the same clock. */
    readonly clock: ServerClock,
  ) {
    this.dedupe = new PushDedupe(this, opts.dedupeEntriesMax ?? DEDUPE_ENTRIES_MAX);
    this.#servedLog = opts.servedLog ?? null;
    this.#registry = compileRegistry(initial, { memoryGovEnforce: opts.memoryGovEnforce, pushValidators: true, features: false });
    this.control = new FrontControl(this);
    this.channels = shardPools.map((p, i) => new ShardChannel(i, p, (err) => this.control.shardFailed(i, err), (sink, err) => this.completionFailed(sink, err)));
    this.lsn = new LsnCounter(lastLsn);
  }

  /** The registry pushes are validated under now (read-only: control.ts swaps it through adoptRegistry). */
  get registry(): CompiledRegistry {
    return this.#registry;
  }

  adoptRegistry(reg: CompiledRegistry): void {
    this.#registry = reg;
  }

  get cluster(): ClusterHooks | null {
    return this.#cluster;
  }

  /** Cluster mode (cluster/node.ts): from now on pushes, reads and registry changes go through `hooks`. */
  attachCluster(hooks: ClusterHooks): void {
    this.#cluster = hooks;
  }

  /**
   * A completion threw (a bug, or a resource error such as an oversized string):
   * that request gets internal_error, the error is logged with its stack and
   * counted; every other request of the batch, and the server, carry on.
   */
  completionFailed(sink: Sink, err: unknown): void {
    this.metrics.completionErrorsTotal++;
    this.log.error({ kind: 'front.completion_failed', msg: 'a request failed while its answer was completed', err: String((err as Error)?.stack ?? err) });
    if (sink.reply !== undefined) {
      // The envelope rule of every other error (requests.ts errorCarriesVersion): no registry_version for the get family.
      const getFamily = sink instanceof GetCtx || sink instanceof BatchCtx;
      this.fail(sink.reply, { code: 'internal_error', detail: { message: 'internal error while completing this request', reason: String((err as Error)?.message ?? err) } }, !getFamily);
    }
  }

  get version(): number {
    return this.#registry.version;
  }

  schedule(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(this.#flushAll);
  }

  flush(): void {
    this.#flushAll();
  }

  /** Admin items (stats, inspect) go down a shard channel in order with the traffic. */
  send(shard: number, item: NonPushItem, sink: Sink): void {
    this.channels[shard].enqueue(item, sink, 0);
    this.schedule();
  }

  /** Answers `e`; `withVersion` false for the get family (requests.ts errorCarriesVersion). The Reply counts the error. */
  fail(reply: Reply, e: ErrorPayload, withVersion = true): void {
    reply.error(e.code, e.detail, withVersion ? this.#registry.version : undefined);
  }

  #failWith(reply: Reply, code: ErrorCode, detail: ErrorDetail, withVersion = true): void {
    this.fail(reply, { code, detail }, withVersion);
  }

  failErr(reply: Reply, err: unknown, withVersion = true): void {
    const e = asSfError(err);
    if (e.code === 'internal_error') this.log.error({ kind: 'server.internal_error', err });
    this.fail(reply, { code: e.code, detail: e.detail }, withVersion);
  }

  // ---- push ---------------------------------------------------------------------

  /**
   * `text` is the envelope as received; in cluster mode it is what the stream logs
   * (and other nodes parse again), so nothing in it may escape validation: the
   * envelope has `event` and one of `data`/`body` and nothing else, and `data` is
   * checked field by field. On a single node the shards get PUSH records instead
   * (routing.ts): parsed, validated, routed and keyed once, here.
   */
  push(body: unknown, text: string, reply: Reply): void {
    const startMs = performance.now();
    const reg = this.registry;
    const core = this.#core;
    const n = this.channels.length;
    const refused = core.accept(reg, body, this.#cluster === null ? n : 1);
    if (refused !== null) {
      this.fail(reply, refused);
      return;
    }
    const plan = core.plan!;
    const row = core.row!;
    const route = core.route;
    let dedupe = null;
    /** The dedupe value the shards record (null: none). */
    const recorded = core.dedupeValue();
    const dedupeValue = recorded ?? '';
    if (recorded !== null) {
      // Windows of dedupe count on the monotonic clock (dedupe.ts): no wall clock step lets a duplicate through.
      dedupe = this.dedupe.claim(plan, recorded, startMs, reply);
      if (dedupe === null) return; // answered: a replay, or the store is full
    }
    const t = this.#stamp(this.clock.at(startMs));
    if (this.#cluster !== null) {
      this.#cluster.append({ plan, row, text, t, version: reg.version, reply, startMs, dedupe, dedupeValue });
      return;
    }
    const lsn = this.lsn.take();
    const mask = targetsOf(route.mask, lsn, n);
    const ctx = this.#ctxPool.take(lsn, reg.version, reply, targetCount(mask), startMs, dedupe, plan.name, dedupeValue);
    if (route.dispatch(this.channels, mask, plan, lsn, t, reg.version, recorded, ctx) < 0) {
      this.#ctxPool.give(ctx);
      if (dedupe !== null) this.dedupe.failed(dedupe, plan.name, dedupeValue);
      this.#failWith(reply, 'invalid_event', { message: `the push would be logged as a record over ${WAL_RECORD_BYTES_MAX} bytes (WAL_RECORD_BYTES_MAX): its tables read more values than that; push less, or read large values from fewer tables`, path: 'data' });
      return;
    }
    this.schedule();
  }

  /**
   * A push read straight from its body's bytes b[start, end) (push_text.ts) when the
   * reader takes it: true once it is accepted (answered when its shards have logged
   * it). false: nothing was done, and the body goes the JSON.parse way (requests.ts),
   * which also answers every error. Not in cluster mode (the stream logs the text).
   */
  pushBytes(b: Uint8Array, start: number, end: number, reply: Reply): boolean {
    if (this.#cluster !== null) return false;
    const startMs = performance.now();
    const reg = this.#registry;
    const reader = this.#reader;
    const ev = reader.parse(b, start, end, reg.events);
    if (ev === null) return false;
    const n = this.channels.length;
    const keyed = reader.route(ev, b, n);
    if (keyed < 0) return false;
    const t = this.#stamp(this.clock.at(startMs));
    const lsn = this.lsn.take();
    const mask = targetsOf(keyed, lsn, n);
    const ctx = this.#ctxPool.take(lsn, reg.version, reply, targetCount(mask), startMs, null, ev.plan.name, '');
    // Sends as PushRoute.dispatch (routing.ts) does, with the reader's write. Not
    // folded into it on purpose: a dispatch shared through an interface both routers
    // implement needs no closure or allocation, but its write call turns polymorphic
    // once the server has run both kinds of push, which measured 15-35 ns more per
    // push here (~3% of parse + route + write, CPU time) to save six lines.
    const starts = this.#starts;
    for (let s = 0; s < n; s++) {
      if ((mask & (1 << s)) === 0) continue;
      const w = this.channels[s].pushWriter;
      starts[s] = w.pos;
      if (reader.write(w, s, ev, b, lsn, t, reg.version) < 0) {
        // A record over RECORD_BYTES_MAX: the JSON.parse path refuses it with its code.
        dropFrames(this.channels, mask, s, starts);
        this.#ctxPool.give(ctx);
        return false;
      }
    }
    for (let s = 0; s < n; s++) if ((mask & (1 << s)) !== 0) this.channels[s].enqueuePush(ctx);
    this.schedule();
    return true;
  }

  /**
   * A push's time: server time at its arrival (which never goes backwards by
   * itself), and never before the last push's (acks and records stay in time order).
   */
  #stamp(now: number): number {
    const t = now > this.#lastT ? now : this.#lastT;
    this.#lastT = t;
    return t;
  }

  /**
   * Cluster mode: one stream copy of a push (partition `partition` of `partitions`,
   * stream sequence `seq`, validated by the node that published it) for the local
   * shards of its keys in that partition, under this front's registry (the one the
   * shards have). Returns how many shards it was enqueued on (0: none of its keys
   * is in the partition), or -1 when it cannot be applied under this registry
   * (unknown event, unreadable row); `sink` is told once per shard.
   */
  pushCopy(event: string, text: string, t: number, seq: number, partition: number, partitions: number, sink: Sink): number {
    const plan = this.#registry.events.get(event);
    const row = plan === undefined ? null : rowFromEnvelope(text, plan.datetimeFields);
    if (plan === undefined || row === null) return -1;
    const route = this.#route;
    if (route.route(plan, row, this.channels.length, partition, partitions) >= 0) return -1;
    const targets = route.dispatch(this.channels, route.mask, plan, seq, t, this.#registry.version, null, sink);
    if (targets > 0) this.schedule();
    return targets;
  }

  pushDone(ctx: PushCtx, error: ErrorPayload | null): void {
    if (error !== null) {
      if (ctx.dedupe !== null) this.dedupe.failed(ctx.dedupe, ctx.dedupeEvent, ctx.dedupeValue);
      this.fail(ctx.reply, error);
      this.#ctxPool.give(ctx);
      return;
    }
    this.metrics.pushTotal++;
    this.metrics.pushLatency[ctx.reply.transport].observe((performance.now() - ctx.startMs) / 1000);
    if (ctx.dedupe !== null) this.dedupe.acked(ctx.dedupe, ctx.lsn, ctx.version);
    ctx.reply.ack(ctx.lsn, ctx.version);
    this.#ctxPool.give(ctx);
  }

  // ---- get / batch_get --------------------------------------------------------------

  /**
   * Table and features of a get under the current registry, by index (throws
   * SfError): the shard writes the row from these without a name lookup.
   */
  #resolve(tableName: string, featuresRaw: unknown, key: string, path: string): ResolvedGet {
    const { table, features, f } = resolveFeatures(this.#registry, tableName, featuresRaw, path);
    return {
      item: { k: ITEM_GET, v: this.#registry.version, t: table.index, key, f },
      shard: shardOf(key, this.channels.length),
      table: table.name,
      features,
    };
  }

  /** Validates one get request; returns it resolved or throws SfError. */
  #getItem(body: unknown, path: string): ResolvedGet {
    if (!isObj(body) || typeof body.table !== 'string' || ('key' in body) === ('entity_id' in body)) {
      throw new SfError('unsupported_request_shape', 'expected {table: string, key: scalar | array, features?: [string]} (entity_id is accepted instead of key, not with it)', { path });
    }
    // Resolved first so that an unknown table or feature is reported before a bad key.
    const resolved = this.#resolve(body.table, body.features, '', path);
    const table = this.#registry.tableList[resolved.item.t];
    // `entity_id`: beava's deprecated name for `key`, accepted for its clients (docs/compatibility.md).
    const key = parseWireKey('key' in body ? body.key : body.entity_id, table.keyFields, table.keyTypes, `${path}${path ? '.' : ''}key`);
    if (key.length * 3 > KEY_BYTES_MAX && Buffer.byteLength(key) > KEY_BYTES_MAX) {
      throw new SfError('key_parse_failure', `the key is ${Buffer.byteLength(key)} bytes; a key is at most ${KEY_BYTES_MAX} bytes (KEY_BYTES_MAX)`, { path: `${path}${path ? '.' : ''}key` });
    }
    resolved.item.key = key;
    resolved.shard = shardOf(key, this.channels.length);
    return resolved;
  }

  /** Cluster mode: a get forwarded by another node (canonical key, names) resolved here. Throws SfError. */
  resolveGet(table: string, key: string, features: unknown): ResolvedGet {
    return this.#resolve(table, features, key, '');
  }

  get(body: unknown, reply: Reply): void {
    const startMs = performance.now();
    let g;
    let served: ServedGet | null = null;
    try {
      g = this.#getItem(body, '');
      const id = requestIdJson(body, '');
      if (this.#servedLog !== null) served = this.#served(g, id, -1);
    } catch (err) {
      this.failErr(reply, err, false);
      return;
    }
    const ctx = new GetCtx(reply, this, startMs, served);
    if (this.#cluster !== null) { this.#cluster.read(g, ctx, 0); return; }
    this.channels[g.shard].enqueue(g.item, ctx, 0);
    this.schedule();
  }

  /** The served-row log. */
  get servedLog(): ServedRowLog | null {
    return this.#servedLog;
  }

  readonly #servedLog: ServedRowLog | null;

  /**
   * The served-row log entry of a resolved get when its table is logged and the coin
   * says so (then the shard is asked for the row's read time and position), else null.
   */
  #served(g: ResolvedGet, requestId: string | null, batchIndex: number): ServedGet | null {
    const log = this.#servedLog!;
    if (!log.sampled(g.table)) return null;
    g.item.p = 1;
    const table = this.#registry.tableList[g.item.t];
    // A one-field canonical key is the value itself; a composite one is its JSON array text already.
    const keyJson = table.keyFields.length === 1 ? JSON.stringify(g.item.key) : g.item.key;
    return new ServedGet(log, JSON.stringify(g.table), keyJson, g.item.v, g.features === null ? null : JSON.stringify(g.features), requestId, batchIndex);
  }

  /** Hands one item to a local shard (cluster mode feeds and reads through here). */
  enqueue(shard: number, item: NonPushItem, sink: Sink, tag: number): void {
    this.channels[shard].enqueue(item, sink, tag);
    this.schedule();
  }

  batchGet(body: unknown, reply: Reply): void {
    const startMs = performance.now();
    // Only the spec's shape: a bare array (or anything else) is a coded 400, never rows.
    const requests = isObj(body) ? body.requests : undefined;
    if (!Array.isArray(requests)) {
      const message = Array.isArray(body)
        ? 'expected {requests: [{table, key, features?}, ...]}; got a bare array (wrap it: {"requests": [...]})'
        : 'expected {requests: [{table, key, features?}, ...]}';
      this.#failWith(reply, 'unsupported_request_shape', { message, path: 'requests' }, false);
      return;
    }
    if (requests.length > this.opts.batchGetEntriesMax) {
      this.#failWith(reply, 'batch_too_large', { message: `${requests.length} entries; the limit is ${this.opts.batchGetEntriesMax} (SERVICE_MAX_BATCH_GET)`, path: 'requests' }, false);
      return;
    }
    let batchId: string | null;
    try {
      batchId = requestIdJson(body, '');
    } catch (err) {
      this.failErr(reply, err, false);
      return;
    }
    const parts: string[] = new Array(requests.length);
    const log = this.#servedLog;
    const entries: Array<ServedGet | null> | null = log === null ? null : new Array<ServedGet | null>(requests.length).fill(null);
    const valid: Array<ResolvedGet | null> = requests.map((r, i) => {
      try {
        const v = this.#getItem(r, `requests[${i}]`);
        const id = requestIdJson(r, `requests[${i}]`) ?? batchId;
        if (entries !== null) entries[i] = this.#served(v, id, i);
        return v;
      } catch (err) {
        const e = asSfError(err);
        parts[i] = JSON.stringify({ error: { code: e.code, path: e.detail.path, message: e.message } });
        return null;
      }
    });
    const pending = valid.filter((v) => v !== null).length;
    const served = entries !== null && entries.some((e) => e !== null) ? new ServedBatch(entries) : null;
    const ctx = new BatchCtx(reply, parts, this, pending, startMs, served);
    if (pending === 0) { ctx.finish(); return; }
    const group = this.#batchSeq++;
    for (const v of valid) if (v !== null) v.item.g = group;
    if (this.#cluster !== null) {
      const cluster = this.#cluster;
      valid.forEach((v, i) => { if (v !== null) cluster.read(v, ctx, i); });
      return;
    }
    valid.forEach((v, i) => { if (v !== null) this.channels[v.shard].enqueue(v.item, ctx, i); });
    this.schedule();
  }

  // ---- forget -----------------------------------------------------------------------

  /**
   * Removes the entities a forget body names (forget.ts): one FORGET record per
   * shard that owns one of their keys, in order with the pushes already enqueued
   * there, under one LSN. Not in cluster mode yet (docs/cluster.md).
   */
  forget(body: unknown, reply: Reply): void {
    const startMs = performance.now();
    if (this.#cluster !== null) {
      this.#failWith(reply, 'forget_unavailable_in_cluster_mode', { message: 'forget is not available in cluster mode yet: each node logs its own partitions, and an erase must reach every copy of them (docs/cluster.md)' });
      return;
    }
    const reg = this.#registry;
    let plan;
    try {
      plan = resolveForget(body, reg, this.channels.length);
    } catch (err) {
      this.failErr(reply, err);
      return;
    }
    const t = this.#stamp(this.clock.at(startMs));
    const lsn = this.lsn.take();
    const { tables, keys, shardOf: owners } = plan;
    if (tables.length === 1) {
      this.channels[owners[0]].enqueueForget(lsn, t, reg.version, [tables[0].index], keys, plan.everyKey, new ForgetCtx(this, reply, plan, 1, lsn, reg.version), owners[0]);
    } else {
      const shards = [...new Set(owners)].sort((a, b) => a - b);
      const ctx = new ForgetCtx(this, reply, plan, shards.length, lsn, reg.version);
      for (const s of shards) {
        const mine = owners.flatMap((o, i) => (o === s ? [i] : []));
        this.channels[s].enqueueForget(lsn, t, reg.version, mine.map((i) => tables[i].index), mine.map((i) => keys[i]), plan.everyKey, ctx, s);
      }
    }
    this.schedule();
  }

  /** A forget was answered having removed `rows` entities (metrics). */
  forgotten(rows: number): void {
    this.metrics.forgetTotal++;
    this.metrics.forgetRowsTotal += rows;
  }

  // ---- control ----------------------------------------------------------------------

  ping(reply: Reply): void {
    reply.ok(`{"pong":true,"registry_version":${this.#registry.version},${SERVER_VERSION_JSON}}`);
  }

  /**
   * GET /registry: joined from the node texts the compile kept (the same bytes as
   * stringifying the nodes, without walking megabytes of objects per request), once
   * per version.
   */
  registryBody(): string {
    const reg = this.#registry;
    if (this.#registryBodyOf !== reg) {
      this.#registryBody = `{"registry_version":${reg.version},"nodes":[${reg.texts.join(',')}]}`;
      this.#registryBodyOf = reg;
    }
    return this.#registryBody;
  }

  #registryBody = '';
  #registryBodyOf: CompiledRegistry | null = null;
}
