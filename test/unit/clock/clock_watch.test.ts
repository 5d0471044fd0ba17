/**
 * The owner's watch (src/clock/clock_watch.ts): one server.clock_jump warn line
 * and one count per jump, none for quiet moves; and the test hook
 * (src/clock/clock_fault.ts): Date.now() shifted by the ms read from a file, 0
 * when the file is missing or not an integer, given back at uninstall.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClockFault, ClockWatch, ServerClock } from '../../../src/clock';
import type { Logger } from '../../../src/log';

const H = 3_600_000;

function watched(): { lines: Array<Record<string, unknown>>; counters: { clockJumpsForwardTotal: number; clockJumpsBackwardTotal: number }; watch: ClockWatch; set(ms: number): void } {
  let wall = 1_800_000_000_000;
  let mono = 0;
  const lines: Array<Record<string, unknown>> = [];
  const log = { warn: (o: Record<string, unknown>, msg: string) => lines.push({ ...o, msg }) } as unknown as Logger;
  const counters = { clockJumpsForwardTotal: 0, clockJumpsBackwardTotal: 0 };
  const clock = ServerClock.owner({ wallMs: () => wall, monoMs: () => mono });
  return { lines, counters, watch: new ClockWatch(clock, counters, log), set(ms) { wall += 1000 + ms; mono += 1000; } };
}

test('a jump each way: one warn line and one count each; quiet moves log nothing', () => {
  const w = watched();
  w.set(300);
  w.watch.check();
  assert.equal(w.lines.length, 0);
  w.set(-H);
  w.watch.check();
  w.watch.check();
  w.set(H + 5_000);
  w.watch.check();
  assert.deepEqual(w.counters, { clockJumpsForwardTotal: 1, clockJumpsBackwardTotal: 1 });
  assert.equal(w.lines.length, 2);
  assert.deepEqual({ ...w.lines[0], msg: undefined }, { kind: 'server.clock_jump', at: 'running', direction: 'backward', jump_ms: -H, step_ms: 0, server_ahead_ms: H, threshold_ms: 1000, msg: undefined });
  assert.match(String(w.lines[0].msg), /keeps running on the monotonic clock/);
  assert.deepEqual({ ...w.lines[1], msg: undefined }, { kind: 'server.clock_jump', at: 'running', direction: 'forward', jump_ms: H + 5_000, step_ms: 5_000, server_ahead_ms: 0, threshold_ms: 1000, msg: undefined });
});

test('boot behind the data dir: one line with at=boot', () => {
  const w = watched();
  w.watch.raiseTo(1_800_000_000_000 + H);
  assert.equal(w.counters.clockJumpsBackwardTotal, 1);
  assert.equal(w.lines[0].at, 'boot');
  assert.equal(w.lines[0].server_ahead_ms, H);
  assert.match(String(w.lines[0].msg), /data dir/);
});

test('the clock fault file: Date.now() shifted by an integer, re-read; anything else is 0; given back', () => {
  assert.equal(ClockFault.install(null), null, 'unset: nothing installed');
  const dir = mkdtempSync(join(tmpdir(), 'clock-fault-'));
  const realNow = Date.now;
  try {
    const file = join(dir, 'offset');
    writeFileSync(file, '-3600000\n');
    const f = ClockFault.install(file)!;
    assert.equal(f.skewMs, -H, 'read at once, before any timer');
    const d = Date.now() - realNow();
    assert.ok(d <= -H + 1 && d >= -H - 1, `Date.now() is shifted (${d})`);
    writeFileSync(file, 'soon');
    f.poll();
    assert.equal(f.skewMs, 0, 'not an integer');
    writeFileSync(file, '42');
    f.poll();
    assert.equal(f.skewMs, 42);
    unlinkSync(file);
    f.poll();
    assert.equal(f.skewMs, 0, 'file removed');
    f.uninstall();
    assert.equal(Date.now, realNow, 'Date.now given back');
  } finally {
    Date.now = realNow;
    rmSync(dir, { recursive: true, force: true });
  }
});
