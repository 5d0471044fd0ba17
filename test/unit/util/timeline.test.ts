/**
 * The debug timeline (src/timeline.ts): off unless STREAMFEAT_DEBUG_TIMELINE was set
 * when the module loaded (so a thread started with it in its env records, and this
 * test process does not); on, a thread's events land in its file as
 * "<start> <duration> <kind> <a> <b>" lines, including GCs and the growth steps of
 * the shard's tables (entity slots, key table, intern rehash).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { startTimeline, timelineFile, TIMELINE_ON, tlNow } from '../../../src/timeline';

const SRC = join(__dirname, '..', '..', '..', 'src');

interface Line { t: number; d: number; kind: string; a: number; b: number }

function lines(file: string): Line[] {
  return readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => {
    const parts = l.split(' ');
    assert.equal(parts.length, 5, `five columns: ${l}`);
    const [t, d, kind, a, b] = parts;
    return { t: Number(t), d: Number(d), kind, a: Number(a), b: Number(b) };
  });
}

test('off by default: no clock read, no file', () => {
  if (process.env.STREAMFEAT_DEBUG_TIMELINE) return; // the suite itself run with a timeline: nothing to check here
  assert.equal(TIMELINE_ON, false);
  assert.equal(tlNow(), 0);
  startTimeline('test');
  assert.equal(timelineFile(), '');
});

test('on in a thread started with STREAMFEAT_DEBUG_TIMELINE: spans, GCs and growth steps in its file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-timeline-'));
  try {
    const code = `
      const { parentPort } = require('node:worker_threads');
      const tl = require(${JSON.stringify(join(SRC, 'timeline.js'))});
      const { EntityIndex } = require(${JSON.stringify(join(SRC, 'shard', 'state', 'entity_index.js'))});
      const { InternTable } = require(${JSON.stringify(join(SRC, 'shard', 'state', 'intern.js'))});
      tl.tlSpan(tl.TL.BATCH, tl.tlNow(), 99, 99); // before start: dropped
      tl.startTimeline('unit');
      tl.startTimeline('again'); // a no-op: one file per thread
      const t0 = tl.tlNow();
      tl.tlSpan(tl.TL.BATCH, t0, 3, 7);
      const index = new EntityIndex();
      for (let i = 0; i < 200; i++) index.add('k' + i, 0, 0);
      const intern = new InternTable();
      for (let i = 0; i < 100; i++) intern.ref('v' + i);
      let keep = [];
      for (let i = 0; i < 2e5; i++) { keep.push({ i }); if (keep.length > 1000) keep = []; } // scavenges
      setTimeout(() => { tl.flushTimeline(); parentPort.postMessage(tl.timelineFile()); }, 50);
    `;
    const w = new Worker(code, { eval: true, env: { ...process.env, STREAMFEAT_DEBUG_TIMELINE: dir } });
    const file = await new Promise<string>((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
    await w.terminate();
    assert.deepEqual(readdirSync(dir), [file.slice(dir.length + 1)]);
    assert.match(file, /unit-\d+-\d+\.tl$/);
    const evs = lines(file);
    const now = Date.now();
    for (const e of evs) {
      assert.ok(e.t > now - 60_000 && e.t <= now, `epoch ms: ${e.t}`);
      assert.ok(e.d >= 0);
    }
    const batches = evs.filter((e) => e.kind === 'batch');
    assert.deepEqual(batches.map((e) => [e.a, e.b]), [[3, 7]], 'the span before startTimeline is not recorded');
    // 200 keys from 64 slots: two doublings (128, 256); the key table resized as it filled.
    assert.deepEqual(evs.filter((e) => e.kind === 'slots_grow').map((e) => e.a), [128, 256]);
    assert.ok(evs.some((e) => e.kind === 'index_resize'), 'key table resize recorded');
    const rehash = evs.filter((e) => e.kind === 'intern_rehash');
    assert.ok(rehash.length >= 2 && rehash.every((e) => e.b <= 100), 'intern rehashes recorded with the value count');
    assert.ok(evs.some((e) => e.kind === 'gc' && e.a === 1), 'scavenges recorded (perf_hooks kind 1)');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('RunQueueProbe: a unit of work that had to share the cores records its run-queue time and its CPU time', async (t) => {
  let schedstat = true;
  try { readFileSync('/proc/thread-self/schedstat'); } catch { schedstat = false; }
  if (!schedstat) { t.skip('no /proc/thread-self/schedstat (not Linux)'); return; }
  const dir = mkdtempSync(join(tmpdir(), 'sf-timeline-runq-'));
  // More spinning threads than cores for the whole unit: the probed thread must wait for a core.
  const spin = `const end = Date.now() + 1500; while (Date.now() < end) {}`;
  const spinners = Array.from({ length: availableParallelism() + 1 }, () => new Worker(spin, { eval: true }));
  try {
    const code = `
      const { parentPort } = require('node:worker_threads');
      const tl = require(${JSON.stringify(join(SRC, 'timeline.js'))});
      tl.startTimeline('runq');
      const probe = new tl.RunQueueProbe();
      const t0 = tl.tlNow();
      probe.start(t0);
      const end = Date.now() + 400;
      while (Date.now() < end) {}
      tl.tlSpan(tl.TL.BATCH, t0, 1, 5);
      probe.end(5);
      tl.flushTimeline();
      parentPort.postMessage(tl.timelineFile());
    `;
    const w = new Worker(code, { eval: true, env: { ...process.env, STREAMFEAT_DEBUG_TIMELINE: dir } });
    const file = await new Promise<string>((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
    await w.terminate();
    const evs = lines(file);
    const batch = evs.find((e) => e.kind === 'batch')!;
    const runq = evs.filter((e) => e.kind === 'runq_batch');
    assert.equal(runq.length, 1, 'one run-queue span for the unit');
    assert.equal(runq[0].t, batch.t, 'it starts with the unit');
    assert.equal(runq[0].b, 5);
    assert.ok(runq[0].d > 20, `waited for a core: ${runq[0].d} ms`);
    assert.ok(runq[0].a > 0 && runq[0].a + runq[0].d <= batch.d + 20, `CPU ${runq[0].a} ms + wait ${runq[0].d} ms within the unit's ${batch.d} ms`);
  } finally {
    await Promise.all(spinners.map((s) => s.terminate()));
    rmSync(dir, { recursive: true, force: true });
  }
});
