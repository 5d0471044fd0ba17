/**
 * Shared helpers for the WAL unit tests: temp directories, a seeded PRNG and
 * small segment builders (PUSH, INSTALL and RESET records). Not a test file itself.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PushFrameWriter, PushRecordReader, RecordEncoder, sealFrame, type InstallRecord, type ResetRecord, type WalRecord, type WalWriter } from '../../../src/wal';
import { RECORD_TYPE_FORGET, RECORD_TYPE_INSTALL, RECORD_TYPE_PUSH } from '../../../src/wal/constants';
import type { Value } from '../../../src/types';
import { prng } from '../../harness/prng';
export { prng };

/** A fresh directory under os.tmpdir(); remove it with cleanup(). */
export function tempDir(tag: string): string {
  return mkdtempSync(join(tmpdir(), `sf-wal-${tag}-`));
}

export function cleanup(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}


const ALPHABET = ['a', 'b', 'Z', '0', ' ', '"', '\\', 'é', 'ß', '中', '😀', '\n', '\u0001', '\u2028'];

export function randomString(rnd: () => number, maxLen: number): string {
  const n = Math.floor(rnd() * (maxLen + 1));
  let s = '';
  for (let i = 0; i < n; i++) s += ALPHABET[Math.floor(rnd() * ALPHABET.length)];
  return s;
}

/**
 * A WAL record as the tests write and compare it: a PUSH record with one feed
 * (its table, key and values decoded), or an INSTALL or RESET record.
 */
export type TestRecord = TestPush | InstallRecord | ResetRecord;

export interface TestPush {
  type: typeof RECORD_TYPE_PUSH;
  lsn: number;
  timeMs: number;
  registryVersion: number;
  eventIndex: number;
  dedupe: string | null;
  table: number;
  key: string;
  values: Array<Value | undefined>;
}

/** PUSH records with lsns first, first+step, ...: varied keys, values (strings of every width, numbers, null, absent) and sizes. */
export function makePushes(count: number, firstLsn = 1, step = 1): TestRecord[] {
  const out: TestRecord[] = [];
  for (let i = 0; i < count; i++) {
    const lsn = firstLsn + i * step;
    out.push({
      type: RECORD_TYPE_PUSH,
      lsn,
      timeMs: 1_700_000_000_000 + i,
      registryVersion: 1 + (i % 3),
      eventIndex: i % 2,
      dedupe: i % 5 === 0 ? `d${i}` : null,
      table: i % 3,
      key: `u${i % 7}${i % 4 === 0 ? 'é' : ''}`,
      values: [i * 1.5, i % 6 === 0 ? null : `note ${'x'.repeat(i % 11)}`, i % 9 === 0 ? undefined : i],
    });
  }
  return out;
}

/** A random PUSH record (record.test.ts's property test). */
export function randomPush(rnd: () => number, lsn: number): TestPush {
  const values: Array<Value | undefined> = [];
  for (let n = Math.floor(rnd() * 6); n > 0; n--) {
    const k = rnd();
    values.push(k < 0.4 ? randomString(rnd, 200) : k < 0.6 ? Math.floor(rnd() * 2 ** 31) - 2 ** 30 : k < 0.8 ? rnd() * 1e6 : k < 0.9 ? null : k < 0.95 ? rnd() < 0.5 : undefined);
  }
  return {
    type: RECORD_TYPE_PUSH, lsn, timeMs: Math.floor(rnd() * 2 ** 42), registryVersion: Math.floor(rnd() * 1000), eventIndex: Math.floor(rnd() * 100),
    dedupe: rnd() < 0.3 ? randomString(rnd, 12) : null, table: Math.floor(rnd() * 10), key: randomString(rnd, 12), values,
  };
}

const pushes = new PushFrameWriter(64);

/**
 * The sealed frames of `records`, in order: PUSH records as the front writes them
 * (PushFrameWriter), INSTALL and RESET records through `enc` (RecordEncoder,
 * reset first).
 */
export function encode(records: readonly TestRecord[], enc: RecordEncoder = new RecordEncoder(64)): Buffer {
  const parts: Buffer[] = [];
  for (const r of records) {
    if (r.type === RECORD_TYPE_PUSH) {
      pushes.begin(r.lsn, r.timeMs, r.registryVersion, r.eventIndex, r.dedupe);
      pushes.feed(r.table, r.key);
      for (const v of r.values) pushes.value(v);
      pushes.end();
      const frame = Buffer.from(pushes.take());
      sealFrame(frame, 0);
      parts.push(frame);
      continue;
    }
    enc.reset();
    if (r.type === RECORD_TYPE_INSTALL) enc.install(r.lsn, r.registryVersion);
    else enc.resetRecord(r.lsn, r.registryVersion);
    parts.push(Buffer.from(enc.bytes()));
  }
  return Buffer.concat(parts);
}

/** Appends `records` to `w` as one batch (one write). */
export function appendRecords(w: WalWriter, records: readonly TestRecord[]): void {
  w.append(encode(records), records[0].lsn, records[records.length - 1].lsn);
}

const reader = new PushRecordReader();

/** A record recovery or the decoder handed over, as a TestRecord (a PUSH record's feed read out of its buffer). */
export function plain(r: WalRecord): TestRecord {
  if (r.type === RECORD_TYPE_FORGET) throw new Error('the WAL helpers write no FORGET records (forget_record.test.ts has its own)');
  if (r.type !== RECORD_TYPE_PUSH) return r;
  reader.open(r.buf, r.body);
  assert.equal(reader.feedCount, 1, 'test PUSH records have one feed');
  const table = reader.u16();
  const key = reader.str();
  const values: Array<Value | undefined> = [];
  for (let n = reader.u16(); n > 0; n--) values.push(reader.value());
  assert.equal(reader.p, r.end, 'the feed ends the record');
  return { type: RECORD_TYPE_PUSH, lsn: r.lsn, timeMs: r.timeMs, registryVersion: r.registryVersion, eventIndex: reader.eventIndex, dedupe: reader.dedupe, table, key, values };
}

/** Byte offsets where each frame of `buf` starts (plus the end). */
export function frameOffsets(buf: Buffer): number[] {
  const out: number[] = [];
  let o = 0;
  while (o < buf.length) {
    out.push(o);
    o += 8 + buf.readUInt32LE(o);
  }
  out.push(o);
  return out;
}
