/**
 * Proof of lost data, as a decision table (the house style of recover.ts). Boot
 * (shard/store.ts, server.ts) and `streamfeat wal-check` (wal_check.ts) both run
 * the facts recovery gathered through these functions, so what the check reports
 * is exactly what boot refuses, in the same words.
 *
 * Recovery never throws on bad bytes (recover.ts); it reports what it found. This
 * file decides which of those findings prove that acknowledged data is gone (boot
 * refuses unless --accept-data-loss) and which are the normal traces of a crash
 * (a torn tail: repaired, logged). Evidence, per shard and for the registry log:
 *
 *   label name              evidence                                                    verdict
 *   A     torn_tail         the tail segment ends in a partial record                   repaired (the crash case)
 *   B     chain_gap         a segment's SEGMENT frame follows lsn P, the WAL read        loss of (max(before, S), P]
 *                           before it ends at `before` < P, and no snapshot (S) reaches P
 *   C     start_gap         the first segment read follows lsn P > S (or, written        loss of (S, P]
 *                           before SEGMENT frames, starts at lsn F > 1 with no RESET
 *                           first: P = F - 1): the WAL starts after what the snapshot
 *                           used (S, 0 without one) holds
 *   D     corrupt_data      unreadable bytes between valid records (corrupt_record,      loss of the lsns between
 *                           corrupt_region, malformed_payload) above S
 *   E     corrupt_covered   the same, but every lsn it can hold is <= S, or none can      covered by the snapshot, or
 *                           (the valid records on both sides are consecutive: a          no record lost
 *                           damaged SEGMENT frame)
 *   F     closed_tail       a bad tail in a closed segment that the next segment's        tolerated (logged as an error):
 *                           SEGMENT frame does not prove lost (a failed rollback)        row B proves it when it is
 *   G     snapshot_only     no WAL record at all, and an unreadable snapshot at lsn      loss of (S, L]
 *                           L > S proves there was history
 *   H     registry_versions records after S, or the snapshot used, name registry          loss of those records
 *                           versions the registry log lacks
 *   I     pre_reset         records under versions below a registry log that starts      tolerated: a reset that did
 *                           with an empty registry (a reset), with no RESET before them  not reach this shard
 *   J     registry_damaged  the registry log is damaged before its end                   loss (entries are skipped)
 *   K     registry_tail     the registry log ends in a torn entry no record names        repaired: a register that was
 *                                                                                        never acknowledged
 *
 * Not provable, so not refused (docs/durability.md "When boot refuses"): a tail
 * segment cut at a record boundary (indistinguishable from a crash before the
 * write), a middle segment of an older data dir (no SEGMENT frames) deleted or cut,
 * a shard whose every file is gone.
 */
import { strict as assert } from 'node:assert';
import { RECORD_TYPE_EVENT, RECORD_TYPE_PUSH, RECORD_TYPE_RESET } from './constants';
import type { RecoveryLogEntry, SegmentFact } from './recover';

export const EV_TORN_TAIL = 0;
export const EV_CHAIN_GAP = 1;
export const EV_START_GAP = 2;
export const EV_CORRUPT_DATA = 3;
export const EV_CORRUPT_COVERED = 4;
export const EV_CLOSED_TAIL = 5;
export const EV_SNAPSHOT_ONLY = 6;
export const EV_REGISTRY_VERSIONS = 7;
export const EV_PRE_RESET = 8;
export const EV_REGISTRY_DAMAGED = 9;
export const EV_REGISTRY_TAIL = 10;

export type EvidenceVerdict = 'loss' | 'repaired' | 'covered' | 'tolerated';

export interface EvidenceCase {
  id: number;
  label: string;
  name: string;
  verdict: EvidenceVerdict;
}

function row(id: number, label: string, name: string, verdict: EvidenceVerdict): EvidenceCase {
  return { id, label, name, verdict };
}

/** The decision table (see the header). Indexed by id. */
export const EVIDENCE_CASES: readonly EvidenceCase[] = [
  row(EV_TORN_TAIL, 'A', 'torn_tail', 'repaired'),
  row(EV_CHAIN_GAP, 'B', 'chain_gap', 'loss'),
  row(EV_START_GAP, 'C', 'start_gap', 'loss'),
  row(EV_CORRUPT_DATA, 'D', 'corrupt_data', 'loss'),
  row(EV_CORRUPT_COVERED, 'E', 'corrupt_covered', 'covered'),
  row(EV_CLOSED_TAIL, 'F', 'closed_tail', 'tolerated'),
  row(EV_SNAPSHOT_ONLY, 'G', 'snapshot_only', 'loss'),
  row(EV_REGISTRY_VERSIONS, 'H', 'registry_versions', 'loss'),
  row(EV_PRE_RESET, 'I', 'pre_reset', 'tolerated'),
  row(EV_REGISTRY_DAMAGED, 'J', 'registry_damaged', 'loss'),
  row(EV_REGISTRY_TAIL, 'K', 'registry_tail', 'repaired'),
];
EVIDENCE_CASES.forEach((c, i) => assert.equal(c.id, i, 'EVIDENCE_CASES must be indexed by id'));

/** One finding about one file, classified by a row of EVIDENCE_CASES. Plain data (it crosses threads). */
export interface Evidence {
  label: string;
  kind: string;
  /** True when the row's verdict is `loss`: boot refuses without --accept-data-loss. */
  loss: boolean;
  /** The file it is about, relative to the data dir (`shard-0/wal/<name>`, `registry/registry.log`). */
  file: string;
  /** Lost lsns, inclusive; -1 where a bound is unknown. */
  lsnFrom: number;
  lsnTo: number;
  /** Registry versions concerned (row H). */
  versions: number[];
  /** Lost pushes and other records, -1 when only an lsn range is known. */
  pushes: number;
  records: number;
  /** The evidence in words. */
  why: string;
}

function evidence(id: number, file: string, why: string, more: Partial<Evidence> = {}): Evidence {
  const c = EVIDENCE_CASES[id];
  return { label: c.label, kind: c.name, loss: c.verdict === 'loss', file, lsnFrom: -1, lsnTo: -1, versions: [], pushes: -1, records: -1, why, ...more };
}

// ---------------------------------------------------------------------------
// Registry versions
// ---------------------------------------------------------------------------

/** What the registry log holds, as replay needs it. Plain data. */
export interface RegistryKnown {
  /** Versions of its entries, ascending. Version 0 (the empty registry) is known without an entry. */
  versions: number[];
  /** Oldest and newest version it holds; -1 and 0 when it holds none. */
  first: number;
  last: number;
  /** Its oldest entry is an empty registry: what a reset writes. Versions below it are from before that reset. */
  firstIsReset: boolean;
}

export function registryKnownOf(entries: ReadonlyArray<{ version: number; nodes: readonly unknown[] }>): RegistryKnown {
  const versions = entries.map((e) => e.version).sort((a, b) => a - b);
  if (versions.length === 0) return { versions, first: -1, last: 0, firstIsReset: false };
  const oldest = entries.reduce((a, b) => (b.version < a.version ? b : a));
  return { versions, first: versions[0], last: versions[versions.length - 1], firstIsReset: oldest.nodes.length === 0 };
}

/** The entries of a registry log that are registry states (every entry written is one; anything else is ignored). */
export function registryStatesOf<T extends { version: number; nodes: unknown[] }>(entries: unknown[]): T[] {
  return (entries as T[]).filter((e) => typeof e === 'object' && e !== null && Array.isArray(e.nodes) && Number.isInteger(e.version));
}

/** Records (and the snapshot) under one registry version the log lacks. */
export interface VersionLoss {
  version: number;
  pushes: number;
  /** INSTALL and RESET records. */
  others: number;
  firstLsn: number;
  lastLsn: number;
  /** The snapshot recovery started from, when it was taken under this version. */
  snapshot: string | null;
}

export interface VersionSummary {
  /** Highest registry version any record after the snapshot, or the snapshot, names (0: none). */
  maxSeen: number;
  missing: VersionLoss[];
  /** Records under versions from before a reset the shard never saw (row I); null when none. */
  preReset: { records: number; firstLsn: number; lastLsn: number } | null;
}

const V_KNOWN = 0;
const V_MISSING = 1;
const V_PRE_RESET = 2;

/**
 * Counts the registry versions the records of one shard name, as recovery hands
 * them over. admit() is called once per replayed record: the verdict of the
 * previous version is kept, so a run of records under one version costs one
 * comparison each.
 */
export class VersionTally {
  readonly #known: ReadonlySet<number>;
  readonly #reg: RegistryKnown;
  #maxSeen = 0;
  readonly #missing = new Map<number, VersionLoss>();
  #preReset: { records: number; firstLsn: number; lastLsn: number } | null = null;
  #lastVersion = -1;
  #lastVerdict = V_KNOWN;

  constructor(reg: RegistryKnown) {
    this.#reg = reg;
    this.#known = new Set(reg.versions);
  }

  #classify(version: number): number {
    if (version === this.#lastVersion) return this.#lastVerdict;
    let v = V_KNOWN;
    if (version !== 0 && !this.#known.has(version)) v = version < this.#reg.first && this.#reg.firstIsReset ? V_PRE_RESET : V_MISSING;
    this.#lastVersion = version;
    this.#lastVerdict = v;
    return v;
  }

  #lossOf(version: number): VersionLoss {
    let m = this.#missing.get(version);
    if (m === undefined) {
      m = { version, pushes: 0, others: 0, firstLsn: -1, lastLsn: -1, snapshot: null };
      this.#missing.set(version, m);
    }
    return m;
  }

  /**
   * A record recovery hands over (lsn above the snapshot). True when it can be
   * replayed: its version is in the registry log, or it is a RESET (which needs no
   * definitions). Records under other versions are counted and not applied.
   */
  admit(type: number, lsn: number, version: number): boolean {
    const v = this.#classify(version);
    if (v === V_KNOWN) {
      if (version > this.#maxSeen) this.#maxSeen = version;
      return true;
    }
    if (v === V_PRE_RESET) {
      const p = (this.#preReset ??= { records: 0, firstLsn: lsn, lastLsn: lsn });
      p.records++;
      p.lastLsn = lsn;
      return type === RECORD_TYPE_RESET;
    }
    if (version > this.#maxSeen) this.#maxSeen = version;
    const m = this.#lossOf(version);
    if (type === RECORD_TYPE_PUSH || type === RECORD_TYPE_EVENT) m.pushes++;
    else m.others++;
    if (m.firstLsn < 0) m.firstLsn = lsn;
    m.lastLsn = lsn;
    return type === RECORD_TYPE_RESET;
  }

  /** The snapshot recovery starts from. True when its version is known (else its state restores under the current registry). */
  snapshot(name: string, version: number): boolean {
    const v = this.#classify(version);
    if (v === V_PRE_RESET) return false;
    if (version > this.#maxSeen) this.#maxSeen = version;
    if (v === V_KNOWN) return true;
    this.#lossOf(version).snapshot = name;
    return false;
  }

  summary(): VersionSummary {
    const missing = [...this.#missing.values()].sort((a, b) => a.version - b.version);
    return { maxSeen: this.#maxSeen, missing, preReset: this.#preReset === null ? null : { ...this.#preReset } };
  }
}

// ---------------------------------------------------------------------------
// Shard evidence
// ---------------------------------------------------------------------------

/** What recovery of one shard found: the input of shardEvidence. Plain data. */
export interface ShardFacts {
  /** `shard-<i>`: file names are given relative to the data dir under it. */
  shard: string;
  /** Start lsn of the snapshot recovery used (every record <= it is in the snapshot); 0 without one. */
  afterLsn: number;
  snapshot: { name: string; lsn: number; registryVersion: number } | null;
  /** Snapshots that failed verification (newest first). */
  snapshotsSkipped: Array<{ name: string; lsn: number; reason: string }>;
  chain: SegmentFact[];
  /** RecoveryReport.log. */
  findings: RecoveryLogEntry[];
}

function range(from: number, to: number): string {
  return from === to ? `lsn ${from}` : to < 0 ? `lsns from ${from}` : `lsns ${from}-${to}`;
}

function skippedText(f: ShardFacts): string {
  if (f.snapshotsSkipped.length === 0) return f.snapshot === null ? 'there is no snapshot' : `the snapshot used (${f.snapshot.name}) starts at lsn ${f.afterLsn}`;
  const bad = f.snapshotsSkipped.map((s) => `${s.name}: ${s.reason}`).join(', ');
  return f.snapshot === null ? `no snapshot is readable (${bad})` : `the snapshot used (${f.snapshot.name}) starts at lsn ${f.afterLsn}; unreadable: ${bad}`;
}

/** Rows B and C: the SEGMENT frames (and, for older segments, the first record) against what came before. */
function chainEvidence(f: ShardFacts, out: Evidence[]): void {
  const s = Math.max(0, f.afterLsn);
  f.chain.forEach((seg, i) => {
    const file = `${f.shard}/wal/${seg.name}`;
    let follows = seg.prevLsn;
    let legacy = false;
    if (follows === null && i === 0 && seg.index === 0 && seg.firstLsn > 1 && seg.firstType !== RECORD_TYPE_RESET) {
      // A segment without a SEGMENT frame: the history of a shard starts at lsn 1 or at a reset.
      follows = seg.firstLsn - 1;
      legacy = true;
    }
    if (follows === null) return;
    const reached = Math.max(seg.lsnBefore, s);
    if (follows <= reached) return;
    const lost = `${range(reached + 1, follows)} missing`;
    if (i === 0) {
      const start = legacy ? `the WAL starts at lsn ${seg.firstLsn} (not at lsn 1 or a reset)` : `the WAL starts after lsn ${follows}`;
      out.push(evidence(EV_START_GAP, file, `${lost}: ${start} and ${skippedText(f)}`, { lsnFrom: reached + 1, lsnTo: follows }));
    } else {
      out.push(evidence(EV_CHAIN_GAP, file, `${lost} before this segment: it follows lsn ${follows}, the WAL before it ends at lsn ${seg.lsnBefore} (a segment deleted or cut short)`,
        { lsnFrom: reached + 1, lsnTo: follows }));
    }
  });
}

const CORRUPT_KINDS = new Set(['corrupt_record', 'corrupt_region', 'malformed_payload']);

/** Rows A, D, E, F: what the decision table of recover.ts reported. */
function findingEvidence(f: ShardFacts, out: Evidence[]): void {
  const s = Math.max(0, f.afterLsn);
  for (const e of f.findings) {
    const file = `${f.shard}/wal/${String(e.segment)}`;
    if (e.kind === 'torn_tail') {
      out.push(evidence(EV_TORN_TAIL, file, `torn tail: ${String(e.bytes)} bytes at offset ${String(e.offset)} (${e.action === 'truncated' ? 'cut off' : 'recovery cuts them off'}); an unfinished write, never acknowledged`));
    } else if (e.kind === 'closed_segment_tail') {
      out.push(evidence(EV_CLOSED_TAIL, file, `bad tail of a closed segment: ${String(e.bytes)} bytes at offset ${String(e.offset)} skipped; the next segment does not show records missing`));
    } else if (CORRUPT_KINDS.has(e.kind)) {
      const from = Number(e.lsnBefore) + 1;
      const after = typeof e.lsnAfter === 'number' && e.lsnAfter > 0 ? e.lsnAfter : -1;
      const to = after > 0 ? after - 1 : -1;
      const what = `${String(e.bytes)} unreadable bytes at offset ${String(e.offset)} (${e.kind})`;
      const lostFrom = Math.max(from, s + 1);
      if (to >= 0 && to <= s) out.push(evidence(EV_CORRUPT_COVERED, file, `${what}: every lsn they can hold is in the snapshot (lsn <= ${s})`));
      // The records on both sides are consecutive (a damaged SEGMENT frame): no record was in them.
      else if (to >= 0 && to < lostFrom) out.push(evidence(EV_CORRUPT_COVERED, file, `${what}: no lsn lies between the records around them`));
      else out.push(evidence(EV_CORRUPT_DATA, file, `${range(lostFrom, to)} unreadable: ${what}`, { lsnFrom: lostFrom, lsnTo: to }));
    }
  }
}

/**
 * The evidence of one shard's recovery (rows A-G; H and I are counted by
 * VersionTally and judged with the registry log in registryEvidence).
 */
export function shardEvidence(f: ShardFacts): Evidence[] {
  const out: Evidence[] = [];
  chainEvidence(f, out);
  findingEvidence(f, out);
  if (f.chain.every((seg) => seg.firstLsn < 0)) {
    // No WAL record at all: an unreadable snapshot newer than the one used is the only trace of its history.
    const s = Math.max(0, f.afterLsn);
    const newest = f.snapshotsSkipped.reduce((a, b) => (b.lsn > a.lsn ? b : a), { name: '', lsn: -1, reason: '' });
    if (newest.lsn > s) {
      out.push(evidence(EV_SNAPSHOT_ONLY, `${f.shard}/snapshots/${newest.name}`, `${range(s + 1, newest.lsn)} missing: this snapshot is unreadable (${newest.reason}) and the WAL holds no record`,
        { lsnFrom: s + 1, lsnTo: newest.lsn }));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Registry evidence (all shards together)
// ---------------------------------------------------------------------------

export const REGISTRY_LOG_FILE = 'registry/registry.log';

/** What scanning the registry log found (wal/registry_log.ts scanRegistryLogLenient). Plain data. */
export interface RegistryLogFacts {
  known: RegistryKnown;
  /** Damage before the end of the file (entries skipped). */
  damage: Array<{ offset: number; bytes: number; kind: string }>;
  /** A torn last entry (cut at open): its bytes and case name; 0 and '' when none. */
  tailBytes: number;
  tailKind: string;
}

function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? '' : one.endsWith('sh') ? 'es' : 's'}`;
}

/** Row H for every shard together, plus rows I, J and K. */
export function registryEvidence(reg: RegistryLogFacts, shards: ReadonlyArray<{ shard: string; versions: VersionSummary }>): Evidence[] {
  const out: Evidence[] = [];
  for (const d of reg.damage) {
    out.push(evidence(EV_REGISTRY_DAMAGED, REGISTRY_LOG_FILE, `damaged before its end: ${d.bytes} bytes at offset ${d.offset} (${d.kind}); the entries in them are lost`));
  }
  const versions = new Set<number>();
  const parts: string[] = [];
  let pushes = 0;
  let others = 0;
  let lsnFrom = -1;
  let lsnTo = -1;
  for (const sh of shards) {
    for (const m of sh.versions.missing) {
      versions.add(m.version);
      pushes += m.pushes;
      others += m.others;
      const holds = m.pushes + m.others > 0 ? `${sh.shard} holds ${plural(m.pushes, 'push')} and ${plural(m.others, 'other record')} under v${m.version} (${range(m.firstLsn, m.lastLsn)})` : '';
      const snap = m.snapshot === null ? '' : `${sh.shard}/snapshots/${m.snapshot} was taken under v${m.version}`;
      parts.push([holds, snap].filter((x) => x !== '').join(', '));
      if (m.firstLsn >= 0 && (lsnFrom < 0 || m.firstLsn < lsnFrom)) lsnFrom = m.firstLsn;
      if (m.lastLsn > lsnTo) lsnTo = m.lastLsn;
    }
    const p = sh.versions.preReset;
    if (p !== null) {
      out.push(evidence(EV_PRE_RESET, REGISTRY_LOG_FILE, `${sh.shard} holds ${plural(p.records, 'record')} (${range(p.firstLsn, p.lastLsn)}) from before the reset the log starts with (v${reg.known.first}); the reset discards them`));
    }
  }
  if (versions.size > 0) {
    const list = [...versions].sort((a, b) => a - b);
    const k = reg.known;
    const has = k.first < 0 ? 'the log holds no registry version' : `the log holds ${k.first === k.last ? `only v${k.first}` : `v${k.first} to v${k.last}`}`;
    out.push(evidence(EV_REGISTRY_VERSIONS, REGISTRY_LOG_FILE, `registry ${list.length === 1 ? 'version' : 'versions'} ${list.map((v) => `v${v}`).join(', ')} missing (${has}): ${parts.join('; ')}`,
      { versions: list, pushes, records: pushes + others, lsnFrom, lsnTo }));
  } else if (reg.tailBytes > 0) {
    out.push(evidence(EV_REGISTRY_TAIL, REGISTRY_LOG_FILE, `torn last entry: ${reg.tailBytes} bytes (${reg.tailKind}) cut off; no record names a version it could hold, so it was never acknowledged`));
  }
  return out;
}

/** Highest registry version the registry log, the WAL records and the snapshots know of. */
export function versionFloor(reg: RegistryLogFacts, shards: ReadonlyArray<{ versions: VersionSummary }>): number {
  return Math.max(reg.known.last, ...shards.map((s) => s.versions.maxSeen));
}

// ---------------------------------------------------------------------------
// Words
// ---------------------------------------------------------------------------

/** What the operator does when boot refuses (the last line of the refusal and of wal-check). */
export const DATA_LOSS_ADVICE = 'restore the data dir from a backup, or start with --accept-data-loss to serve what is left and log what was lost (docs/durability.md "When boot refuses")';

/** One line per piece of evidence, the same at boot and in wal-check. */
export function formatEvidence(e: Evidence): string {
  return `${e.file}: ${e.why}`;
}

/** The refusal: one line per loss, then what to do. */
export function refusalMessage(dataDir: string, losses: readonly Evidence[]): string {
  assert(losses.length > 0, 'a refusal names at least one loss');
  return [
    `data dir ${dataDir}: acknowledged data is lost (${plural(losses.length, 'finding')}), refusing to start:`,
    ...losses.map((l) => `  ${formatEvidence(l)}`),
    DATA_LOSS_ADVICE,
  ].join('\n');
}

/** What a shard reports after recovery (ShardHello.audit): its own evidence and the versions it met. */
export interface ShardAudit {
  shard: string;
  evidence: Evidence[];
  versions: VersionSummary;
}

/** Every piece of evidence of a data dir, the losses among it, and the version floor: what boot and wal-check decide on. */
export interface Judgement {
  evidence: Evidence[];
  losses: Evidence[];
  /** Highest registry version anything on disk names (versionFloor). */
  versionFloor: number;
}

export function judge(reg: RegistryLogFacts, audits: readonly ShardAudit[]): Judgement {
  const evidence = [...audits.flatMap((a) => a.evidence), ...registryEvidence(reg, audits)];
  return { evidence, losses: evidence.filter((e) => e.loss), versionFloor: versionFloor(reg, audits) };
}
