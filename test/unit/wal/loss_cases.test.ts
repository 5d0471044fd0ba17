/**
 * One test per row of the evidence table (src/wal/loss.ts EVIDENCE_CASES), on real
 * files: segments written by WalWriter (with their SEGMENT frames), damaged the way
 * an operator or a disk damages them, then judged by the code boot and wal-check
 * run (auditShardDir -> recoverShardFiles, readRegistryLogFacts, judge). The last
 * test checks that every row was exercised.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, readFileSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  EVIDENCE_CASES, RecordEncoder, RegistryLog, VersionTally, WalWriter, auditShardDir, formatEvidence, judge, readRegistryLogFacts,
  refusalMessage, registryEvidence, registryKnownOf, writeSnapshot, type Evidence, type RegistryKnown, type ShardAudit,
} from '../../../src/wal';
import { RECORD_TYPE_INSTALL, RECORD_TYPE_PUSH, RECORD_TYPE_RESET } from '../../../src/wal/constants';
import { cleanup, frameOffsets, tempDir } from './helpers';

const covered = new Set<string>();
const V1: RegistryKnown = registryKnownOf([{ version: 1, nodes: [{ name: 'T' }] }]);
const T0 = 1_700_000_000_000;

function segName(lsn: number): string {
  return String(lsn).padStart(20, '0') + '.log';
}

interface Shard {
  root: string;
  wal: string;
  snaps: string;
}

function withShard(fn: (s: Shard) => void): void {
  const root = tempDir('loss');
  const s = { root, wal: join(root, 'shard-0', 'wal'), snaps: join(root, 'shard-0', 'snapshots') };
  mkdirSync(s.wal, { recursive: true });
  mkdirSync(s.snaps, { recursive: true });
  try {
    fn(s);
  } finally {
    cleanup(root);
  }
}

/** Appends one EVENT record per lsn (one batch each) under `version`, through a WalWriter (SEGMENT frames included). */
function writeWal(dir: string, lsns: number[], segmentBytesMax = 200, version = 1): void {
  const w = WalWriter.open(dir, { segmentBytesMax, nextLsnHint: lsns[0] });
  const enc = new RecordEncoder();
  for (const lsn of lsns) {
    enc.reset();
    enc.event(lsn, T0 + lsn, version, 'pay', `{"user":"u${lsn % 5}"}`);
    w.appendStaged(enc);
  }
  w.close();
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

function segments(s: Shard): string[] {
  return readdirSync(s.wal).filter((n) => n.endsWith('.log')).sort();
}

function audit(s: Shard, known: RegistryKnown = V1): ShardAudit {
  return auditShardDir(join(s.root, 'shard-0'), 'shard-0', known);
}

function labels(evidence: Evidence[]): string[] {
  for (const e of evidence) covered.add(e.label);
  return evidence.map((e) => e.label);
}

function only(evidence: Evidence[], label: string): Evidence {
  const hits = evidence.filter((e) => e.label === label);
  assert.equal(hits.length, 1, `one ${label} in ${JSON.stringify(evidence)}`);
  return hits[0];
}

test('a clean WAL with its SEGMENT frames: no evidence at all', () => {
  withShard((s) => {
    writeWal(s.wal, range(1, 40));
    assert.ok(segments(s).length >= 5);
    const a = audit(s);
    assert.deepEqual(a.evidence, []);
    assert.deepEqual(a.versions, { maxSeen: 1, missing: [], preReset: null });
  });
});

test('A torn_tail: a partial last record is repaired, not a loss', () => {
  withShard((s) => {
    writeWal(s.wal, range(1, 20));
    const last = join(s.wal, segments(s).at(-1)!);
    truncateSync(last, readFileSync(last).length - 3);
    const ev = audit(s).evidence;
    assert.deepEqual(labels(ev), ['A']);
    assert.equal(ev[0].loss, false);
    assert.match(formatEvidence(ev[0]), /^shard-0\/wal\/\d{20}\.log: torn tail: \d+ bytes at offset \d+ \(recovery cuts them off\)/);
  });
});

test('B chain_gap: a deleted middle segment, and one cut at a record boundary, name the exact lsns lost', () => {
  withShard((s) => {
    writeWal(s.wal, range(1, 40));
    const names = segments(s);
    const victim = names[2];
    const next = names[3];
    const firstLost = Number(victim.slice(0, 20));
    const firstAfter = Number(next.slice(0, 20));
    rmSync(join(s.wal, victim));
    const b = only(audit(s).evidence, 'B');
    labels([b]);
    assert.equal(b.loss, true);
    assert.deepEqual([b.lsnFrom, b.lsnTo, b.file], [firstLost, firstAfter - 1, `shard-0/wal/${next}`]);
    assert.equal(formatEvidence(b), `shard-0/wal/${next}: lsns ${firstLost}-${firstAfter - 1} missing before this segment: it follows lsn ${firstAfter - 1}, the WAL before it ends at lsn ${firstLost - 1} (a segment deleted or cut short)`);
  });
  withShard((s) => {
    writeWal(s.wal, range(1, 40));
    const names = segments(s);
    const mid = join(s.wal, names[2]);
    const buf = readFileSync(mid);
    const offs = frameOffsets(buf);
    truncateSync(mid, offs[offs.length - 2]); // the last record goes, exactly at its boundary
    const lastLsn = Number(names[3].slice(0, 20)) - 1;
    const b = only(audit(s).evidence, 'B');
    assert.deepEqual([b.lsnFrom, b.lsnTo], [lastLsn, lastLsn]);
    assert.match(b.why, new RegExp(`^lsn ${lastLsn} missing before this segment`));
  });
});

test('C start_gap: both snapshots gone after the WAL was compacted; covered and history-start cases are not losses', () => {
  withShard((s) => {
    writeWal(s.wal, range(1, 40));
    writeSnapshot(s.snaps, { lsn: 20, registryVersion: 1 }, Buffer.from('state-20'));
    writeSnapshot(s.snaps, { lsn: 30, registryVersion: 1 }, Buffer.from('state-30'));
    const w = WalWriter.open(s.wal, { segmentBytesMax: 200, nextLsnHint: 41 });
    assert.ok(w.deleteSegmentsCoveredBy(20) > 0);
    w.close();
    const first = segments(s)[0];
    const follows = Number(first.slice(0, 20)) - 1;
    assert.deepEqual(audit(s).evidence, [], 'the snapshots cover what was deleted');
    for (const n of readdirSync(s.snaps)) writeFileSync(join(s.snaps, n), readFileSync(join(s.snaps, n)).subarray(0, 70));
    const c = only(audit(s).evidence, 'C');
    labels([c]);
    assert.deepEqual([c.loss, c.lsnFrom, c.lsnTo], [true, 1, follows]);
    assert.equal(c.why, `lsns 1-${follows} missing: the WAL starts after lsn ${follows} and no snapshot is readable `
      + '(00000000000000000030.snap: length_mismatch, 00000000000000000020.snap: length_mismatch)');
    for (const n of readdirSync(s.snaps)) rmSync(join(s.snaps, n));
    assert.match(only(audit(s).evidence, 'C').why, /and there is no snapshot$/);
  });
});

test('C start_gap for segments without SEGMENT frames: history starts at lsn 1 or at a RESET', () => {
  const legacy = (first: number, type: number): Buffer => {
    const enc = new RecordEncoder();
    if (type === RECORD_TYPE_RESET) enc.resetRecord(first, 1);
    else enc.event(first, T0, 1, 'pay', '{}');
    for (let lsn = first + 1; lsn < first + 5; lsn++) enc.event(lsn, T0, 1, 'pay', '{}');
    return Buffer.from(enc.bytes());
  };
  withShard((s) => {
    writeFileSync(join(s.wal, segName(50)), legacy(50, 1));
    const c = only(audit(s).evidence, 'C');
    assert.deepEqual([c.lsnFrom, c.lsnTo], [1, 49]);
    assert.match(c.why, /the WAL starts at lsn 50 \(not at lsn 1 or a reset\)/);
    writeSnapshot(s.snaps, { lsn: 49, registryVersion: 1 }, Buffer.from('state'));
    assert.deepEqual(audit(s).evidence, [], 'a snapshot up to lsn 49 covers it');
  });
  withShard((s) => {
    writeFileSync(join(s.wal, segName(50)), legacy(50, RECORD_TYPE_RESET));
    assert.deepEqual(audit(s).evidence, [], 'a RESET starts the history');
  });
  withShard((s) => {
    writeFileSync(join(s.wal, segName(1)), legacy(1, 1));
    assert.deepEqual(audit(s).evidence, [], 'lsn 1 starts the history');
  });
});

test('D corrupt_data and E corrupt_covered: a flipped byte in a middle record is a loss unless the snapshot holds it', () => {
  withShard((s) => {
    writeWal(s.wal, range(1, 40));
    const names = segments(s);
    const mid = join(s.wal, names[1]);
    const buf = readFileSync(mid);
    const offs = frameOffsets(buf);
    const firstRecordLsn = Number(names[1].slice(0, 20));
    buf[offs[1] + 20] ^= 0xff; // the first record after the SEGMENT frame
    writeFileSync(mid, buf);
    const d = only(audit(s).evidence, 'D');
    labels([d]);
    assert.deepEqual([d.loss, d.lsnFrom, d.lsnTo], [true, firstRecordLsn, firstRecordLsn]);
    assert.match(formatEvidence(d), new RegExp(`^shard-0/wal/${names[1]}: lsn ${firstRecordLsn} unreadable: \\d+ unreadable bytes at offset ${offs[1]} \\(corrupt_record\\)$`));
    writeSnapshot(s.snaps, { lsn: firstRecordLsn + 1, registryVersion: 1 }, Buffer.from('state'));
    const e = only(audit(s).evidence, 'E');
    labels([e]);
    assert.equal(e.loss, false);
  });
  withShard((s) => {
    // A flipped byte in a SEGMENT frame: no record is lost (only that segment's proof of what came before).
    writeWal(s.wal, range(1, 40));
    const names = segments(s);
    const mid = join(s.wal, names[1]);
    const buf = readFileSync(mid);
    buf[12] ^= 0xff;
    writeFileSync(mid, buf);
    const e = only(audit(s).evidence, 'E');
    assert.equal(e.why, '17 unreadable bytes at offset 0 (corrupt_record): no lsn lies between the records around them');
  });
});

test('F closed_tail: garbage after the last record of a closed segment is tolerated when the next segment shows nothing missing', () => {
  withShard((s) => {
    writeWal(s.wal, range(1, 40));
    const names = segments(s);
    appendFileSync(join(s.wal, names[1]), Buffer.from([9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]));
    const ev = audit(s).evidence;
    assert.deepEqual(labels(ev), ['F']);
    assert.equal(ev[0].loss, false);
    // Cut inside its last record instead: the next segment's SEGMENT frame proves that record lost.
    const mid = join(s.wal, names[2]);
    const offs = frameOffsets(readFileSync(mid));
    truncateSync(mid, offs[offs.length - 2] + 5);
    const again = audit(s).evidence;
    assert.deepEqual(labels(again).sort(), ['B', 'F', 'F']);
    assert.equal(only(again, 'B').lsnTo, Number(names[3].slice(0, 20)) - 1);
  });
});

test('G snapshot_only: no WAL record, and an unreadable snapshot newer than the one used', () => {
  withShard((s) => {
    writeSnapshot(s.snaps, { lsn: 10, registryVersion: 1 }, Buffer.from('state-10'));
    writeSnapshot(s.snaps, { lsn: 20, registryVersion: 1 }, Buffer.from('state-20'));
    assert.deepEqual(audit(s).evidence, []);
    const p = join(s.snaps, '00000000000000000020.snap');
    const b = readFileSync(p);
    b[b.length - 1] ^= 1;
    writeFileSync(p, b);
    const g = only(audit(s).evidence, 'G');
    labels([g]);
    assert.deepEqual([g.loss, g.lsnFrom, g.lsnTo, g.file], [true, 11, 20, 'shard-0/snapshots/00000000000000000020.snap']);
  });
});

test('H registry_versions: records and the snapshot under versions the registry log lacks, counted per version', () => {
  withShard((s) => {
    writeWal(s.wal, range(1, 10), 200, 1);
    writeWal(s.wal, range(11, 16), 200, 2);
    writeSnapshot(s.snaps, { lsn: 12, registryVersion: 2 }, Buffer.from('state'));
    const a = audit(s);
    assert.deepEqual(a.evidence, []);
    assert.deepEqual(a.versions, { maxSeen: 2, missing: [{ version: 2, pushes: 4, others: 0, firstLsn: 13, lastLsn: 16, snapshot: '00000000000000000012.snap' }], preReset: null });
    const reg = { known: V1, damage: [], tailBytes: 0, tailKind: '' };
    const v = judge(reg, [a]);
    const h = only(v.evidence, 'H');
    labels([h]);
    assert.deepEqual([h.loss, h.versions, h.pushes, h.records, h.lsnFrom, h.lsnTo], [true, [2], 4, 4, 13, 16]);
    assert.equal(formatEvidence(h), 'registry/registry.log: registry version v2 missing (the log holds only v1): shard-0 holds 4 pushes and 0 other records under v2 (lsns 13-16), '
      + 'shard-0/snapshots/00000000000000000012.snap was taken under v2');
    assert.equal(v.versionFloor, 2);
    assert.equal(refusalMessage('/d', v.losses), [
      'data dir /d: acknowledged data is lost (1 finding), refusing to start:',
      `  ${formatEvidence(h)}`,
      'restore the data dir from a backup, or start with --accept-data-loss to serve what is left and log what was lost (docs/durability.md "When boot refuses")',
    ].join('\n'));
  });
});

test('VersionTally: what it admits for replay, and the registry it knows', () => {
  const t = new VersionTally(registryKnownOf([{ version: 4, nodes: [] }, { version: 5, nodes: [{}] }]));
  const cases: Array<[number, number, number, boolean]> = [
    // type, lsn, version, admitted
    [RECORD_TYPE_PUSH, 1, 0, true], // the empty registry needs no entry
    [RECORD_TYPE_PUSH, 2, 3, false], // below a log that starts with a reset: before it
    [RECORD_TYPE_RESET, 3, 4, true],
    [RECORD_TYPE_PUSH, 4, 5, true],
    [RECORD_TYPE_INSTALL, 5, 6, false],
    [RECORD_TYPE_PUSH, 6, 6, false],
    [RECORD_TYPE_RESET, 7, 7, true], // a RESET replays without definitions, and is still counted
  ];
  for (const [type, lsn, version, want] of cases) assert.equal(t.admit(type, lsn, version), want, `lsn ${lsn}`);
  assert.deepEqual(t.summary(), {
    maxSeen: 7,
    missing: [{ version: 6, pushes: 1, others: 1, firstLsn: 5, lastLsn: 6, snapshot: null }, { version: 7, pushes: 0, others: 1, firstLsn: 7, lastLsn: 7, snapshot: null }],
    preReset: { records: 1, firstLsn: 2, lastLsn: 2 },
  });
  assert.deepEqual(registryKnownOf([]), { versions: [], first: -1, last: 0, firstIsReset: false });
  const none = new VersionTally(registryKnownOf([]));
  assert.equal(none.admit(RECORD_TYPE_PUSH, 1, 1), false, 'an empty log knows no version but 0');
  assert.equal(none.snapshot('x.snap', 1), false);
});

test('I pre_reset: records from before the reset the log starts with are tolerated', () => {
  const t = new VersionTally(registryKnownOf([{ version: 5, nodes: [] }]));
  t.admit(RECORD_TYPE_PUSH, 10, 3);
  t.admit(RECORD_TYPE_PUSH, 11, 3);
  const ev = registryEvidence({ known: registryKnownOf([{ version: 5, nodes: [] }]), damage: [], tailBytes: 0, tailKind: '' }, [{ shard: 'shard-0', versions: t.summary() }]);
  assert.deepEqual(labels(ev), ['I']);
  assert.equal(ev[0].loss, false);
  assert.equal(formatEvidence(ev[0]), 'registry/registry.log: shard-0 holds 2 records (lsns 10-11) from before the reset the log starts with (v5); the reset discards them');
});

test('J registry_damaged and K registry_tail: read from a real registry log without changing it', () => {
  const dir = tempDir('reglog');
  try {
    const path = join(dir, 'registry.log');
    const { log } = RegistryLog.open(path);
    for (const v of [1, 2, 3]) log.append({ version: v, nodes: [{ name: `n${v}` }] });
    log.close();
    const clean = readFileSync(path);
    // A torn last entry, no record naming v3: the register was never acknowledged.
    writeFileSync(path, clean.subarray(0, clean.length - 4));
    const torn = readRegistryLogFacts(path);
    assert.deepEqual(torn.facts.known.versions, [1, 2]);
    const k = registryEvidence(torn.facts, []);
    assert.deepEqual(labels(k), ['K']);
    assert.equal(k[0].loss, false);
    // The same tail with a WAL record under v3: proof, row H instead.
    const t = new VersionTally(torn.facts.known);
    t.admit(RECORD_TYPE_PUSH, 9, 3);
    assert.deepEqual(registryEvidence(torn.facts, [{ shard: 'shard-0', versions: t.summary() }]).map((e) => e.label), ['H']);
    // A flipped byte in the middle entry: v2 is skipped, v1 and v3 still read.
    const flipped = Buffer.from(clean);
    const offs = frameOffsets(flipped);
    flipped[offs[1] + 12] ^= 0xff;
    writeFileSync(path, flipped);
    const damaged = readRegistryLogFacts(path);
    assert.deepEqual(damaged.facts.known.versions, [1, 3]);
    assert.deepEqual(readFileSync(path), flipped, 'reading changes nothing');
    const j = registryEvidence(damaged.facts, []);
    assert.deepEqual(labels(j), ['J']);
    assert.equal(formatEvidence(j[0]), `registry/registry.log: damaged before its end: ${offs[2] - offs[1]} bytes at offset ${offs[1]} (corrupt_record); the entries in them are lost`);
    // Opening it for appends refuses, unless the loss is accepted: then the survivors are rewritten.
    assert.throws(() => RegistryLog.open(path), /corrupt_record/);
    const opened = RegistryLog.open(path, { acceptDamage: true });
    opened.log.close();
    assert.deepEqual(opened.entries.map((e) => (e as { version: number }).version), [1, 3]);
    assert.deepEqual(readRegistryLogFacts(path).facts.damage, []);
  } finally {
    cleanup(dir);
  }
});

test('every row of EVIDENCE_CASES is exercised', () => {
  assert.deepEqual([...covered].sort(), EVIDENCE_CASES.map((c) => c.label).sort());
});
