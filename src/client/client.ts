/**
 * The streamfeat client: `new Client('http://host:8080')` or
 * `new Client('tcp://host:8081')`, then register / push / get / batchGet /
 * ping / reset / registry / close.
 *
 * Retries (spec 7.1, retry.ts): a call is re-sent on 5xx and on the codes
 * wal_unavailable, wal_sync_timeout, internal_error; never on 4xx. Reads,
 * ping and registry are also re-sent when the connection is lost or the
 * request times out. A push is re-sent only when its event has a dedupe_key
 * (learned from register() through this client or from registry()), or when
 * the caller passes {retry: true}: without a dedupe key a re-push may count
 * the event twice. register and reset are re-sent on retryable server answers
 * only (a lost connection leaves it unknown whether they ran).
 */
import type { JsonValue } from '../types';
import { EventSource, DerivedEvent, Table } from './builders';
import { StreamfeatError, asObject, errorFromEnvelope, unparseable } from './errors';
import { HttpTransport } from './http_transport';
import type { HttpTransportOptions } from './http_transport';
import { buildNodes } from './register_payload';
import type { Registrable } from './register_payload';
import { Idempotence, RetryPolicy, shouldRetry, sleep } from './retry';
import type { RetryOptions } from './retry';
import { TcpTransport } from './tcp_transport';
import type { Operation, Reply, Transport } from './transport';
import { toWireData, toWireKey } from './values';
import type { KeyInput, NativeData } from './values';
import type {
  FeatureRow,
  PingReply,
  PushAck,
  RegisterResult,
  RegistryReply,
  ResetReply,
  WireNode,
} from './wire';

/** Spec 8: client-side I/O timeout, per request. */
export const REQUEST_TIMEOUT_MS_DEFAULT = 30_000;

export interface RetryEvent {
  op: Operation;
  /** The attempt that failed (1 = the first). */
  attempt: number;
  error: StreamfeatError;
  delayMs: number;
}

export interface ClientOptions {
  /** Per-request timeout in ms (default 30 000). */
  timeoutMs?: number;
  /** Backoff settings, or false to never retry. */
  retry?: RetryOptions | false;
  /** TCP: connections in the pool (default 4). */
  poolSize?: number;
  /** HTTP: keep-alive sockets (default 16). */
  httpSockets?: number;
  /** HTTP: extra headers on every request. */
  headers?: Record<string, string>;
  /** With a tcp:// url: the HTTP address used for registry(), which has no TCP opcode. */
  httpUrl?: string;
  /**
   * The server's auth token (docs/security.md): sent as `Authorization: Bearer` over
   * HTTP, and in an AUTH frame first on every TCP connection. Harmless when the
   * server has auth off.
   */
  token?: string;
  /** Called before each retry (logging, metrics). */
  onRetry?: (e: RetryEvent) => void;
}

export interface CallOptions {
  timeoutMs?: number;
}

export interface PushOptions extends CallOptions {
  /** true: retry even without a dedupe_key (caller accepts duplicates); false: never retry. */
  retry?: boolean;
}

export interface RegisterOptions extends CallOptions {
  force?: boolean;
  dryRun?: boolean;
}

export interface BatchGetEntry<T extends AnyTable | string = AnyTable | string> {
  table: T;
  key: T extends Table<object, infer K> ? K : KeyInput;
  features?: readonly string[];
}

/** One batchGet answer: the row, or the entry's own error (other entries still answer). */
export type BatchGetResult<Row extends object = FeatureRow> = Partial<Row> | StreamfeatError;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyTable = Table<any, any>;
/** The row a get answers for table T: every feature may be absent (a key that never received events reads as `{}`). */
type RowOfTable<T> = T extends Table<infer R, unknown> ? Partial<R> : FeatureRow;

export class Client {
  readonly url: string;
  readonly #transport: Transport;
  readonly #registryTransport: Transport | null;
  readonly #timeoutMs: number;
  readonly #policy: RetryPolicy;
  readonly #onRetry: ((e: RetryEvent) => void) | null;
  /** Event name -> has a dedupe_key; decides whether a push may be retried. */
  readonly #dedupe = new Map<string, boolean>();
  #registryVersion: number | null = null;
  #closed = false;

  constructor(url: string, opts: ClientOptions = {}) {
    this.url = url;
    this.#transport = makeTransport(url, opts);
    this.#registryTransport = opts.httpUrl === undefined ? null : makeTransport(opts.httpUrl, opts);
    this.#timeoutMs = opts.timeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT;
    this.#policy = new RetryPolicy(opts.retry);
    this.#onRetry = opts.onRetry ?? null;
  }

  /** The last registry_version any reply carried (null before the first). */
  get registryVersion(): number | null {
    return this.#registryVersion;
  }

  /** Whether this client will retry pushes of `event` automatically. */
  retriesPushesOf(event: string): boolean {
    return this.#dedupe.get(event) === true;
  }

  /** Builders and/or raw nodes, or a whole `{nodes: [...]}` body; upstream builders are sent first. */
  async register(
    items: Registrable | readonly Registrable[] | { nodes: readonly Registrable[] },
    opts: RegisterOptions = {},
  ): Promise<RegisterResult> {
    const nodes = buildNodes(items);
    const body: Record<string, unknown> = { nodes };
    if (opts.force === true) body.force = true;
    if (opts.dryRun === true) body.dry_run = true;
    const reply = (await this.#json('register', JSON.stringify(body), Idempotence.ServerErrors, opts)) as RegisterResult;
    if (reply.dry_run !== true) this.#learnDedupe(nodes);
    return reply;
  }

  /** Pushes one event: to a builder, `data` is checked against its schema; by name it is not. */
  push<Row extends object>(event: EventSource<Row> | DerivedEvent<Row>, data: Row, opts?: PushOptions): Promise<PushAck>;
  push(event: string, data: NativeData, opts?: PushOptions): Promise<PushAck>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async push(event: string | EventSource<any> | DerivedEvent<any>, data: NativeData, opts: PushOptions = {}): Promise<PushAck> {
    const name = typeof event === 'string' ? event : event.name;
    const retry = opts.retry ?? this.#dedupe.get(name) === true;
    const body = JSON.stringify({ event: name, data: toWireData(data) });
    const reply = await this.#send('push', body, retry ? Idempotence.Full : Idempotence.None, opts);
    const ack = parseBody(reply.body) as unknown as PushAck;
    this.#seeVersion(ack);
    // A proxy or older server may signal the replay by header only.
    if (reply.replay && ack.idempotent_replay !== true) ack.idempotent_replay = true;
    return ack;
  }

  /**
   * Reads one row. From a table builder the key and feature names are checked and the
   * row is typed; every feature may be absent (a key that never received events is `{}`).
   */
  get<Row extends object, Key, const N extends keyof Row & string = keyof Row & string>(
    table: Table<Row, Key>, key: Key, features?: readonly N[], opts?: CallOptions): Promise<Partial<Pick<Row, N>>>;
  get(table: string, key: KeyInput, features?: readonly string[], opts?: CallOptions): Promise<FeatureRow>;
  async get(table: string | AnyTable, key: KeyInput, features?: readonly string[], opts: CallOptions = {}): Promise<FeatureRow> {
    const body: Record<string, unknown> = { table: tableName(table), key: toWireKey(key) };
    if (features !== undefined) body.features = features;
    return (await this.#json('get', JSON.stringify(body), Idempotence.Full, opts)) as FeatureRow;
  }

  /** Many rows in one request; a result per entry, typed by its table when it is a builder. */
  async batchGet<const E extends readonly BatchGetEntry[]>(entries: E, opts: CallOptions = {}): Promise<{ -readonly [I in keyof E]: RowOfTable<E[I]['table']> | StreamfeatError }> {
    const requests = entries.map((e) => {
      const r: Record<string, unknown> = { table: tableName(e.table), key: toWireKey(e.key) };
      if (e.features !== undefined) r.features = e.features;
      return r;
    });
    const reply = await this.#json('batch_get', JSON.stringify({ requests }), Idempotence.Full, opts);
    const results = Array.isArray(reply) ? reply : asObject(reply)?.results;
    if (!Array.isArray(results)) throw unparseable(JSON.stringify(reply), 200, 'batch_get reply has no results array');
    return results.map(batchEntry) as { -readonly [I in keyof E]: RowOfTable<E[I]['table']> | StreamfeatError };
  }

  async ping(opts: CallOptions = {}): Promise<PingReply> {
    return (await this.#json('ping', '{}', Idempotence.Full, opts)) as PingReply;
  }

  /** Clears all state and the registry (test mode servers only). */
  async reset(opts: CallOptions = {}): Promise<ResetReply> {
    const reply = (await this.#json('reset', '{}', Idempotence.ServerErrors, opts)) as ResetReply;
    this.#dedupe.clear();
    return reply;
  }

  async registry(opts: CallOptions = {}): Promise<RegistryReply> {
    const reply = (await this.#json('registry', '', Idempotence.Full, opts)) as RegistryReply;
    if (Array.isArray(reply.nodes)) {
      this.#dedupe.clear();
      this.#learnDedupe(reply.nodes);
    }
    return reply;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#transport.close();
    if (this.#registryTransport !== null) await this.#registryTransport.close();
  }

  // ---- internals --------------------------------------------------------------

  async #json(op: Operation, body: string, idem: Idempotence, opts: CallOptions): Promise<unknown> {
    const reply = await this.#send(op, body, idem, opts);
    const parsed = parseBody(reply.body);
    this.#seeVersion(parsed);
    return parsed;
  }

  async #send(op: Operation, body: string, idem: Idempotence, opts: CallOptions): Promise<Reply> {
    if (this.#closed) throw new StreamfeatError('ECONNABORTED', 'client is closed', { status: 0 });
    const transport = op === 'registry' && this.#registryTransport !== null ? this.#registryTransport : this.#transport;
    const timeoutMs = opts.timeoutMs ?? this.#timeoutMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await transport.send(op, body, timeoutMs);
      } catch (err) {
        if (this.#closed || attempt >= this.#policy.maxAttempts || !shouldRetry(err, idem)) {
          this.#seeVersion(err);
          throw err;
        }
        const delayMs = this.#policy.delayMs(attempt - 1);
        if (this.#onRetry !== null) this.#onRetry({ op, attempt, error: err as StreamfeatError, delayMs });
        await sleep(delayMs);
      }
    }
  }

  #seeVersion(x: unknown): void {
    const v = x instanceof StreamfeatError ? x.registryVersion : asObject(x)?.registry_version;
    if (typeof v === 'number') this.#registryVersion = v;
  }

  /** A re-register without dedupe_key drops it server-side too, so learn both ways. */
  #learnDedupe(nodes: readonly WireNode[]): void {
    for (const n of nodes) {
      const node = n as Record<string, unknown>;
      if (node.kind === 'event' && typeof node.name === 'string') this.#dedupe.set(node.name, typeof node.dedupe_key === 'string');
    }
  }
}

function makeTransport(url: string, opts: ClientOptions): Transport {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new TypeError(`not a URL: ${url} (expected http://host:port or tcp://host:port)`);
  }
  if (u.protocol === 'http:' || u.protocol === 'https:') {
    const headers = opts.token === undefined ? opts.headers : { ...opts.headers, authorization: `Bearer ${opts.token}` };
    const h: HttpTransportOptions = { socketsMax: opts.httpSockets, headers };
    return new HttpTransport(u, h);
  }
  if (u.protocol === 'tcp:') return new TcpTransport(u, { poolSize: opts.poolSize, token: opts.token });
  throw new TypeError(`unsupported URL scheme ${u.protocol} (expected http:, https: or tcp:)`);
}

function parseBody(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw unparseable(text, 200, 'success body is not JSON');
  }
}

function tableName(t: string | AnyTable): string {
  return typeof t === 'string' ? t : t.name;
}

const ENVELOPE_MEMBERS = new Set(['error', 'errors', 'registry_version']);

/**
 * A batch_get entry is an error when it is an envelope: an `error` object with a
 * string `code` and no members beyond those of spec 2.7. (A row whose only
 * feature is named "error" and holds such an object would be misread; the
 * server cannot tell them apart on the wire either.)
 */
function batchEntry(entry: unknown): BatchGetResult {
  const obj = asObject(entry);
  if (obj === null) return {};
  const error = asObject(obj.error);
  if (error !== null && typeof error.code === 'string' && Object.keys(obj).every((k) => ENVELOPE_MEMBERS.has(k))) {
    return errorFromEnvelope(obj, error, error.code, null);
  }
  return obj as FeatureRow;
}
