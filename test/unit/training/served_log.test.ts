/**
 * The served-row log's writer: lines reach the files in order and whole, files rotate
 * past their size and the oldest go past the retention count, a writer that is behind
 * drops and counts lines instead of queueing them, a restart starts a new file, and the
 * line format (servedLine) is what docs/training.md shows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { servedFileName, servedLine, ServedRowLog } from '../../../src/training/served_log';

const log = pino({ level: 'silent' });

function files(dir: string): string[] {
  return readdirSync(dir).filter((n) => n.endsWith('.ndjson')).sort();
}

test('servedLine writes the documented fields, the row as given', () => {
  assert.equal(servedLine(5, '"T"', '"k"', 2, 9, null, '{"n":1}', null, -1), '{"time_ms":5,"table":"T","key":"k","registry_version":2,"lsn":9,"row":{"n":1}}\n');
  assert.equal(servedLine(5, '"T"', '["a","b"]', 2, -1, '["n"]', '{"n":1}', '"r1"', 3),
    '{"time_ms":5,"table":"T","key":["a","b"],"registry_version":2,"lsn":null,"features":["n"],"row":{"n":1},"request_id":"r1","batch_index":3}\n');
});

test('lines arrive whole and in order; files rotate past their size; the oldest go past the count', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'served-log-'));
  try {
    const w = ServedRowLog.open({ dir, sample: 1, tables: null, fileBytesMax: 4096, filesKept: 3 }, log);
    const lines: string[] = [];
    for (let i = 0; i < 400; i++) {
      const line = servedLine(1000 + i, '"T"', `"k${i}"`, 1, i, null, `{"i":${i},"pad":"${'x'.repeat(40)}"}`, null, -1);
      lines.push(line);
      w.append(line);
      if (i % 50 === 49) await new Promise((r) => setImmediate(r)); // several turns, several writes
    }
    await w.close();
    assert.equal(w.lines, 400);
    assert.equal(w.dropped, 0);
    const kept = files(dir);
    assert.equal(kept.length, 3, kept.join(','));
    // What is kept is the tail of what was written, in order, every file but the last at least fileBytesMax.
    const text = kept.map((f) => readFileSync(join(dir, f), 'utf8')).join('');
    assert.ok(lines.join('').endsWith(text));
    assert.ok(text.startsWith('{"time_ms":'));
    for (const f of kept.slice(0, -1)) assert.ok(readFileSync(join(dir, f)).length >= 4096);
    assert.equal(w.bytes, Buffer.byteLength(lines.join('')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a writer that is behind drops and counts lines; the front never waits', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'served-log-'));
  try {
    const w = ServedRowLog.open({ dir, sample: 1, tables: null, fileBytesMax: 1 << 30, filesKept: 2, pendingBytesMax: 1000 }, log);
    const line = servedLine(1, '"T"', '"k"', 1, 1, null, `{"pad":"${'y'.repeat(80)}"}`, null, -1);
    // One turn: nothing can be written yet, so past ~1000 units every line is dropped.
    for (let i = 0; i < 100; i++) w.append(line);
    await w.close();
    assert.equal(w.lines + w.dropped, 100);
    assert.equal(w.lines, Math.floor(1000 / line.length));
    assert.equal(readFileSync(join(dir, files(dir)[0]), 'utf8'), line.repeat(w.lines));
    w.append(line); // after close: dropped, never written
    assert.equal(w.dropped, 100 - w.lines + 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a restart starts the next file; sampling follows the table list and rates', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'served-log-'));
  try {
    const a = ServedRowLog.open({ dir, sample: 1, tables: null, fileBytesMax: 1 << 20, filesKept: 5 }, log);
    await a.close();
    const b = ServedRowLog.open({ dir, sample: 0.5, tables: new Map([['A', 1], ['B', 0.25]]), fileBytesMax: 1 << 20, filesKept: 5 }, log);
    assert.deepEqual(files(dir), [servedFileName(1), servedFileName(2)]);
    assert.equal(b.rateOf('A'), 1);
    assert.equal(b.rateOf('C'), 0);
    let hits = 0;
    for (let i = 0; i < 4000; i++) if (b.sampled('B')) hits++;
    assert.ok(hits > 800 && hits < 1200, `sampled ${hits} of 4000 at 0.25`);
    assert.equal(b.sampled('C'), false);
    await b.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
