/**
 * The server clock's rule (src/clock/server_clock.ts, docs/time.md) on injected
 * wall and monotonic clocks: anchored at the wall clock, never behind the data
 * dir's newest time, follows the wall clock forward and never back, reports jumps
 * of the threshold or more; a random walk of steps against a naive model
 * (server = max(wall, previous server + monotonic elapsed) at each check); and a
 * view in another thread reading the owner's time through the shared buffer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { ServerClock, type ClockJump } from '../../../src/clock';
import { CLOCK_JUMP_THRESHOLD_MS } from '../../../src/limits';
import { prng } from '../../harness/prng';

const H = 3_600_000;
const T0 = 1_800_000_000_000;

/** A wall clock and a monotonic clock the test moves by hand. */
function clocks(): { wall: number; mono: number; clock: ServerClock; advance(ms: number): void } {
  const c = { wall: T0, mono: 5_000.25, clock: null as unknown as ServerClock, advance(ms: number) { c.wall += ms; c.mono += ms; } };
  c.clock = ServerClock.owner({ wallMs: () => c.wall, monoMs: () => c.mono });
  return c;
}

test('anchored at the wall clock, then runs on the monotonic clock between checks', () => {
  const c = clocks();
  assert.equal(c.clock.nowMs(), T0);
  c.advance(1234);
  assert.equal(c.clock.nowMs(), T0 + 1234);
  assert.equal(c.clock.at(c.mono + 10), T0 + 1244, 'at() converts a monotonic reading without reading a clock');
  c.wall += 500; // the wall clock moves; server time only follows it at a check
  assert.equal(c.clock.nowMs(), T0 + 1234);
  assert.equal(c.clock.check(), null, 'a forward move under the threshold is followed quietly');
  assert.equal(c.clock.nowMs(), T0 + 1734);
  assert.equal(c.clock.aheadMs, 0);
});

test('a step back of 1 h: server time keeps running and stays an hour ahead; reported once', () => {
  const c = clocks();
  c.advance(10_000);
  c.wall -= H;
  const j = c.clock.check();
  assert.deepEqual(j, { direction: 'backward', jumpMs: -H, stepMs: 0, aheadMs: H } satisfies ClockJump);
  assert.equal(c.clock.nowMs(), T0 + 10_000, 'not moved back');
  c.advance(2_500);
  assert.equal(c.clock.nowMs(), T0 + 12_500, 'still advancing at the monotonic rate');
  assert.equal(c.clock.check(), null, 'the same gap is not a new jump');
  assert.equal(c.clock.aheadMs, H);
  c.wall -= 200; // a small further step back is absorbed quietly
  assert.equal(c.clock.check(), null);
  assert.equal(c.clock.aheadMs, H + 200);
});

test('a step forward of 1 h: server time follows it, reported once', () => {
  const c = clocks();
  c.advance(3_000);
  c.wall += H;
  assert.deepEqual(c.clock.check(), { direction: 'forward', jumpMs: H, stepMs: H, aheadMs: 0 } satisfies ClockJump);
  assert.equal(c.clock.nowMs(), T0 + 3_000 + H);
  c.advance(1_000);
  assert.equal(c.clock.check(), null);
  assert.equal(c.clock.nowMs(), T0 + 4_000 + H);
});

test('back 1 h, then forward 30 min (still behind), then forward 1 h: server time moves only past where it was', () => {
  const c = clocks();
  c.wall -= H;
  c.clock.check();
  c.wall += H / 2;
  assert.deepEqual(c.clock.check(), { direction: 'forward', jumpMs: H / 2, stepMs: 0, aheadMs: H / 2 } satisfies ClockJump);
  assert.equal(c.clock.nowMs(), T0);
  c.wall += H;
  assert.deepEqual(c.clock.check(), { direction: 'forward', jumpMs: H, stepMs: H / 2, aheadMs: 0 } satisfies ClockJump);
  assert.equal(c.clock.nowMs(), T0 + H / 2);
});

test('raiseTo: never behind the data dir; a wall clock an hour behind it is reported', () => {
  const c = clocks();
  assert.equal(c.clock.raiseTo(T0 - 5), null, 'a floor in the past changes nothing');
  assert.equal(c.clock.nowMs(), T0);
  assert.equal(c.clock.raiseTo(T0 + 300), null, 'a floor under the threshold ahead is taken quietly');
  assert.equal(c.clock.nowMs(), T0 + 300);
  assert.deepEqual(c.clock.raiseTo(T0 + H), { direction: 'backward', jumpMs: -H, stepMs: H - 300, aheadMs: H } satisfies ClockJump);
  assert.equal(c.clock.nowMs(), T0 + H);
  c.advance(700);
  assert.equal(c.clock.check(), null, 'the boot gap is not reported again at the first check');
  assert.equal(c.clock.nowMs(), T0 + H + 700);
  assert.equal(c.clock.aheadMs, H);
});

test('random walks of wall clock steps match the naive rule; server time never goes back', () => {
  for (let seed = 1; seed <= 200; seed++) {
    const r = prng(seed);
    const c = clocks();
    let model = T0;
    let prevWallDrift = c.wall - c.mono; // how far the wall clock is from the monotonic one
    let last = c.clock.nowMs();
    for (let i = 0; i < 200; i++) {
      const dt = Math.floor(r() * 2_000);
      c.advance(dt);
      model += dt;
      const kind = r();
      if (kind < 0.1) c.wall -= Math.floor(r() * 3 * H);
      else if (kind < 0.2) c.wall += Math.floor(r() * 3 * H);
      else if (kind < 0.3) c.wall += Math.floor(r() * 2_000) - 1_000;
      const j = c.clock.check();
      model = Math.max(c.wall, model);
      const wallDrift = c.wall - c.mono;
      const moved = wallDrift - prevWallDrift;
      prevWallDrift = wallDrift;
      const now = c.clock.nowMs();
      assert.equal(now, model, `seed ${seed} step ${i}`);
      assert.ok(now >= last, `seed ${seed} step ${i}: server time went back`);
      assert.equal(j !== null, Math.abs(moved) >= CLOCK_JUMP_THRESHOLD_MS, `seed ${seed} step ${i}: a jump is reported iff the wall moved by the threshold (${moved})`);
      if (j !== null) assert.equal(j.direction, moved > 0 ? 'forward' : 'backward', `seed ${seed} step ${i}: ${JSON.stringify(j)} moved ${moved}`);
      assert.equal(c.clock.aheadMs, now - c.wall);
      last = now;
    }
  }
});

test('a view in the same thread follows every owner update', () => {
  let mono = 100;
  let wall = T0;
  const owner = ServerClock.owner({ wallMs: () => wall, monoMs: () => mono });
  const view = ServerClock.view(owner.shared, { monoMs: () => mono });
  assert.equal(view.nowMs(), T0);
  mono += 50;
  assert.equal(view.nowMs(), T0 + 50);
  wall += 50 + H;
  owner.check();
  assert.equal(view.nowMs(), T0 + 50 + H);
  owner.raiseTo(T0 + 3 * H);
  assert.equal(view.nowMs(), T0 + 3 * H);
  assert.throws(() => view.check(), /owner/);
  assert.throws(() => view.raiseTo(0), /owner/);
});

test('a view in a worker thread (its own performance.now() origin) reads the owner\'s server time', async () => {
  const owner = ServerClock.owner({ wallMs: () => T0 });
  owner.raiseTo(T0 + H); // an offset the worker could not guess from its own wall clock
  const mod = join(__dirname, '..', '..', '..', 'src', 'clock', 'server_clock.js');
  const code = `const { parentPort, workerData } = require('node:worker_threads');
    const { ServerClock } = require(${JSON.stringify(mod)});
    const v = ServerClock.view(workerData);
    parentPort.on('message', () => parentPort.postMessage(v.nowMs()));`;
  const w = new Worker(code, { eval: true, workerData: owner.shared });
  try {
    const ask = (): Promise<number> => new Promise((resolve) => { w.once('message', resolve); w.postMessage(0); });
    for (let i = 0; i < 3; i++) {
      const before = owner.nowMs();
      const seen = await ask();
      const after = owner.nowMs();
      assert.ok(seen >= before - 1 && seen <= after + 1, `worker ${seen} within [${before}, ${after}]`);
      await new Promise((r) => setTimeout(r, 20));
    }
    owner.raiseTo(owner.nowMs() + 10 * H);
    const before = owner.nowMs();
    const seen = await ask();
    assert.ok(seen >= before - 1 && seen <= owner.nowMs() + 1, 'the worker sees the owner move');
  } finally {
    await w.terminate();
  }
});
