/**
 * Every limit of the server as a named constant (units last). Values that an
 * operator may change are read in config.ts; these are the defaults and hard caps.
 * The assertions at the bottom check how the limits relate, once, at load.
 */
import { strict as assert } from 'node:assert';

/** Spec 8: entries per /batch_get (SERVICE_MAX_BATCH_GET). */
export const BATCH_GET_ENTRIES_MAX_DEFAULT = 10_000;
/** Spec 8: TCP frame payload bytes (SERVICE_TCP_MAX_FRAME_BYTES). */
export const TCP_FRAME_BYTES_MAX_DEFAULT = 4 * 1024 * 1024;
/** HTTP request body cap; bigger bodies get http_protocol_error and the connection closes. */
export const HTTP_BODY_BYTES_MAX = 4 * 1024 * 1024;
/** Pipelined TCP requests waiting for their turn on one connection before we stop reading. */
export const TCP_PIPELINE_DEPTH_MAX = 1024;
/**
 * A TCP frame must arrive whole within this long of its first byte (SERVICE_TCP_FRAME_TIMEOUT,
 * --tcp-frame-timeout), else frame_error and the connection closes: a peer trickling a 4 MiB
 * frame would otherwise pin its buffer forever. 4 MiB at 30 s is ~140 KB/s, far below any
 * link a producer runs on.
 */
export const TCP_FRAME_TIMEOUT_MS_DEFAULT = 30_000;
/**
 * Closes a TCP connection that sent nothing and awaits nothing for this long (SERVICE_TCP_IDLE_TIMEOUT,
 * --tcp-idle-timeout). 0 = off, the default: producers keep connections open between bursts.
 */
export const TCP_IDLE_TIMEOUT_MS_DEFAULT = 0;
/**
 * Open framed-TCP connections (SERVICE_TCP_CONNECTIONS_MAX, --tcp-connections-max); one more is
 * answered with a too_many_connections error frame and closed. Each connection can hold a partial
 * frame of up to TCP_FRAME_BYTES_MAX_DEFAULT, so this also bounds that memory.
 */
export const TCP_CONNECTIONS_MAX_DEFAULT = 10_000;
/** After we end a connection, how long the peer has to read our last frame and close before we destroy it. */
export const TCP_CLOSE_LINGER_MS = 5_000;
/**
 * With --auth-token-file, a TCP connection must have presented its token within this long of
 * connecting (SERVICE_TCP_AUTH_TIMEOUT, --tcp-auth-timeout), else `unauthorized` and close: a
 * socket that connects and sends nothing would otherwise hold a connection slot forever (the
 * idle timeout is off by default). A client sends AUTH as its first frame, within a round trip.
 */
export const TCP_AUTH_TIMEOUT_MS_DEFAULT = 5_000;
/**
 * With --auth-token-file, connections that have not authenticated yet hold at most this share
 * of the TCP connection cap (at least one): a newer connection past it (or past the cap while
 * any is unauthenticated) closes the oldest of them with too_many_connections. So sockets
 * without the token can never keep a client that has it out, and the other three quarters of
 * the slots are free or held by authenticated connections.
 */
export const TCP_UNAUTHENTICATED_SHARE = 0.25;
/**
 * Open HTTP connections, either engine (SERVICE_HTTP_CONNECTIONS_MAX, --http-connections-max);
 * one more is answered 503 too_many_connections and closed. Each costs a descriptor, so the
 * cap (and the TCP one) is also lowered at start to fit the descriptor limit (FD_RESERVE_*).
 */
export const HTTP_CONNECTIONS_MAX_DEFAULT = 10_000;
/**
 * Descriptors kept out of the connection caps at start (src/fd_budget.ts): the data dir
 * (WAL segment rolls, snapshot files, registry log rewrites, cold store segments), worker
 * threads' event loops, log destinations, the admin listener and its connections, and the
 * sockets being refused. The reserve is the larger of FD_RESERVE_MIN + FD_RESERVE_PER_SHARD
 * per shard and FD_RESERVE_FRACTION of the limit; what is left after the descriptors open at
 * that point is shared by the HTTP and TCP caps.
 */
export const FD_RESERVE_MIN = 96;
export const FD_RESERVE_PER_SHARD = 32;
export const FD_RESERVE_FRACTION = 0.2;
/** A descriptor limit that leaves fewer connections than this per listener stops the boot (raise `ulimit -n`). */
export const FD_CONNECTIONS_MIN = 8;
/**
 * Refused connections (over a cap) a node:net listener lets linger at once while the peer reads
 * the refusal (TCP_CLOSE_LINGER_MS); more are destroyed right after the refusal is written, so
 * a connect flood cannot turn the linger into descriptors.
 */
export const REFUSED_LINGERING_MAX = 16;
/**
 * A TCP frame's payload of at most this many bytes is checked for UTF-8 in place when it is
 * ASCII (util/utf8.ts): node's isUtf8 takes no range, and the view it needs cost ~60 ns per
 * frame, more than scanning a get body. Longer or non-ASCII payloads go to isUtf8.
 */
export const UTF8_INLINE_SCAN_BYTES_MAX = 256;
/** A node:net listener whose accept() fails logs server.accept_failed at most this often, with the count of failures not logged. */
export const ACCEPT_ERROR_LOG_INTERVAL_MS = 1_000;

/**
 * node:net HTTP engine (http_net.ts). A request head (request line + headers +
 * the blank line) over this many bytes is http_protocol_error and the connection
 * closes. 4 KiB is uWebSockets.js's default (UWS_HTTP_MAX_HEADERS_SIZE), so both
 * engines accept the same heads. Also bounds a chunk-size line and a trailer line.
 */
export const HTTP_HEADER_BYTES_MAX = 4096;
/** Pipelined HTTP requests waiting for their response on one connection before we stop reading. */
export const HTTP_PIPELINE_DEPTH_MAX = 1024;
/** A request head must be complete this long after its first byte (slowloris); else http_protocol_error and close. */
export const HTTP_HEADER_TIMEOUT_MS = 10_000;
/** A request body must be complete this long after its head (slow POST); else http_protocol_error and close. */
export const HTTP_BODY_TIMEOUT_MS = 30_000;
/** A keep-alive connection with nothing in flight and no partial request closes after this long (uWS: 10 s too). */
export const HTTP_IDLE_TIMEOUT_MS = 10_000;
/** How often the HTTP timeouts above are checked (one timer per server, not one per request). */
export const HTTP_TIMEOUT_SWEEP_MS = 1_000;

/**
 * Log bytes one thread keeps waiting for stdout; past this, lines are dropped rather than
 * block the thread or grow without bound (src/log.ts). 16 MiB is minutes of normal logging.
 */
export const LOG_BUFFER_BYTES_MAX = 16 * 1024 * 1024;
/** How long shutdown waits for waiting log lines to be written (a stalled stdout reader must not stop an exit). */
export const LOG_FLUSH_TIMEOUT_MS = 2_000;

/**
 * Served-row log (training/served_log.ts): lines waiting for the writer, in UTF-16
 * units (about bytes for ASCII rows). Past it lines are dropped and counted rather
 * than queued: the front never waits for the log's disk. 8 MiB is ~40,000 lines of
 * a 200-byte row, a second of gets at the measured peak rate.
 */
export const SERVED_LOG_PENDING_BYTES_MAX = 8 * 1024 * 1024;
/** Served-row log files are rotated past this many bytes (--served-log-file-bytes). */
export const SERVED_LOG_FILE_BYTES_DEFAULT = 64 * 1024 * 1024;
/** Smallest rotation size accepted: a file must hold at least a few rows. */
export const SERVED_LOG_FILE_BYTES_MIN = 4096;
/** Served-row log files kept; older ones are deleted (--served-log-files). */
export const SERVED_LOG_FILES_DEFAULT = 16;
/** A failing served-row log disk is logged at most once per this long (and its open retried as often). */
export const SERVED_LOG_ERROR_LOG_INTERVAL_MS = 1_000;
/** Offline tools (replay, export): the progress line on a terminal is rewritten at most this often. */
export const PROGRESS_INTERVAL_MS = 250;
/** Offline tools: the clock is read once per this many progress ticks (records, events). */
export const PROGRESS_CLOCK_STRIDE = 4096;
/** Offline tools: input files are read in chunks of this many bytes. */
export const INPUT_CHUNK_BYTES = 1024 * 1024;
/** Offline tools: output is written in chunks of about this many UTF-16 units. */
export const OUTPUT_CHUNK_UNITS = 1024 * 1024;
/** Offline tools under --bad-lines skip: the first this many bad lines are shown on stderr; the rest are counted. */
export const BAD_LINES_REPORTED_MAX = 20;
/** A get's `request_id` (string of at most this many UTF-8 bytes, or an integer): what the served-row log records. */
export const REQUEST_ID_BYTES_MAX = 128;

/** Shortest accepted auth token (--auth-token-file): 16 bytes of a random hex token is 64 bits. */
export const AUTH_TOKEN_BYTES_MIN = 16;

/** Register payload limits. */
export const REGISTER_NODES_MAX = 1_000;
/** Node, field, feature and column names (schema_invalid). */
export const NAME_LENGTH_MAX = 128;
export const SCHEMA_FIELDS_MAX = 1_000;
export const EXPRESSION_LENGTH_MAX = 4_096;
export const EXPRESSION_DEPTH_MAX = 256;
/**
 * "Did you mean" hints: edit-distance cells per thread and second (about 20 ms of
 * CPU). Past it, unknown-name errors go out without a hint, so a register full
 * of unknown names against 1,000 similar long field names stays cheap.
 */
export const HINT_CELLS_PER_SECOND = 4_000_000;
/**
 * An unknown-name error (event, table, feature, op, upstream) lists the names that
 * exist when there are at most this many; past it only the "did you mean" remains,
 * so an error message stays one readable line.
 */
export const HINT_NAMES_LISTED_MAX = 12;
/** Compiled expressions kept per thread for re-registration (expr/compile.ts); least recently used leave first. */
export const EXPRESSION_CACHE_ENTRIES = 20_000;
/**
 * Nesting depth of a parsed JSON request, checked iteratively. A parsed value is
 * copied to another thread by structured clone, which recurses: a payload nested
 * thousands deep would overflow the stack there (invalid_registration).
 */
export const JSON_DEPTH_MAX = 64;

/**
 * Size of the whole registry (registry_too_large). Compiling costs time on every
 * thread and every entity of a table carries one state per feature, so these bound
 * register time and per-entity memory; docs/limits.md says why each default.
 */
export const REGISTRY_NODES_MAX = 10_000;
/**
 * A register compiles its new version in slices of at most this much time per
 * event-loop turn, on the front and on every shard (registry/compile.ts
 * SlicedCompile), and swaps it in whole once every thread has it: requests are
 * served between slices, so a register of any size delays a ping, push or get
 * by about one slice: 4 ms keeps it within ~10 ms of its normal latency (docs/limits.md).
 */
export const REGISTRY_COMPILE_SLICE_MS = 4;
/** How often the front asks a shard whether its sliced compile of the next version is done. */
export const REGISTRY_PREPARE_POLL_MS = 2;
/** How often a graceful stop's drain (front/control.ts) checks that every shard channel is idle: short, since the stop waits on it. */
export const CHANNEL_DRAIN_POLL_MS = 2;
/**
 * Bytes of the registry's JSON (every node's text, registry_too_large). Every thread
 * holds the registry, and the registry log appends the whole state per version; a
 * registry of 1,000 tables x 100 features with `where` clauses is ~12 MB.
 */
export const REGISTRY_BYTES_MAX = 16 * 1024 * 1024;
/**
 * Bytes of one node's JSON (registry_too_large): a node is the unit of work of a
 * compile slice (decode, hash, parse), so this bounds how far one slice can overrun
 * REGISTRY_COMPILE_SLICE_MS (~5 ms to parse 1 MiB). 1,000 features with 500-character
 * `where` clauses fit.
 */
export const REGISTRY_NODE_BYTES_MAX = 1024 * 1024;
/** Features (aggregations) of one table: one op state each, per entity. */
export const TABLE_FEATURES_MAX = 1_000;
/** Features over all tables. */
export const REGISTRY_FEATURES_MAX = 100_000;
/** Expressions over the registry: validators, filters, with_columns columns, where clauses. */
export const REGISTRY_EXPRESSIONS_MAX = 20_000;
/** Derivation nodes between a source event and the deepest node fed by it. */
export const DERIVATION_DEPTH_MAX = 256;
/** Key columns of a table. */
export const KEY_FIELDS_MAX = 16;

/** Per-entity and per-value bounds. */
/** Canonical entity key, UTF-8 bytes: push -> invalid_event, get -> key_parse_failure. */
export const KEY_BYTES_MAX = 1_024;
/**
 * A pushed str or bytes value, UTF-8 bytes (invalid_event), by default
 * (SERVICE_MAX_STRING_BYTES, --max-string-bytes; the thread's value is in
 * string_cap.ts). Stored strings (last_n, top_k, string min/max, categories...) are
 * pushed values or derived from them, so the cap bounds each stored string; a
 * derived concatenation longer than it evaluates to null. 1 MiB: a quarter of a push
 * body (HTTP_BODY_BYTES_MAX), so texts, prompts, stack traces and documents pass
 * while one value, even JSON-escaped, stays far below RESPONSE_BYTES_MAX
 * (docs/limits.md says what it costs in memory and when to lower it).
 */
export const STRING_VALUE_BYTES_MAX_DEFAULT = 1024 * 1024;
/** Largest --max-string-bytes accepted (16 MiB - 1): one value must fit one WAL record (asserted below). */
export const STRING_VALUE_BYTES_MAX_LIMIT = 2 ** 24 - 1;
/** JSON answer of one get or batch_get, bytes (response_too_large). */
export const RESPONSE_BYTES_MAX = 32 * 1024 * 1024;

/** Op bounds beyond spec 2.3 (aggregation_invalid_param unless noted). */
/** entropy / event_type_mix category caps. */
export const CATEGORIES_MAX = 4096;
/** histogram edge count cap. */
export const HISTOGRAM_EDGES_MAX = 1024;
/** burst_count: window / sub_window slots per entity. */
export const BURST_SLOTS_MAX = 1024;
/** bloom_member: largest expected-count parameter accepted. */
export const BLOOM_CAPACITY_MAX = 10_000_000;
/** bloom_member: largest filter, 2^26 bits = 8 MiB per entity: beyond that a per-entity filter is a mistake. */
export const BLOOM_BITS_MAX = 1 << 26;
/**
 * bloom_member: smallest fpr (invalid_bloom_fpr). Probes per insert grow with
 * -log2(fpr); 1e-9 is 30 probes, below it the cost is CPU for no measurable gain.
 */
export const BLOOM_FPR_MIN = 1e-9;

/**
 * Longest accepted duration (spec 2.4 grammar: windows, cold_after, ...; ops/duration.ts): 100
 * years keeps every product with epoch ms far inside 2^53. Over it: aggregation_invalid_window
 * (or the code of the parameter that holds it).
 */
export const DURATION_MS_MAX = 100 * 365 * 86_400_000;
/**
 * Numeric window ops (ops/num_window.ts, shard/columns/ring_group.ts): raw events kept per ring
 * before bucketing starts (a power of two). An entity with at most this many events in its
 * window is answered exactly (docs/ops.md "Windows"); a full ring is 64 (t, x) pairs, 1 KiB.
 */
export const RING_ENTRIES_MAX = 64;
/**
 * Numeric window ops: buckets per window once the ring overflows, so the error bound is
 * window / 128 (the peer's is window / 64) at up to 129 bucket slots per entity and window.
 */
export const NUM_BUCKETS_PER_WINDOW = 128;
/**
 * Value window ops (ops/val_window.ts): raw values kept per state before bucketing
 * starts, as the numeric ops' ring (a power of two).
 */
export const VAL_RING_ENTRIES_MAX = RING_ENTRIES_MAX;
/** Buckets per window for the sketch ops: each bucket may hold a sketch, so fewer than
 * the numeric ops' 128 (worst case 65 sketches per hot entity). */
export const SKETCH_BUCKETS_PER_WINDOW = 64;
/** Buckets per window for string min/max (a string per bucket). */
export const STR_BUCKETS_PER_WINDOW = 128;
/** Buckets per window for the change-over-time summaries (trend, twa, inter_arrival_stats,
 * value_change_count) and the geo paths: a few numbers per bucket, so the numeric ops' 128. */
export const MOTION_BUCKETS_PER_WINDOW = 128;
/** Buckets per window for the point-list ops (up to n values per bucket) and the count
 * tables (a cell map per bucket): the sketch ops' 64, for the same reason. */
export const LIST_BUCKETS_PER_WINDOW = 64;
/** quantile: values kept exactly (2 KiB) before the DDSketch takes over (ops/sketch/quantile.ts), so small windows answer exactly. */
export const QUANTILE_EXACT_MAX_DEFAULT = 256;
/**
 * quantile: buckets of each sign's sketch store, at most (8 KiB of counts; at alpha 1 % a ratio
 * of ~7.8e8 between the largest and smallest magnitude). Past it the lowest buckets merge, so a
 * sketch's memory is bounded whatever the value range and high quantiles keep their accuracy.
 */
export const QUANTILE_STORE_BUCKETS_MAX_DEFAULT = 1024;

/** Op bounds of spec 2.3. */
export const TOP_K_K_MAX = 1024;
export const TOP_K_K_DEFAULT = 10;
/** first_n / last_n / lag / most_recent_n bound `n`. */
export const BUFFER_N_MAX = 1024;
/** reservoir_sample / distance_from_home sample caps. */
export const SAMPLES_MAX = BUFFER_N_MAX;

/** Batches handed to one shard's thread and not yet answered (front/channel.ts). */
export const SHARD_BATCHES_IN_FLIGHT_MAX = 4;
/**
 * Young generation of a shard thread (worker resourceLimits), MB. New entities are
 * long-lived state, so a shard's scavenges copy a lot: with V8's default young
 * generation they paused the thread 12-23 ms every ~200 ms while a 1M-entity key
 * space filled, which set push p99 (17-19 ms at half the max rate). 12 MB (4 MB
 * semi-spaces) gives 2-8 ms pauses and p99 8-10 ms at no measurable cost in
 * throughput; 3 MB gave 6-8 ms p99 but ~15% less throughput (bench/DECISIONS.md).
 */
export const SHARD_YOUNG_GENERATION_MB = 12;

/**
 * Push contexts (front/push.ts PushCtx) the front keeps for reuse once their push is
 * answered: a context per push was young garbage on the thread every request passes
 * through. The pool holds at most this many (a burst of pipelined pushes does not
 * leave its peak behind).
 */
export const PUSH_CTX_POOL_MAX = 4096;

/**
 * A shard channel reuses its answered batches' request lists (front/channel.ts);
 * one that grew past this many requests (a burst) is let go instead of kept.
 */
export const SHARD_BATCH_SLOTS_KEPT_MAX = 4096;

/** First capacity of a shard channel's PUSH batch buffer on the front (wal/push_record.ts PushFrameWriter; it doubles as a batch needs). */
export const PUSH_BATCH_BYTES_INITIAL = 16 * 1024;
/**
 * A channel's batch buffer is kept between batches up to this size; a larger one
 * (one huge batch) is let go. The shard gets a copy of each batch's frames, not
 * this buffer (bench/DECISIONS.md "Hand-off between the front and the shards").
 */
export const PUSH_BATCH_BYTES_KEPT_MAX = 4 * 1024 * 1024;

/** Shards: hard cap on --shards (a push's target shards travel as a 31-bit mask). */
export const SHARDS_MAX = 31;

/**
 * Default of --shutdown-timeout: graceful shutdown (drain, final snapshot, close threads) must finish within this;
 * past it the process logs server.stop_deadline and exits 1 (the WAL already holds
 * every acknowledged push, so recovery replays what the snapshot missed). Below
 * systemd's default TimeoutStopSec (90 s) and Kubernetes' grace period (30 s) plus
 * a margin, so our own log line says why instead of a bare SIGKILL.
 */
export const SHUTDOWN_DEADLINE_MS = 25_000;
/** Recovery progress lines (shard.recovery_progress) at least this often. */
export const RECOVERY_PROGRESS_INTERVAL_MS = 1_000;
/** WAL records replayed between clock reads of the progress check (a clock read per record costs more than the replay of small ones). */
export const RECOVERY_PROGRESS_RECORDS_STRIDE = 1_024;
/** After a shard's WAL append fails, /ready says wal_unavailable this long unless a later append succeeds (lifecycle.ts). */
export const WAL_UNAVAILABLE_READY_HOLD_MS = 5_000;
/**
 * Server time (clock/server_clock.ts, docs/time.md): the front compares it with the
 * wall clock this often, so a wall clock stepped forward is followed within a second.
 */
export const CLOCK_CHECK_INTERVAL_MS = 1_000;
/**
 * A wall clock that moved this far against the monotonic clock between two checks has
 * jumped: one server.clock_jump warn line and streamfeat_clock_jumps_total. Below it
 * (NTP's small step corrections) a forward move is followed quietly and a backward
 * one absorbed quietly.
 */
export const CLOCK_JUMP_THRESHOLD_MS = 1_000;
/** Test hook (SERVICE_FAULT_CLOCK_FILE): how often the front re-reads the clock shift, so a test's step lands within a check. */
export const CLOCK_FAULT_FILE_POLL_MS = 100;
/** Test hook (SERVICE_FAULT_WAL_FILE): how often a shard reads the fault file, so a test's fault is armed within a batch or two. */
export const WAL_FAULT_FILE_POLL_MS = 20;
/**
 * A data dir on a filesystem with less than this free (for unprivileged users, as
 * `df` counts it) is refused at start with a one-line "full" message: the first
 * WAL batch, snapshot or registry write would fail, so every push would get
 * wal_unavailable. Deliberately small (a nearly full disk still starts, so its
 * data can be read and snapshotted); it only catches a disk that is full.
 */
export const DATA_DIR_FREE_BYTES_MIN = 1024 * 1024;
/**
 * Floor of --wal-segment-bytes. The writer needs room for more than a frame header
 * (it asserts so, which at startup was a stack trace instead of a one-line setting
 * error); below a few hundred bytes every record rolls its own segment file, which
 * no deployment wants. 512 still lets tests force frequent rolls.
 */
export const WAL_SEGMENT_BYTES_MIN = 512;
/**
 * Default of --wal-segment-bytes (SERVICE_WAL_SEGMENT_BYTES): a WAL segment rolls to the next
 * past this. A maximal record (WAL_RECORD_BYTES_MAX) fits an empty one with room, and a roll
 * (a new file) every 64 MiB is rare at any push rate.
 */
export const WAL_SEGMENT_BYTES_MAX_DEFAULT = 64 * 1024 * 1024;
/**
 * Default of --wal-sync-interval-ms (SERVICE_WAL_SYNC_INTERVAL_MS): in batch mode fdatasync runs
 * this often when anything is unsynced (shard_main.ts), so a power loss costs at most the last
 * few ms of acknowledged pushes while a sync stays off every push's path.
 */
export const WAL_SYNC_INTERVAL_MS_DEFAULT = 5;
/**
 * Default of --wal-sync-timeout-ms (SERVICE_WAL_SYNC_TIMEOUT_MS): in always mode a push whose
 * fdatasync takes longer answers wal_sync_timeout (504). A healthy disk syncs in milliseconds;
 * a second means it is stalled, and the client learns so instead of waiting on.
 */
export const WAL_SYNC_TIMEOUT_MS_DEFAULT = 1_000;
/**
 * Largest WAL frame `length` field accepted (type + payload): 16 MiB - 1, the largest value
 * whose top byte is 0x00. JSON text never holds a raw NUL, so a row can never smuggle a
 * valid-looking frame header into the log; this is what makes resynchronisation after
 * corruption safe (wal/recover.ts). A derived row can be larger than the pushed body
 * (with_columns copies values): we allow three bodies of headroom.
 */
export const WAL_RECORD_BYTES_MAX = 2 ** 24 - 1;
/** First capacity of a RecordEncoder staging buffer (wal/record.ts): a batch of small pushes fits; it doubles on demand. */
export const WAL_STAGING_BYTES_INITIAL = 64 * 1024;
/** Verified snapshots writeSnapshot keeps by default (wal/snapshot.ts): the newest, and one to fall back on if it turns out unreadable. */
export const SNAPSHOT_KEEP_DEFAULT = 2;

assert(WAL_SEGMENT_BYTES_MAX_DEFAULT >= WAL_SEGMENT_BYTES_MIN);
assert(WAL_RECORD_BYTES_MAX < 2 ** 24, 'a valid length must have a zero top byte (see WAL_RECORD_BYTES_MAX)');
assert(WAL_RECORD_BYTES_MAX >= 3 * HTTP_BODY_BYTES_MAX, 'a derived row of a maximal push must fit one record');
assert(WAL_RECORD_BYTES_MAX >= 3 * TCP_FRAME_BYTES_MAX_DEFAULT, 'a derived row of a maximal frame must fit one record');
assert(WAL_SEGMENT_BYTES_MAX_DEFAULT >= WAL_RECORD_BYTES_MAX, 'a maximal record fits an empty default segment');
assert(SNAPSHOT_KEEP_DEFAULT >= 1);

/**
 * Dedupe entries held by the front (all events). When full, a push that needs a
 * new entry gets dedupe_capacity_exceeded (503, retryable once entries expire):
 * never silently undeduplicated.
 */
export const DEDUPE_ENTRIES_MAX = 10_000_000;
/** Expired dedupe entries are swept this often (server.ts); a full store also sweeps once more before it refuses. */
export const DEDUPE_SWEEP_INTERVAL_MS = 1_000;

// ---- cluster mode (src/cluster/, docs/cluster.md) ------------------------------------

/** --partitions default: fixed per cluster (stored in its metadata bucket). */
export const CLUSTER_PARTITIONS_DEFAULT = 16;
/** --partitions cap: each owned partition costs one JetStream consumer per node. */
export const CLUSTER_PARTITIONS_MAX = 1024;
/** How often a node refreshes its membership entry. */
export const CLUSTER_HEARTBEAT_MS = 1_000;
/**
 * Age past which a membership entry expires (the nodes bucket's max_age): a node that
 * stops heartbeating loses its partitions after at most this plus one poll
 * (CLUSTER_HEARTBEAT_MS), well inside the 10 s promised by docs/cluster.md.
 */
export const CLUSTER_NODE_TTL_MS = 4_000;
/** JetStream's message-id dedupe window on the event stream (cross-node exact dedupe horizon). */
export const CLUSTER_DEDUPE_WINDOW_MS = 60 * 60 * 1000;
/** A push whose JetStream publish is not acked within this answers wal_unavailable. */
export const CLUSTER_PUBLISH_TIMEOUT_MS = 2_000;
/** A forwarded read (to the owner of its partition) that takes longer answers partition_unavailable. */
export const CLUSTER_FORWARD_TIMEOUT_MS = 2_000;
/** Keep-alive sockets per peer for forwarded reads. */
export const CLUSTER_FORWARD_SOCKETS_MAX = 16;
/** Body cap of the internal peer listener (a forwarded batch_get). */
export const CLUSTER_PEER_BODY_BYTES_MAX = 16 * 1024 * 1024;
/** Stream messages handed to shards and not yet applied, per partition consumer, before it pauses. */
export const CLUSTER_FEED_IN_FLIGHT_MAX = 8_192;
/** Compare-and-set attempts of a registry change racing other nodes before it gives up (wal_unavailable). */
export const CLUSTER_REGISTRY_CAS_ATTEMPTS = 32;
/** A test-mode reset waits this long for every live node to clear its state. */
export const CLUSTER_RESET_TIMEOUT_MS = 10_000;
/** Delay before a partition consumer that failed (NATS restart, deleted consumer) is recreated. */
export const CLUSTER_CONSUMER_RETRY_MS = 500;
/** Re-publishes of a dedupe value whose JetStream match is older than its event's window. */
export const CLUSTER_DEDUPE_CHAIN_MAX = 8;
/**
 * Default cadence of partition checkpoints (--checkpoint-interval; docs/cluster.md
 * "Checkpoints"): a takeover replays at most about this much of a partition's log.
 */
export const CLUSTER_CHECKPOINT_INTERVAL_MS_DEFAULT = 30_000;
/** Object store chunk size for checkpoints (NATS messages stay well under the 1 MiB default max_payload). */
export const CLUSTER_CHECKPOINT_CHUNK_BYTES = 512 * 1024;
/** A checkpoint put or get that does not finish in this long is abandoned (the next interval retries; a restore falls back to a full replay). */
export const CLUSTER_CHECKPOINT_TIMEOUT_MS = 30_000;

assert(CLUSTER_NODE_TTL_MS + CLUSTER_HEARTBEAT_MS < 10_000, 'a silent node loses its partitions within 10 s');
assert(TCP_FRAME_BYTES_MAX_DEFAULT >= HTTP_BODY_BYTES_MAX, 'a push that fits HTTP must fit a frame');
assert(BATCH_GET_ENTRIES_MAX_DEFAULT > 0);
assert(HTTP_TIMEOUT_SWEEP_MS < HTTP_HEADER_TIMEOUT_MS && HTTP_HEADER_TIMEOUT_MS <= HTTP_BODY_TIMEOUT_MS);
assert(TCP_UNAUTHENTICATED_SHARE > 0 && TCP_UNAUTHENTICATED_SHARE < 1, 'authenticated connections keep a share of the TCP cap');
assert(FD_RESERVE_MIN >= 2 * REFUSED_LINGERING_MAX + 32, 'the descriptor reserve covers refused sockets lingering on both node:net listeners');
assert(FD_RESERVE_FRACTION > 0 && FD_RESERVE_FRACTION < 1);
assert(TOP_K_K_DEFAULT <= TOP_K_K_MAX);
assert(REGISTER_NODES_MAX <= REGISTRY_NODES_MAX);
assert(REGISTRY_NODE_BYTES_MAX <= REGISTRY_BYTES_MAX);
assert(TABLE_FEATURES_MAX <= REGISTRY_FEATURES_MAX);
assert(KEY_BYTES_MAX <= STRING_VALUE_BYTES_MAX_DEFAULT, 'a one-field key is a pushed value');
assert(RESPONSE_BYTES_MAX >= 6 * STRING_VALUE_BYTES_MAX_DEFAULT, 'one stored value fits an answer, each byte JSON-escaped (\\u00XX)');
assert(STRING_VALUE_BYTES_MAX_LIMIT <= WAL_RECORD_BYTES_MAX, 'one value fits one WAL record');
assert(BLOOM_FPR_MIN > 0 && BLOOM_FPR_MIN < 1);

/** Admin: how often the front asks every shard and the coordinator for their figures (admin/stats.ts). */
export const STATS_INTERVAL_MS = 1_000;
/** Admin: the dashboard's latency percentiles and rates cover this many stats intervals. */
export const STATS_WINDOW_INTERVALS = 10;
/** Admin: resolution of each thread's event-loop delay monitor (perf_hooks.monitorEventLoopDelay), ms. */
export const EVENT_LOOP_DELAY_RESOLUTION_MS = 10;
/** Admin: sampled entity sizes a table's state-bytes estimate averages (the last ones; shard/shard_stats.ts). */
export const TABLE_MEMORY_SAMPLE_ENTITIES = 16;
/** Admin: entities serialized per table and stats interval for that estimate (all TABLE_MEMORY_SAMPLE_ENTITIES on a table's first). */
export const TABLE_MEMORY_SAMPLES_PER_CALL = 2;
/** Admin: /api/inspect waits this long for the owning shard before answering 503. */
export const ADMIN_INSPECT_TIMEOUT_MS = 5_000;
/** Admin: per-second rates kept for the dashboard's throughput chart (two minutes). */
export const STATS_HISTORY_INTERVALS = 120;

/** Cold sweep (shard/cold/cold.ts): entities examined per sweep tick, per shard (at most; COLD_SWEEP_SLICE_MS bounds the time). */
export const COLD_SWEEP_ENTITIES_PER_TICK = 100_000;
/**
 * Cold sweep cadence. Often and short: 150k new keys every 6 s (the churn bench) need
 * 25k entities a second out of memory; a tick examines ~20k entities per ms and
 * drops ~5k or freezes a few hundred per ms, so 5 ms slices every 100 ms keep up
 * with dropping and bound the stall a batch can see behind a sweep.
 */
export const COLD_SWEEP_INTERVAL_MS = 100;
/** Cold sweep: time budget of one tick, ms (checked every COLD_SWEEP_CLOCK_STRIDE entities). */
export const COLD_SWEEP_SLICE_MS = 5;
/** Cold sweep: entities examined between two clock reads. */
export const COLD_SWEEP_CLOCK_STRIDE = 256;
/** Cold store (shard/cold/cold_files.ts): bytes per segment file before the next one starts. */
export const COLD_SEGMENT_BYTES = 8 * 1024 * 1024;
/** Cold store: queued frozen entities are written once this many bytes wait (and at the end of every sweep). */
export const COLD_FLUSH_BYTES = 1024 * 1024;
/** Cold store: bytes read per chunk when scanning segments (snapshots, compaction). */
export const COLD_READ_CHUNK_BYTES = 1024 * 1024;
/** Cold store: a closed segment with less than this fraction of live bytes is compacted (its live records move on). */
export const COLD_COMPACT_LIVE_RATIO = 0.5;
/** Cold store: segment bytes compaction reads per sweep tick (bounds the stall it adds between batches). */
export const COLD_COMPACT_BYTES_PER_TICK = 2 * 1024 * 1024;
/** Cold store: a failing segment write is logged (shard.cold_store_write_failed) at most this often, since every flush retries it. */
export const COLD_WRITE_ERROR_LOG_INTERVAL_MS = 1_000;
/** The front logs a full dedupe store (front.dedupe_full) at most once per this interval; every refusal is counted. */
export const DEDUPE_FULL_LOG_INTERVAL_MS = 1_000;
/**
 * A WAL error that repeats per batch or per sync (wal.write_failed, wal.sync_failed:
 * a full disk, EMFILE) is logged in full once, then as one summary line with the
 * count per this interval (log_throttle.ts): 30,959 lines in 48 s under EMFILE
 * before, at most one per shard and kind per 10 s now.
 */
export const WAL_ERROR_LOG_INTERVAL_MS = 10_000;
/**
 * Periodic snapshots (shard/persist/snapshot_job.ts): encoding work per event-loop turn of
 * a job, between batches. With the chunk being encoded when it runs out (~0.5 ms
 * for 1,024 entities) this is about the longest a batch waits behind a snapshot.
 */
export const SNAPSHOT_SLICE_MS = 4;
/**
 * Period of the timer that measures a shard's event-loop delay while a periodic
 * snapshot runs (shard.snapshot loopDelayMaxMs / loopDelayP99Ms, which include it).
 */
export const SNAPSHOT_LOOP_DELAY_RESOLUTION_MS = 1;
/**
 * Hot entities per snapshot chunk (shard/persist/slab_chunk.ts), at most and at least: a
 * job sizes each chunk to the time left in its slice from the cost per entity it
 * measured on the chunk before (~0.25 us warm; ~10x more on a thread's first
 * snapshot, before the JIT has optimized the encoder), so a slice overshoots
 * SNAPSHOT_SLICE_MS by about one small chunk. Larger chunks cost less per entity
 * to write and restore.
 */
export const SNAPSHOT_CHUNK_ENTITIES_MAX = 1024;
export const SNAPSHOT_CHUNK_ENTITIES_MIN = 64;
/**
 * Dedupe entries per chunk of a periodic snapshot (snapshot_job.ts stepDedupe): a
 * shard's entries are written across slices, not as one end chunk (one
 * v8.serialize of 1M entries would stall the shard for a second).
 */
export const SNAPSHOT_DEDUPE_CHUNK_ENTRIES = 512;
/**
 * Snapshot files are written as a stream of lz4 blocks of this many raw body bytes
 * (wal/snapshot_stream.ts, file version 2): each full block is compressed on the
 * shard thread inside the job's slice and written on libuv's threadpool while the
 * job encodes the next, so no whole body is ever built in memory. lz4 and the
 * crc32c of a 256 KiB block take ~0.25 ms (a 1 MiB block ~1 ms; a whole 33 MB
 * body's crc alone took ~30 ms).
 */
export const SNAPSHOT_BLOCK_BYTES = 256 * 1024;
/**
 * Compressed snapshot blocks whose write may be in flight at once (~70 KB each
 * for slab chunks); a job that gets this far ahead of the disk waits for a write
 * to land.
 */
export const SNAPSHOT_BLOCKS_IN_FLIGHT = 8;
/**
 * Snapshot blocks a thread keeps for reuse by later snapshots (wal/snapshot_stream.ts): a
 * stream holds one while it fills it, and 2 keep at most 512 KiB per thread; more at once
 * (never in practice) are plain allocations, dropped when released.
 */
export const SNAPSHOT_BLOCKS_KEPT = 2;
/** Cold entities per snapshot chunk (snapshot_job.ts; one v8.serialize call): small enough that a chunk stays within a few ms. */
export const SNAPSHOT_COLD_CHUNK_ENTITIES = 256;
/** Cold index (shard/cold/key_index.ts): initial slots (a power of two). */
export const COLD_INDEX_SLOTS_MIN = 1024;
/** Cold index: slots used at most before it doubles. */
export const COLD_INDEX_LOAD_MAX = 0.75;
/**
 * Windows one shared ring group spans (shard/columns/ring_group.ts): a push walks each
 * window's skip count, and a ring is kept for its longest window, so a table
 * with more distinct windows gets groups of this many consecutive windows each.
 * A skip count is a byte per slot and window.
 */
export const RING_GROUP_WINDOWS_MAX = 8;
/** Ring group: first allocation of bucket records (busy slots); doubles from there, so a table with few busy entities stays small. */
export const RING_GROUP_RECORDS_MIN = 16;
/** Ring pools (shard/columns/ring_pool.ts): first allocation of a size class, in blocks; doubles from there, so an unused class costs little. */
export const RING_POOL_BLOCKS_MIN = 16;
/**
 * Cells of a dropped table or feature are released in slices between batches (shard/columns/dropped_cells.ts);
 * a slice reads the clock once per this many slots + 1 (a mask): a slot costs well under a us, so 256
 * slots overrun the deadline by little and the clock read stays off the per-slot cost.
 */
export const DROPPED_CELLS_CLOCK_MASK = 255;

/**
 * Lifetime sketch ops (n_unique, quantile, top_k, entropy without a window;
 * shard/columns/exact_column.ts): an entity keeps up to this many accepted values as cells
 * of a slab row (8 B each, one row of 1 + this many doubles per entity), and the
 * answer is the op's own state rebuilt from them. The next value turns the entity's
 * state into the op's object (~400-800 B). 8 covers the few events most entities of
 * a large table see (bench/memory.ts --lifetime) for 72 B a feature.
 */
export const LIFE_EXACT_VALUES_MAX = 8;

/** Entity index (shard/state/entity_index.ts): slots and key-table entries of a new table (a power of two); both double from there. */
export const ENTITY_SLOTS_MIN = 64;
/** Entity index: key-table entries used at most before the table doubles (linear probing: short runs at half full). */
export const ENTITY_INDEX_LOAD_MAX = 0.5;
/**
 * Entity index and intern tables (shard/state/probe_table.ts): a table of at least this many entries resizes
 * incrementally; a smaller one is rehashed at once (under 0.2 ms).
 */
export const PROBE_TABLE_MOVE_MIN_ENTRIES = 4096;
/** Entries of the old table an add or removal moves along while a resize is under way (it ends long before the new table fills). */
export const PROBE_TABLE_MOVE_STEP = 64;
/** Entity index: first size of a table's key arena, bytes; it doubles when full. */
export const ENTITY_KEY_ARENA_BYTES_MIN = 1024;
/** Entity index: the key arena is compacted once the bytes of released keys pass this fraction of it. */
export const ENTITY_KEY_ARENA_DEAD_MAX = 0.5;
/**
 * Shard arrays that double (columns, ring pools; util/unaccounted.ts grown) move, once they reach
 * this many bytes, onto a SharedArrayBuffer that reserves GROWABLE_RESERVE_BYTES of address space,
 * and from then on grow in place: no copy, so a doubling at 1M entities is not a 100 ms stall.
 * Smaller ones are copied (under 0.3 ms) and reserve nothing.
 */
export const GROW_IN_PLACE_BYTES_MIN = 1 << 20;
/** Address space (not memory) a growable array reserves: V8's largest buffer, 4 GiB. Pages are committed as it grows. */
export const GROWABLE_RESERVE_BYTES = 2 ** 32;
/** --memory-limit: how often the shard measures its memory and evicts when over. */
export const MEMORY_CHECK_INTERVAL_MS = 1_000;
/** --memory-limit: hot entities examined per table and tick to pick the least recently pushed to evict. */
export const MEMORY_EVICT_SCAN_ENTITIES = 20_000;
/** --memory-limit: at most this fraction of the examined entities is evicted per tick (the measured heap lags evictions until the next GC). */
export const MEMORY_EVICT_FRACTION_MAX = 0.5;
/** --memory-limit: eviction aims this far under the limit, so it does not run again at once. */
export const MEMORY_EVICT_TARGET_RATIO = 0.9;

assert((COLD_INDEX_SLOTS_MIN & (COLD_INDEX_SLOTS_MIN - 1)) === 0, 'cold index slots are a power of two');
assert((DROPPED_CELLS_CLOCK_MASK & (DROPPED_CELLS_CLOCK_MASK + 1)) === 0, 'dropped cells: the clock mask is a power of two minus one');
assert((RING_ENTRIES_MAX & (RING_ENTRIES_MAX - 1)) === 0, 'a ring\'s entries are a power of two');
assert((ENTITY_SLOTS_MIN & (ENTITY_SLOTS_MIN - 1)) === 0, 'entity slots are a power of two');
assert(KEY_BYTES_MAX * 2 < 65_536, 'the entity index stores a key\'s byte length (UTF-16 at worst) in 16 bits');
assert(KEY_BYTES_MAX < 65_536, 'a cold record stores the key length in 16 bits');

/** Intern tables (shard/state/intern.ts): initial slots per column name of a shard (a power of two); also the floor it shrinks to. */
export const INTERN_SLOTS_MIN = 16;
/** Intern tables: values held at most per slot before the table doubles (linear probing stays short below 1/2). */
export const INTERN_LOAD_MAX = 0.5;
/**
 * Intern tables: strings made lately from PUSH record bytes, remembered per thread
 * (a power of two, direct-mapped by hash) so that a value new to several tables of
 * one record (a user id in two tables) is one string, not one per table.
 */
export const INTERN_RECENT_STRINGS = 1024;
/**
 * bloom_member filters of at most this many 32-bit words (2,048 = 8 KiB: capacity
 * ~6,800 at fpr 1 %) are kept in pooled blocks per table (shard/columns/bloom_column.ts);
 * larger ones stay one object per entity (a pool grows by doubling its blocks).
 */
export const BLOOM_POOLED_WORDS_MAX = 2048;
assert((INTERN_SLOTS_MIN & (INTERN_SLOTS_MIN - 1)) === 0, 'intern table slots are a power of two');
assert((INTERN_RECENT_STRINGS & (INTERN_RECENT_STRINGS - 1)) === 0, 'recent intern strings: a power of two');

/** Debug timeline (src/timeline.ts, STREAMFEAT_DEBUG_TIMELINE): events a thread buffers before it appends them to its file. */
export const TIMELINE_EVENTS_BUFFERED = 16_384;
/** Debug timeline: a thread appends its buffered events this often, ms. */
export const TIMELINE_FLUSH_MS = 250;
/** Debug timeline: period of the timer that detects a late event loop, ms. */
export const TIMELINE_LAG_TICK_MS = 2;
/** Debug timeline: lateness of that timer recorded as a lag, ms. */
export const TIMELINE_LAG_MIN_MS = 2;
