/**
 * Every message that crosses a thread boundary, in one place, so that both sides of
 * a thread boundary read the same types and a change to one is seen by the other.
 * Both sides import these with `import type`.
 */
import type { MessagePort } from 'node:worker_threads';
import type { ErrorCode, ErrorDetail } from '../errors';
import type { RegistryState } from '../registry/model';
import type { RegistryWire } from '../registry/wire';
import type { ThreadStats } from '../admin/thread_stats';
import type { RegistryLogFacts, ShardAudit } from '../wal/loss';

/** A coded error as plain data (SfError does not survive structured clone). */
export interface ErrorPayload {
  code: ErrorCode;
  detail: ErrorDetail;
}

// ---- front -> coordinator (piscina tasks) --------------------------------------

export interface CoordinatorInit {
  dataDir: string;
  memoryOnly: boolean;
  memoryGovEnforce: boolean;
  logLevel: string;
  /** Test hook (SERVICE_FAULT_CLOCK_FILE, clock/clock_fault.ts); null in production. */
  clockFaultFile?: string | null;
  /** --max-string-bytes (string_cap.ts; applied by coordinatorInit(); absent: the default). */
  stringBytesMax?: number;
}

export type CoordinatorTask =
  | { kind: 'state' }
  | { kind: 'stats' }
  /**
   * `text`: the request body as received (depth-checked by the front). The front
   * does not parse it: the coordinator does, off the data plane.
   */
  | { kind: 'register'; text: string }
  /** Cluster mode: the register algorithm against `base` (the registry bucket's value); nothing is kept or persisted here. */
  | { kind: 'register_on'; base: Uint8Array | null; text: string }
  /** Cluster mode: a registry bucket value (JSON bytes) decoded for the front. */
  | { kind: 'decode_value'; bytes: Uint8Array }
  | { kind: 'reset' }
  /**
   * Boot, once the shards recovered and nothing lost is refused (server.ts): open
   * the registry log for appends (a torn tail is cut; damage is skipped only with
   * `acceptDataLoss`) and, when records or snapshots named versions up to
   * `versionFloor` that the log lacks, make the current definitions a new version
   * above it, so no later register reuses a version.
   */
  | { kind: 'open'; acceptDataLoss: boolean; versionFloor: number };

/** Answer to the coordinator's `stats` task (admin/thread_stats.ts ThreadStats plus registry figures). */
export interface CoordinatorStats {
  runtime: ThreadStats;
  registryVersion: number;
  versions: number;
}

/** The registry at boot: the current state and every version since the last reset (shards replay under them). */
export interface CoordinatorBoot {
  ok: true;
  state: RegistryState;
  history: RegistryState[];
  /** What scanning the registry log found (wal/loss.ts); null in memory-only mode. Nothing is modified before `open`. */
  log: RegistryLogFacts | null;
}

/** `open` done: the version now current, and its wire when `open` made a new one (the front installs it). */
export interface CoordinatorOpened {
  ok: true;
  registryVersion: number;
  wire: RegistryWire | null;
}

/**
 * A registry task done: the version now current (or, for register_on, the version
 * to compare-and-set) and the answer body. The version travels as a wire (node
 * texts in shared memory, registry/wire.ts): posting it costs the front nothing
 * whatever the registry's size.
 */
export interface CoordinatorDone {
  ok: true;
  /** The new version; null when nothing changed (a dry run, a no-op register). */
  wire: RegistryWire | null;
  body: Record<string, unknown> | null;
  renames: Array<[string, string]>;
  /** A new version was made (install it); false: the registry is unchanged. */
  changed: boolean;
}

/** A registry task refused: the coded error and the version the registry stayed at. */
export interface CoordinatorFailed {
  ok: false;
  error: ErrorPayload;
  version: number;
}

export type CoordinatorResult = CoordinatorDone | CoordinatorFailed;

/** `register_on` done: also the bucket value to compare-and-set (null when nothing changed). */
export interface ClusterRegisterDone extends CoordinatorDone {
  value: Uint8Array | null;
  /** The base value's reset epoch and purged sequence (the new value keeps them). */
  epoch: number;
  purgedSeq: number;
}

/** A registry bucket value, decoded: the version as a wire and the value's other fields. */
export interface DecodedRegistryValue {
  wire: RegistryWire;
  renames: Array<[string, string]>;
  epoch: number;
  purgedSeq: number;
}

/** The answer of each coordinator task, by kind (protocol/coordinator_calls.ts ties it to the pool). */
export interface CoordinatorAnswers {
  state: CoordinatorBoot | CoordinatorFailed;
  stats: CoordinatorStats;
  register: CoordinatorResult;
  register_on: ClusterRegisterDone | CoordinatorFailed;
  decode_value: DecodedRegistryValue;
  reset: CoordinatorResult;
  open: CoordinatorOpened | CoordinatorFailed;
}

// ---- front -> shard (the pipe: at most one batch per shard per event-loop turn, as
// messages on the MessagePort of the shard's serve task, protocol/shard_calls.ts) ---

export const ITEM_PUSH = 1;
export const ITEM_GET = 2;
export const ITEM_INSTALL = 3;
export const ITEM_RESET = 4;
export const ITEM_SNAPSHOT = 5;
export const ITEM_STATS = 6;
export const ITEM_INSPECT = 7;
export const ITEM_EXPORT = 8;
export const ITEM_IMPORT = 9;
export const ITEM_PREPARE = 10;
export const ITEM_FORGET = 11;

/**
 * A run of consecutive pushes: their PUSH records are the next `n` frames of
 * ShardBatch.bytes (wal/push_record.ts), in order. One item per run, not per push,
 * so a batch of pushes crosses to the shard as bytes plus one small object.
 */
export interface PushRunItem {
  k: typeof ITEM_PUSH;
  n: number;
}

/**
 * A get resolved on the front under registry version `v` (installs travel in the
 * same channel, so the shard has `v` when it reads this): table and features by
 * index, so the shard writes the row without looking up a name.
 */
export interface GetItem {
  k: typeof ITEM_GET;
  v: number;
  /** TablePlan.index. */
  t: number;
  /** Canonical key (registry/key.ts). */
  key: string;
  /** FeaturePlan.index of each feature asked for, in the order asked (no repeats); null = all. */
  f: number[] | null;
  /**
   * Response budget group: gets of one batch_get share RESPONSE_BYTES_MAX within a
   * shard batch, so a huge batch is cut short on the shard before its rows are built.
   */
  g?: number;
  /**
   * 1: the served-row log takes this answer (training/served_log.ts), so the shard
   * answers a ServedRowOut (the row, its read time and position) instead of the
   * row text. Absent on every other get: they cost nothing more.
   */
  p?: 1;
}

/**
 * The answer to a GetItem with `p`: the row text as the client gets it, the server
 * time it was read at (the time its windows and decays were evaluated at) and the
 * shard's applied LSN then (every push to this key with ack_lsn <= lsn is in the
 * row, none after it).
 */
export interface ServedRowOut {
  row: string;
  t: number;
  lsn: number;
}

/**
 * Its INSTALL frame is the next frame of ShardBatch.bytes (written by the channel in
 * the item's place), so a run's WAL bytes are one contiguous range.
 */
export interface InstallItem {
  k: typeof ITEM_INSTALL;
  /** Own LSN, so WAL records grow strictly in every shard. */
  lsn: number;
  /** Shared, not copied (registry/wire.ts); a shard that prepared this version does not decode it again. */
  wire: RegistryWire;
  renames: Array<[string, string]>;
}

/**
 * Compile `wire` ahead of its install, in slices between batches (registry/compile.ts
 * SlicedCompile). Answers null once the compiled version is ready (the INSTALL that
 * follows then swaps it in without compiling), or PREPARE_PENDING: the front asks
 * again with `wire` null (the version only).
 * Not logged: the INSTALL is what the WAL records.
 */
export interface PrepareItem {
  k: typeof ITEM_PREPARE;
  version: number;
  wire: RegistryWire | null;
}

export const PREPARE_PENDING = 'pending';

/**
 * A forget: its FORGET frame (wal/forget_record.ts: the lsn, the registry version,
 * each table index and key this shard owns) is the next frame of ShardBatch.bytes,
 * written by the channel in the item's place, so the item itself carries nothing.
 * Answered with one character per entry of the frame, in order (FORGET_REMOVED:
 * the shard held that entity and removed it; FORGET_NOT_HELD), or an ErrorPayload
 * (the run's WAL write failed: nothing was removed).
 */
export interface ForgetItem {
  k: typeof ITEM_FORGET;
}

export const FORGET_REMOVED = '1';
export const FORGET_NOT_HELD = '0';

export interface ResetItem {
  k: typeof ITEM_RESET;
  lsn: number;
  state: RegistryState;
}

export interface SnapshotItem {
  k: typeof ITEM_SNAPSHOT;
  /** true at shutdown: snapshot at once (blocking); false: an incremental job between batches. */
  sync: boolean;
}

/** Admin: the shard's figures (shard/shard_stats.ts ShardStats), answered as JSON text. */
export interface StatsItem {
  k: typeof ITEM_STATS;
}

/** Admin entity inspector: one entity's row and bookkeeping (InspectResult), answered as JSON text. */
export interface InspectItem {
  k: typeof ITEM_INSPECT;
  table: string;
  /** Canonical key (registry/key.ts). */
  key: string;
}

/** What an INSPECT answers (as JSON text). `row` is null when the shard holds no such entity. */
export interface InspectResult {
  shard: number;
  /** The entity was frozen (idle past cold_after) before this read thawed it. */
  cold: boolean;
  lastPushMs: number | null;
  lastLsn: number | null;
  row: Record<string, unknown> | null;
}

/**
 * Cluster checkpoint (cluster/checkpoint.ts): this shard's entities of partition `p`,
 * encoded as a snapshot body (shard/persist/snapshot_job.ts) restricted to the partition's
 * keys and lz4-compressed; answered as a Uint8Array. Runs in its place in the batch,
 * so it reflects exactly the pushes enqueued before it.
 */
export interface ExportItem {
  k: typeof ITEM_EXPORT;
  p: number;
}

/**
 * Cluster takeover: replaces this shard's entities of partition `p` by those of a
 * checkpoint. `parts` are the ExportItem answers of the exporting node's shards
 * (any shard count): each shard keeps the keys it owns.
 */
export interface ImportItem {
  k: typeof ITEM_IMPORT;
  p: number;
  parts: Uint8Array[];
}

export type ShardItem = PushRunItem | GetItem | InstallItem | PrepareItem | ForgetItem | ResetItem | SnapshotItem | StatsItem | InspectItem | ExportItem | ImportItem;

/** Every item enqueued one by one (pushes go through the channel's push writer, forgets through enqueueForget). */
export type NonPushItem = Exclude<ShardItem, PushRunItem | ForgetItem>;

export interface ShardBatch {
  items: ShardItem[];
  /**
   * The WAL frames of the batch's push runs, installs and forgets, in item order, crc not yet
   * filled in (the shard seals them).
   */
  bytes: Uint8Array;
}

/**
 * A ShardBatch as it crosses to the shard thread (protocol/shard_calls.ts): the
 * frames travel as a one-byte string (one character per byte), which the shard
 * copies into one buffer it reuses for every batch (ShardBatchDecoder). An
 * ArrayBuffer per batch, transferred or copied, counted in full as external
 * memory allocated in the shard's isolate, and V8 charges that against the
 * old-generation limit: 1.5-3 MB/s of batch bytes under the fraud load started
 * marking every few seconds on a ~10 MB heap (bench/DECISIONS.md "Hand-off between
 * the front and the shards"). A string is young-generation garbage instead.
 */
export interface ShardBatchWire {
  items: ShardItem[];
  /** ShardBatch.bytes as latin1 text ('' when the batch has no frames). */
  frames: string;
}

/** The first task a shard thread gets: it answers with ShardHello once recovered. */
export interface ShardHelloTask {
  hello: true;
}

/**
 * The task that opens a shard thread's batch pipe (protocol/shard_calls.ts
 * openShardPipe): batches arrive on `port` as messages and are answered on it in
 * order; the task ends when the front closes the port, and fails when the thread
 * dies (that is how the front learns of it).
 */
export interface ShardServeTask {
  serve: MessagePort;
}

/** Everything a shard thread is asked to do as a piscina task (shard_main.ts handle). */
export type ShardTask = ShardHelloTask | ShardServeTask;

/** A batch that threw in the shard (a bug): every item of it is answered internal_error. */
export interface ShardBatchFailed {
  failed: { message: string; stack: string };
}

/** What the shard posts back on the pipe for each batch, in batch order. */
export type ShardBatchAnswer = ShardBatchResult | ShardBatchFailed;

/** What one item is answered with (see ShardBatchResult). */
export type ItemOut = string | ErrorPayload | Uint8Array | ServedRowOut | null;

/**
 * A push run's answer: null when every push of it was logged and applied, one
 * ErrorPayload when every push got it (a failed WAL write), else one entry per push.
 */
export type PushRunOut = ErrorPayload | null | Array<ErrorPayload | null>;

/**
 * One entry per item, in order: a GET, STATS or INSPECT gets JSON text (a GET with
 * `p` a ServedRowOut), a FORGET its per-entry answer (ForgetItem); an EXPORT a
 * Uint8Array; a push run a PushRunOut; an INSTALL, RESET, SNAPSHOT or IMPORT null
 * on success or an ErrorPayload.
 */
export interface ShardBatchResult {
  outs: Array<ItemOut | PushRunOut>;
  /**
   * WAL health seen by this batch (readiness, lifecycle.ts): absent when the batch
   * wrote nothing, null when its WAL writes succeeded, the reason when a WAL
   * append or fdatasync failed (its pushes got wal_unavailable).
   */
  walError?: string | null;
}

export interface ShardInit {
  shardId: number;
  shardCount: number;
  dataDir: string;
  memoryOnly: boolean;
  /** This shard's share of --memory-limit in bytes (0: no limit). */
  memoryLimitBytes: number;
  memoryGovEnforce: boolean;
  logLevel: string;
  /**
   * --max-string-bytes (string_cap.ts), applied by shardInit() in the shard thread;
   * absent: the default (a shard built in process, as tests and benches do, reads
   * its thread's cap).
   */
  stringBytesMax?: number;
  walSync: 'batch' | 'always';
  walSyncTimeoutMs: number;
  walSyncIntervalMs: number;
  walSegmentBytesMax: number;
  faultFile: string | null;
  /** Test hook (SERVICE_FAULT_CLOCK_FILE, clock/clock_fault.ts); null or absent in production. */
  clockFaultFile?: string | null;
  /**
   * The server clock's shared buffer (clock/server_clock.ts): the shard reads
   * server time from it. Absent outside a server (unit tests, benches): the thread
   * keeps a clock of its own, anchored at its wall clock.
   */
  clock?: SharedArrayBuffer;
  /** Cluster mode: the cluster's partition count (ShardState filters keys by partition); 0 = single node. */
  partitions: number;
  /** Every registry version still referenced by the WAL (for exact replay). */
  history: RegistryState[];
  /** Current registry (installed after replay). */
  current: RegistryState;
}

/** What a shard reports after recovery (the answer to ShardHelloTask). */
export interface ShardHello {
  shardId: number;
  lastLsn: number;
  recoveredRecords: number;
  /** Dedupe entries still inside their windows: event, value, lsn, version, time. */
  dedupe: Array<[string, string, number, number, number]>;
  /** The newest server time the shard recovered (pushes and its snapshot's time; 0: none): server time starts at or after it. */
  lastTimeMs: number;
  /** What recovery proved lost and the registry versions it met (wal/loss.ts); null in memory-only mode. */
  audit: ShardAudit | null;
}
