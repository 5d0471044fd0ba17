/**
 * One test per row of the recovery decision table (src/wal/recover.ts), plus the
 * exhaustive torn-tail / flipped-byte sweeps. The last test checks that every row
 * of RECOVERY_CASES was exercised.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RECOVERY_CASES, crc32c, recoverWal, type RecoveryReport } from '../../../src/wal';
import { cleanup, encode, frameOffsets, makePushes, plain, prng, tempDir, type TestRecord } from './helpers';

const covered = new Set<string>();

function segName(lsn: number): string {
  return String(lsn).padStart(20, '0') + '.log';
}

/** A frame with any type and payload and a correct crc. */
function frame(type: number, payload: Buffer): Buffer {
  const b = Buffer.alloc(9 + payload.length);
  b.writeUInt32LE(1 + payload.length, 0);
  b[8] = type;
  payload.copy(b, 9);
  b.writeUInt32LE(crc32c(b, 8, b.length), 4);
  return b;
}

function u64le(v: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32LE(v >>> 0, 0);
  b.writeUInt32LE(Math.floor(v / 2 ** 32), 4);
  return b;
}

interface Outcome {
  records: TestRecord[];
  report: RecoveryReport;
  sizeAfter: number;
}

/** Writes `segs` (first lsn -> bytes) and recovers; sizes are of the named segment. */
function run(dir: string, segs: Array<[number, Buffer]>, afterLsn = -1, sizeOf = segs[segs.length - 1][0]): Outcome {
  for (const [lsn, buf] of segs) writeFileSync(join(dir, segName(lsn)), buf);
  const records: TestRecord[] = [];
  const report = recoverWal(dir, afterLsn, (r) => records.push(plain(r)));
  for (const e of report.log) if (typeof e.label === 'string') covered.add(e.label);
  return { records, report, sizeAfter: statSync(join(dir, segName(sizeOf))).size };
}

function withDir(fn: (dir: string) => void): void {
  const dir = tempDir('cases');
  try {
    fn(dir);
  } finally {
    cleanup(dir);
  }
}

function kinds(r: RecoveryReport): string[] {
  return r.log.map((e) => e.kind);
}

const events = makePushes(12, 100);
const clean = encode(events);
const offs = frameOffsets(clean);

test('A end + B ok: a clean segment yields every record and logs nothing', () => {
  withDir((dir) => {
    const o = run(dir, [[100, clean]]);
    assert.deepEqual(o.records, events);
    assert.deepEqual(o.report.log, []);
    assert.equal(o.sizeAfter, clean.length);
    covered.add('A');
    covered.add('B');
  });
});

test('C lsn_regression: a crc-valid record with a lower lsn is yielded and warned about', () => {
  withDir((dir) => {
    const lower = encode(makePushes(1, 50));
    const o = run(dir, [[100, Buffer.concat([clean, lower])]]);
    assert.deepEqual(o.records.map((r) => r.lsn), events.map((r) => r.lsn).concat([50]));
    assert.deepEqual(kinds(o.report), ['lsn_regression']);
    assert.equal(o.report.log[0].level, 'warn');
  });
});

test('D unknown_type: a crc-valid frame of an unknown type is skipped and reported', () => {
  withDir((dir) => {
    const unknown = frame(9, Buffer.concat([u64le(105), Buffer.from('future')]));
    const o = run(dir, [[100, Buffer.concat([clean.subarray(0, offs[3]), unknown, clean.subarray(offs[3])])]]);
    assert.deepEqual(o.records, events);
    assert.deepEqual(kinds(o.report), ['unknown_type']);
    assert.equal(o.report.log[0].type, 9);
    assert.deepEqual(o.report.corruptSegments, []);
  });
});

test('E malformed_payload: crc-valid but inner lengths wrong -> skipped, reported as error', () => {
  withDir((dir) => {
    const bad = frame(2, Buffer.from([1, 2, 3, 4, 5]));
    const o = run(dir, [[100, Buffer.concat([clean.subarray(0, offs[2]), bad, clean.subarray(offs[2])])]]);
    assert.deepEqual(o.records, events);
    assert.deepEqual(kinds(o.report), ['malformed_payload']);
    assert.equal(o.report.log[0].level, 'error');
  });
});

test('F short_header: 1..7 trailing bytes are a torn tail and are truncated', () => {
  withDir((dir) => {
    const o = run(dir, [[100, Buffer.concat([clean, Buffer.from([9, 9, 9, 9, 9])])]]);
    assert.deepEqual(o.records, events);
    assert.deepEqual(kinds(o.report), ['short_header', 'torn_tail']);
    assert.equal(o.sizeAfter, clean.length);
    assert.equal(o.report.truncatedBytes, 5);
  });
});

test('G zero_tail: a zero-filled tail (preallocation) is truncated', () => {
  withDir((dir) => {
    const o = run(dir, [[100, Buffer.concat([clean, Buffer.alloc(4096)])]]);
    assert.deepEqual(o.records, events);
    assert.deepEqual(kinds(o.report), ['zero_tail', 'torn_tail']);
    assert.equal(o.sizeAfter, clean.length);
  });
});

test('H corrupt_record: a flipped payload byte in a middle record loses only that record', () => {
  withDir((dir) => {
    const buf = Buffer.from(clean);
    buf[offs[5] + 20] ^= 0x40;
    const o = run(dir, [[100, buf]]);
    assert.deepEqual(o.records, events.filter((_, i) => i !== 5));
    assert.deepEqual(kinds(o.report), ['corrupt_record']);
    assert.equal(o.report.log[0].lsnAfter, events[6].lsn);
    assert.deepEqual(o.report.corruptSegments, [segName(100)]);
    assert.equal(o.sizeAfter, clean.length, 'middle corruption is not truncated');
  });
});

test('I corrupt_region: a smashed region (framing lost) is skipped up to the next valid record', () => {
  withDir((dir) => {
    const buf = Buffer.from(clean);
    buf.fill(0xaa, offs[4] + 2, offs[6] + 5); // from inside record 4's length to inside record 6's length
    const o = run(dir, [[100, buf]]);
    assert.deepEqual(o.records, events.filter((_, i) => i < 4 || i > 6));
    assert.deepEqual(kinds(o.report), ['corrupt_region']);
    assert.equal(o.report.log[0].offset, offs[4]);
    assert.equal(o.report.log[0].bytes, offs[7] - offs[4]);
    assert.equal(o.report.skippedBytes, offs[7] - offs[4]);
  });
});

test('J torn_length: a record cut after its header is a torn tail', () => {
  withDir((dir) => {
    const o = run(dir, [[100, clean.subarray(0, offs[11] + 15)]]);
    assert.deepEqual(o.records, events.slice(0, 11));
    assert.deepEqual(kinds(o.report), ['torn_length', 'torn_tail']);
    assert.equal(o.sizeAfter, offs[11]);
  });
});

test('K torn_crc: a crc mismatch in the last record is a torn tail', () => {
  withDir((dir) => {
    const buf = Buffer.from(clean);
    buf[buf.length - 2] ^= 1;
    const o = run(dir, [[100, buf]]);
    assert.deepEqual(o.records, events.slice(0, 11));
    assert.deepEqual(kinds(o.report), ['torn_crc', 'torn_tail']);
    assert.equal(o.sizeAfter, offs[11]);
  });
});

test('L garbage_length: appended garbage with an impossible length is truncated', () => {
  withDir((dir) => {
    const o = run(dir, [[100, Buffer.concat([clean, Buffer.alloc(16, 0xff)])]]);
    assert.deepEqual(o.records, events);
    assert.deepEqual(kinds(o.report), ['garbage_length', 'torn_tail']);
    assert.equal(o.sizeAfter, clean.length);
  });
});

test('torn tail at every byte offset of the last record', () => {
  withDir((dir) => {
    const last = offs[11];
    for (let cut = last; cut < clean.length; cut++) {
      const o = run(dir, [[100, clean.subarray(0, cut)]]);
      assert.deepEqual(o.records, events.slice(0, 11), `cut at ${cut}`);
      assert.equal(o.sizeAfter, last, `cut at ${cut}`);
      assert.equal(o.report.truncatedBytes, cut - last, `cut at ${cut}`);
    }
  });
});

test('a flipped byte anywhere in a middle record loses exactly that record (no truncation)', () => {
  withDir((dir) => {
    for (let at = offs[6]; at < offs[7]; at++) {
      const buf = Buffer.from(clean);
      buf[at] ^= 0xff;
      const o = run(dir, [[100, buf]]);
      assert.deepEqual(o.records, events.filter((_, i) => i !== 6), `flip at ${at - offs[6]}`);
      assert.equal(o.sizeAfter, clean.length, `flip at ${at - offs[6]}`);
      assert.equal(o.report.truncatedBytes, 0);
      assert.deepEqual(o.report.corruptSegments, [segName(100)]);
    }
  });
});

test('a flipped byte anywhere in the last record truncates it and keeps the rest', () => {
  withDir((dir) => {
    for (let at = offs[11]; at < clean.length; at++) {
      const buf = Buffer.from(clean);
      buf[at] ^= 0xff;
      const o = run(dir, [[100, buf]]);
      assert.deepEqual(o.records, events.slice(0, 11), `flip at ${at - offs[11]}`);
      assert.equal(o.sizeAfter, offs[11], `flip at ${at - offs[11]}`);
    }
  });
});

test('random garbage appended is truncated (seeded)', () => {
  const seed = 777;
  const rnd = prng(seed);
  withDir((dir) => {
    for (let round = 0; round < 40; round++) {
      const junk = Buffer.alloc(1 + Math.floor(rnd() * 300));
      for (let i = 0; i < junk.length; i++) junk[i] = Math.floor(rnd() * 256);
      const o = run(dir, [[100, Buffer.concat([clean, junk])]]);
      assert.deepEqual(o.records, events, `seed ${seed} round ${round}`);
      assert.equal(o.sizeAfter, clean.length, `seed ${seed} round ${round}`);
    }
  });
});

test('a bad tail in a closed segment is skipped, not truncated, and replay continues', () => {
  withDir((dir) => {
    const second = encode(makePushes(3, 200));
    const damaged = Buffer.concat([clean.subarray(0, offs[10]), Buffer.alloc(30, 0x11)]);
    const o = run(dir, [[100, damaged], [200, second]], -1, 100);
    assert.deepEqual(o.records.map((r) => r.lsn), events.slice(0, 10).map((r) => r.lsn).concat([200, 201, 202]));
    assert.equal(o.sizeAfter, damaged.length, 'closed segments are never modified');
    assert.deepEqual(o.report.corruptSegments, [segName(100)]);
    assert.ok(kinds(o.report).includes('closed_segment_tail'));
    assert.equal(o.report.truncatedBytes, 0);
  });
});

test('the tail segment is the last non-empty one (an empty newer segment does not protect a torn tail)', () => {
  withDir((dir) => {
    const torn = clean.subarray(0, offs[11] + 3);
    const o = run(dir, [[100, torn], [300, Buffer.alloc(0)]], -1, 100);
    assert.deepEqual(o.records, events.slice(0, 11));
    assert.equal(o.sizeAfter, offs[11]);
    assert.deepEqual(o.report.corruptSegments, []);
  });
});

test('recovery with repair off reports but does not modify', () => {
  withDir((dir) => {
    writeFileSync(join(dir, segName(100)), Buffer.concat([clean, Buffer.alloc(9, 0x01)]));
    const report = recoverWal(dir, -1, () => undefined, { repair: false });
    assert.deepEqual(kinds(report), ['garbage_length', 'torn_tail']);
    assert.equal(report.log[1].action, 'would_truncate');
    assert.equal(readFileSync(join(dir, segName(100))).length, clean.length + 9);
  });
});

test('every row of the decision table has a test', () => {
  const labels = RECOVERY_CASES.map((c) => c.label);
  assert.deepEqual(labels, ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L']);
  for (const l of labels) assert.ok(covered.has(l), `row ${l} (${RECOVERY_CASES.find((c) => c.label === l)?.name}) was not exercised`);
});
