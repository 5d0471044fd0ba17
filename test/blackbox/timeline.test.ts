/**
 * The debug timeline on a real server (STREAMFEAT_DEBUG_TIMELINE): the front and the
 * shard thread each write their file; every push appears once among the shard's
 * batch events and the front's answers; bench/timeline.js summarizes them as a
 * closed loop's pipeline and lines up a load client's trace (due and reply times)
 * with them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { post, startServer } from '../harness/server';
import { basicNodes } from './fixtures';
import { TIMELINE_FLUSH_MS } from '../../src/limits';

const TIMELINE_JS = join(__dirname, '..', '..', 'bench', 'timeline.js');
const PUSHES = 60;

function events(file: string): Array<{ t: number; d: number; kind: string; a: number; b: number }> {
  return readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => {
    const [t, d, kind, a, b] = l.split(' ');
    return { t: Number(t), d: Number(d), kind, a: Number(a), b: Number(b) };
  });
}

test('a server started with STREAMFEAT_DEBUG_TIMELINE records its batches; bench/timeline.js summarizes them without a client trace and lines them up with one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-timeline-bb-'));
  const srv = await startServer({ memoryOnly: true, env: { STREAMFEAT_DEBUG_TIMELINE: dir } });
  const lat: string[] = [];
  try {
    const reg = await post(srv.base, '/register', { nodes: basicNodes() });
    assert.equal(reg.status, 200, reg.text);
    for (let i = 0; i < PUSHES; i++) {
      const due = performance.timeOrigin + performance.now();
      const r = await post(srv.base, '/push', { event: 'Txn', data: { user: `u${i % 5}`, card: 'c', amount: i } });
      assert.equal(r.status, 200, r.text);
      lat.push(`${due.toFixed(3)} ${(performance.timeOrigin + performance.now()).toFixed(3)}`);
    }
    // The threads append every TIMELINE_FLUSH_MS; a terminated thread may lose its last ones.
    await new Promise((r) => setTimeout(r, TIMELINE_FLUSH_MS * 2));
  } finally {
    assert.equal(await srv.stop(), 0);
    srv.cleanup();
  }
  try {
    const files = readdirSync(dir);
    const front = files.find((f) => f.startsWith('front-'));
    const shard = files.find((f) => f.startsWith('shard-0-'));
    assert.ok(front !== undefined && shard !== undefined, `files: ${files.join(', ')}`);
    const batches = events(join(dir, shard)).filter((e) => e.kind === 'batch');
    assert.equal(batches.reduce((s, e) => s + e.b, 0), PUSHES, 'every push in exactly one shard batch');
    const fr = events(join(dir, front));
    const sent = fr.filter((e) => e.kind === 'dispatch').reduce((s, e) => s + e.a, 0);
    const answered = fr.filter((e) => e.kind === 'answer').reduce((s, e) => s + e.a, 0);
    assert.equal(answered, sent, 'every dispatched item answered');
    assert.ok(sent >= PUSHES, `the pushes and the registry install were dispatched (${sent})`);
    // No load trace yet: a closed loop's summary (the middle 60% of the batches with pushes).
    const closed = execFileSync(process.execPath, [TIMELINE_JS, dir], { encoding: 'utf8' });
    const head = /^closed loop \(no load trace\): window [0-9.]+ s, middle 60% of the shard's batches with pushes: (\d+) batches, (\d+) pushes/.exec(closed);
    assert.ok(head !== null, closed);
    assert.ok(Number(head[2]) > 0 && Number(head[2]) < PUSHES, closed);
    const pipe = /shard-0 pipeline: applying batches ([0-9.]+)% of the window \(of which waiting for a core [0-9.]+%\), waiting for a core after a batch arrived ([0-9.]+)%, nothing to do ([0-9.-]+)%/.exec(closed);
    assert.ok(pipe !== null, closed);
    assert.ok(Math.abs(Number(pipe[1]) + Number(pipe[2]) + Number(pipe[3]) - 100) < 0.2, closed);
    assert.match(closed, /front dispatches by batches in flight after them: 1: /);
    writeFileSync(join(dir, 'load-1-1.lat'), `${lat.join('\n')}\nlag ${lat[0].split(' ')[0]} ${lat[1].split(' ')[0]}\n`);
    const out = execFileSync(process.execPath, [TIMELINE_JS, dir, '--slow-pct', '10'], { encoding: 'utf8' });
    assert.match(out, new RegExp(`^window [0-9.]+ s, ${PUSHES} requests`));
    assert.match(out, /shard-0:\n {2}batch +\d+ /);
    assert.match(out, /client:\n {2}lag +1 /);
    assert.match(out, /slowest 10% \(6 requests/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
