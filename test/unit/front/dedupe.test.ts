/**
 * Dedupe windows on the front (front/dedupe.ts) count on the monotonic clock:
 * an entry claimed at monotonic `now` is remembered until `now + window` and
 * forgotten then, whatever the wall clock does meanwhile (the black-box side is
 * test/blackbox/faults_clock.test.ts); at boot a recovered entry is remembered for
 * what is left of its window at the boot's server time, never more than a window.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PushDedupe, type DedupeHost } from '../../../src/front/dedupe';
import { Metrics } from '../../../src/admin/metrics';
import type { Reply } from '../../../src/front/reply';
import type { CompiledRegistry, EventPlan } from '../../../src/registry/compile';
import type { Logger } from '../../../src/log';

const WINDOW_MS = 60_000;
const PLAN = { name: 'Pay', dedupeField: 'id', dedupeWindowMs: WINDOW_MS } as unknown as EventPlan;

function dedupe(): { d: PushDedupe; answers: string[]; reply: Reply } {
  const answers: string[] = [];
  const host: DedupeHost = {
    registry: { events: new Map([['Pay', PLAN]]) } as unknown as CompiledRegistry,
    metrics: new Metrics(),
    log: { warn: () => {} } as unknown as Logger,
    fail: (_r, e) => { answers.push(e.code); },
  };
  const reply = { ok: (body: string) => { answers.push(body); } } as unknown as Reply;
  return { d: new PushDedupe(host), answers, reply };
}

test('a claimed value is replayed until its window has passed on the monotonic clock, then forgotten', () => {
  const { d, answers, reply } = dedupe();
  const e = d.claim(PLAN, 'x', 1_000, reply);
  assert.ok(e !== null);
  assert.equal(e.expiresMs, 1_000 + WINDOW_MS);
  d.acked(e, 7, 1);
  assert.equal(d.claim(PLAN, 'x', 1_000 + WINDOW_MS - 1, reply), null, 'a replay inside the window');
  assert.deepEqual(answers, ['{"ack_lsn":7,"registry_version":1,"idempotent_replay":true}']);
  const again = d.claim(PLAN, 'x', 1_000 + WINDOW_MS, reply);
  assert.ok(again !== null, 'a new claim once the window is over');
  d.store.sweep(1_000 + 2 * WINDOW_MS);
  assert.equal(d.store.size, 0, 'swept at the end of its window');
});

test('reseed: what is left of each window at the boot\'s server time, from now on the monotonic clock', () => {
  const { d, reply } = dedupe();
  const boot = 1_800_000_000_000;
  const now = 42.5;
  d.reseed([
    ['Pay', 'left-40s', 3, 1, boot - 20_000],
    ['Pay', 'expired', 4, 1, boot - WINDOW_MS],
    ['Pay', 'at-boot', 5, 1, boot],
    ['Pay', 'future', 6, 1, boot + 10 * WINDOW_MS], // server time is never behind a recovered time; were it, a window still lasts one window
    ['Other', 'unknown-event', 7, 1, boot],
  ], boot, now);
  assert.equal(d.store.size, 3);
  assert.equal(d.store.lookup('Pay', 'left-40s', now)!.expiresMs, now + 40_000);
  assert.equal(d.store.lookup('Pay', 'expired', now), null);
  assert.equal(d.store.lookup('Pay', 'at-boot', now)!.expiresMs, now + WINDOW_MS);
  assert.equal(d.store.lookup('Pay', 'future', now)!.expiresMs, now + WINDOW_MS);
  assert.equal(d.claim(PLAN, 'left-40s', now + 39_999, reply), null, 'replayed with its recovered ack');
  assert.ok(d.claim(PLAN, 'left-40s', now + 40_000, reply) !== null);
});
