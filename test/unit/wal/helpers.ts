/**
 * Shared helpers for the WAL unit tests: temp directories, a seeded PRNG and
 * small segment builders. Not a test file itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordEncoder, type WalRecord } from '../../../src/wal';
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

/** Event records with lsns first, first+step, ... */
export function makeEvents(count: number, firstLsn = 1, step = 1): WalRecord[] {
  const out: WalRecord[] = [];
  for (let i = 0; i < count; i++) {
    const lsn = firstLsn + i * step;
    out.push({
      type: 1,
      lsn,
      timeMs: 1_700_000_000_000 + i,
      registryVersion: 1 + (i % 3),
      event: i % 2 === 0 ? 'pay' : 'login',
      rowJson: JSON.stringify({ user: `u${i % 7}`, amount: i * 1.5, note: 'x'.repeat(i % 11) }),
    });
  }
  return out;
}

/** Stages `records` into `enc` (after reset) and returns a copy of the bytes. */
export function encode(records: WalRecord[], enc: RecordEncoder = new RecordEncoder(64)): Buffer {
  enc.reset();
  for (const r of records) stage(enc, r);
  return Buffer.from(enc.bytes());
}

export function stage(enc: RecordEncoder, r: WalRecord): void {
  if (r.type === 1) enc.event(r.lsn, r.timeMs, r.registryVersion, r.event, r.rowJson);
  else if (r.type === 2) enc.install(r.lsn, r.registryVersion);
  else enc.resetRecord(r.lsn, r.registryVersion);
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
