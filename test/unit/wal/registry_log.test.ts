import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RegistryLog, WalCorruptionError, checkRegistryLog, faultyFs, realFs } from '../../../src/wal';
import { cleanup, tempDir } from './helpers';

/** Opens, closes, and returns the entries. */
function readEntries(path: string): unknown[] {
  const r = RegistryLog.open(path);
  r.log.close();
  return r.entries;
}

const entries = [
  { new_version: 1, nodes: [{ kind: 'event', name: 'pay' }] },
  { new_version: 2, nodes: [{ kind: 'table', name: 'by_user', note: 'ünïcode 😀' }] },
  { new_version: 3, reset: true },
];

test('append and reopen returns the entries in order', () => {
  const dir = tempDir('reglog');
  try {
    const path = join(dir, 'coordinator', 'registry.log');
    const first = RegistryLog.open(path);
    assert.deepEqual(first.entries, []);
    for (const e of entries) first.log.append(e);
    first.log.close();
    const again = RegistryLog.open(path);
    assert.deepEqual(again.entries, entries);
    assert.equal(again.truncatedBytes, 0);
    again.log.append({ new_version: 4 });
    again.log.close();
    assert.deepEqual(readEntries(path), [...entries, { new_version: 4 }]);
  } finally {
    cleanup(dir);
  }
});

test('a torn tail is cut at open at every cut point of the last entry', () => {
  const dir = tempDir('regtorn');
  try {
    const path = join(dir, 'registry.log');
    const o = RegistryLog.open(path);
    for (const e of entries) o.log.append(e);
    o.log.close();
    const full = readFileSync(path);
    const lastStart = full.length - (9 + Buffer.byteLength(JSON.stringify(entries[2])));
    for (let cut = lastStart + 1; cut < full.length; cut++) {
      writeFileSync(path, full.subarray(0, cut));
      const r = RegistryLog.open(path);
      assert.deepEqual(r.entries, entries.slice(0, 2), `cut at ${cut}`);
      assert.equal(r.truncatedBytes, cut - lastStart);
      r.log.append({ after: cut });
      r.log.close();
      const back = RegistryLog.open(path);
      back.log.close();
      assert.deepEqual(back.entries.slice(2), [{ after: cut }]);
    }
  } finally {
    cleanup(dir);
  }
});

test('damage followed by valid entries throws WalCorruptionError (never silently skipped)', () => {
  const dir = tempDir('regcorrupt');
  try {
    const path = join(dir, 'registry.log');
    const o = RegistryLog.open(path);
    for (const e of entries) o.log.append(e);
    o.log.close();
    const buf = readFileSync(path);
    buf[12] ^= 0x20; // inside the first entry's JSON
    writeFileSync(path, buf);
    assert.throws(() => RegistryLog.open(path), (e: unknown) => e instanceof WalCorruptionError && e.kind === 'corrupt_record' && e.offset === 0);
    assert.equal(checkRegistryLog(path).ok, false);
    assert.match(checkRegistryLog(path).corruption, /corrupt_record/);
    assert.equal(readFileSync(path).length, buf.length, 'nothing was modified');
  } finally {
    cleanup(dir);
  }
});

test('rewrite replaces the log atomically and appends continue after it', () => {
  const dir = tempDir('regrewrite');
  try {
    const path = join(dir, 'registry.log');
    const o = RegistryLog.open(path);
    for (const e of entries) o.log.append(e);
    o.log.rewrite([{ compacted: true, version: 3 }]);
    o.log.append({ new_version: 4 });
    o.log.close();
    assert.deepEqual(readEntries(path), [{ compacted: true, version: 3 }, { new_version: 4 }]);
    const r = RegistryLog.open(path);
    r.log.rewrite([]);
    r.log.close();
    assert.deepEqual(readEntries(path), []);
    assert.equal(statSync(path).size, 0);
  } finally {
    cleanup(dir);
  }
});

test('a failed append (write or fdatasync) leaves no trace of the entry', () => {
  const dir = tempDir('regfail');
  try {
    const path = join(dir, 'registry.log');
    const fs = faultyFs(realFs);
    const o = RegistryLog.open(path, { fs });
    o.log.append(entries[0]);
    fs.failWrites('ENOSPC');
    assert.throws(() => o.log.append(entries[1]), (e: NodeJS.ErrnoException) => e.code === 'ENOSPC');
    fs.failWrites(null);
    fs.failSyncs('EIO');
    assert.throws(() => o.log.append(entries[1]), (e: NodeJS.ErrnoException) => e.code === 'EIO');
    fs.failSyncs(null);
    o.log.append(entries[2]);
    o.log.close();
    assert.deepEqual(readEntries(path), [entries[0], entries[2]]);
  } finally {
    cleanup(dir);
  }
});

test('a failed rewrite keeps the old log intact', () => {
  const dir = tempDir('regrwfail');
  try {
    const path = join(dir, 'registry.log');
    const fs = faultyFs(realFs);
    const o = RegistryLog.open(path, { fs });
    for (const e of entries) o.log.append(e);
    fs.failSyncs('EIO');
    assert.throws(() => o.log.rewrite([{ x: 1 }]));
    fs.failSyncs(null);
    o.log.append({ y: 2 });
    o.log.close();
    assert.deepEqual(readEntries(path), [...entries, { y: 2 }]);
  } finally {
    cleanup(dir);
  }
});
