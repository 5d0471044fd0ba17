/**
 * FORGET records (src/wal/forget_record.ts), unit level:
 * - written by the front's PushFrameWriter between pushes and installs, sealed as
 *   the shard seals them, they come back from a WAL segment in their place with
 *   every entry (ASCII, UTF-8 and lone-surrogate keys) and the "every table" key;
 * - the structural check refuses every truncation, a byte too many, unknown flags,
 *   a bad string tag and an entry count past the payload, and recovery skips such a
 *   record as malformed instead of applying it;
 * - wal-check counts them by type.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FORGET_EVERY_TABLE, FRAME_LENGTH_CRC_BYTES, RECORD_TYPE_FORGET, RECORD_TYPE_INSTALL, RECORD_TYPE_PUSH } from '../../../src/wal/constants';
import { PushFrameWriter, frameEnd, sealFrame } from '../../../src/wal/push_record';
import { decodeForget, forgetWellFormed } from '../../../src/wal/forget_record';
import { WAL_CODEC } from '../../../src/wal/record';
import { checkWalDir, recoverWal, WalWriter, type WalRecord } from '../../../src/wal';
import { cleanup, tempDir } from './helpers';

const KEYS = ['plain', 'café', '\ud800lone', '["u1","m1"]'];

/** One batch as the front writes it: a push, a forget, an install, a forget naming every table. */
function batch(): Buffer {
  const w = new PushFrameWriter(64);
  w.begin(10, 1000, 3, 0, null);
  w.feed(1, 'plain');
  w.value(1);
  w.end();
  w.forget(11, 1001, 3, [0, 1, 2, 7], KEYS, null);
  w.install(12, 4);
  w.forget(13, 1002, 4, [2], ['x'], '"x"');
  const buf = Buffer.from(w.take());
  for (let p = 0; p < buf.length; p = sealFrame(buf, p));
  return buf;
}

/** The [body, end) of each frame of `buf`. */
function frames(buf: Buffer): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let p = 0; p < buf.length; p = frameEnd(buf, p)) out.push([p + FRAME_LENGTH_CRC_BYTES, frameEnd(buf, p)]);
  return out;
}

test('FORGET frames written between pushes and installs decode to their entries; the every-table key rides along', () => {
  const buf = batch();
  const f = frames(buf);
  assert.deepEqual(f.map(([b]) => buf[b]), [RECORD_TYPE_PUSH, RECORD_TYPE_FORGET, RECORD_TYPE_INSTALL, RECORD_TYPE_FORGET]);
  for (const [b, e] of f) assert.ok(WAL_CODEC.knows(buf[b]) && WAL_CODEC.wellFormed(buf, b, e), `frame of type ${buf[b]} is well formed`);
  assert.deepEqual(decodeForget(buf, f[1][0]), { lsn: 11, timeMs: 1001, registryVersion: 3, tables: [0, 1, 2, 7], keys: KEYS, everyKey: null });
  assert.deepEqual(decodeForget(buf, f[3][0]), { lsn: 13, timeMs: 1002, registryVersion: 4, tables: [2], keys: ['x'], everyKey: '"x"' });
  assert.equal(WAL_CODEC.lsnOf(buf, f[1][0]), 11);
  assert.equal(buf[f[3][0] + 1 + 20] & FORGET_EVERY_TABLE, FORGET_EVERY_TABLE);
});

test('the structural check refuses truncations, a byte too many, unknown flags, a bad tag and a count past the payload', () => {
  const buf = batch();
  const [b, e] = frames(buf)[1];
  const body = Buffer.from(buf.subarray(b, e));
  assert.ok(forgetWellFormed(body, 0, body.length));
  for (let n = 1; n < body.length; n++) assert.equal(forgetWellFormed(body, 0, n), false, `cut to ${n} bytes`);
  const longer = Buffer.concat([body, Buffer.from([0])]);
  assert.equal(forgetWellFormed(longer, 0, longer.length), false, 'a byte too many');
  const flags = Buffer.from(body);
  flags[1 + 20] = 0x80;
  assert.equal(forgetWellFormed(flags, 0, flags.length), false, 'unknown flag bit');
  const every = Buffer.from(body);
  every[1 + 20] = FORGET_EVERY_TABLE;
  assert.equal(forgetWellFormed(every, 0, every.length), false, 'the flag says a key follows, none does');
  const tag = Buffer.from(body);
  tag[1 + 23 + 2] = 0; // the first key's tag: TAG_ABSENT is no string
  assert.equal(forgetWellFormed(tag, 0, tag.length), false, 'bad string tag');
  const count = Buffer.from(body);
  count[1 + 21] = 5;
  assert.equal(forgetWellFormed(count, 0, count.length), false, 'more entries than the payload holds');
});

test('recovery hands FORGET records over in their place; a malformed one is skipped, not applied; wal-check counts them', () => {
  const dir = tempDir('forget');
  try {
    const wal = join(dir, 'wal');
    const w = WalWriter.open(wal, { segmentBytesMax: 1 << 20, nextLsnHint: 1 });
    const good = batch();
    w.append(good, 10, 13);
    // A FORGET with a valid crc over a payload whose entry count is wrong (written by a bug).
    const bad = new PushFrameWriter(64);
    bad.forget(14, 1003, 4, [0], ['k'], null);
    const b = Buffer.from(bad.take());
    b[FRAME_LENGTH_CRC_BYTES + 1 + 21] = 2;
    sealFrame(b, 0);
    w.append(b, 14, 14);
    w.close();
    const seen: WalRecord[] = [];
    const report = recoverWal(wal, 0, (r) => seen.push(r), { repair: false });
    assert.deepEqual(seen.map((r) => [r.type, r.lsn]), [[RECORD_TYPE_PUSH, 10], [RECORD_TYPE_FORGET, 11], [RECORD_TYPE_INSTALL, 12], [RECORD_TYPE_FORGET, 13]]);
    const f = seen[3];
    assert.ok(f.type === RECORD_TYPE_FORGET);
    assert.equal(f.registryVersion, 4);
    assert.deepEqual(decodeForget(f.buf, f.body).keys, ['x']);
    assert.ok(report.log.some((l) => l.kind === 'malformed_payload'), JSON.stringify(report.log));
    const check = checkWalDir(dir);
    assert.equal(check.types.forget, 2);
    assert.equal(check.types.push, 1);
  } finally {
    cleanup(dir);
  }
});
