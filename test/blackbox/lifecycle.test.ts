/**
 * Process lifecycle over real sockets (src/lifecycle.ts, src/serve_cli.ts):
 * the admin listener binds before recovery (/health 200, /ready 503
 * "recovering", recovery progress logged), /ready says "draining" during a
 * graceful stop and "wal_unavailable" while a shard's WAL fails, a second
 * signal exits at once, and a stop past --shutdown-timeout exits 1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PushFrameWriter, PushRecordReader, RECORD_TYPE_PUSH, recoverWal, sealFrame, WalWriter, type PushRecord } from '../../src/wal';
import { CLI, onJsonLines, post, startServer, tempDataDir } from '../harness/server';

const NODES = [
  { kind: 'event', name: 'Hit', schema: { fields: { user: 'str', v: 'i64' }, optional_fields: [] } },
  { kind: 'table', name: 'Hits', upstreams: ['Hit'], key: ['user'], agg: { n: { op: 'count', params: {} }, total: { op: 'sum', params: { field: 'v', window: 'forever' } } } },
];

async function get(url: string): Promise<{ status: number; json: any }> {
  const res = await fetch(url);
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text) };
}

function exitOf(proc: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null) resolve(proc.exitCode);
    else proc.on('exit', (code) => resolve(code));
  });
}

/** A server process whose JSON log lines are collected; `waitFor` resolves on the first line of a kind. */
function spawnServer(args: string[], env: Record<string, string> = {}): { proc: ChildProcess; logs: Array<Record<string, any>>; waitFor(kind: string, ms?: number): Promise<Record<string, any>> } {
  const proc = spawn(process.execPath, [CLI, 'serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--admin-addr', '127.0.0.1:0', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const logs: Array<Record<string, any>> = [];
  const waiters: Array<{ kind: string; resolve: (l: Record<string, any>) => void }> = [];
  onJsonLines(proc.stdout!, (j) => {
    logs.push(j);
    for (const w of waiters.filter((x) => x.kind === j.kind)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(j); }
  });
  return {
    proc,
    logs,
    waitFor(kind, ms = 60_000) {
      const seen = logs.find((l) => l.kind === kind);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${kind} log line in ${ms} ms`)), ms);
        waiters.push({ kind, resolve: (l) => { clearTimeout(timer); resolve(l); } });
      });
    },
  };
}

const addrOf = (line: Record<string, any>): string => `http://${line.addr as string}`;

/**
 * Appends `count` pushes of other keys to shard 0's WAL, after the real seed push,
 * so recovery takes a while (the test needs a recovery of over a second): PUSH
 * records like the seed's (same event and table, same values), each for a new
 * user, so replay also creates an entity per record.
 */
function growWal(dataDir: string, count: number): void {
  const dir = join(dataDir, 'shard-0', 'wal');
  const seeds: Array<{ timeMs: number; registryVersion: number; eventIndex: number; table: number; values: unknown[] }> = [];
  const rd = new PushRecordReader();
  const report = recoverWal(dir, 0, (r) => {
    if (r.type !== RECORD_TYPE_PUSH) return;
    const p = r as PushRecord;
    rd.open(p.buf, p.body);
    const table = rd.u16();
    rd.str();
    const values = Array.from({ length: rd.u16() }, () => rd.value());
    seeds.push({ timeMs: p.timeMs, registryVersion: p.registryVersion, eventIndex: rd.eventIndex, table, values });
  });
  assert.equal(seeds.length, 1, 'the seed push is in the WAL');
  const s = seeds[0];
  const writer = WalWriter.open(dir, { segmentBytesMax: 64 * 1024 * 1024, nextLsnHint: report.nextLsnMin });
  const w = new PushFrameWriter();
  let lsn = report.nextLsnMin;
  for (let done = 0; done < count;) {
    const first = lsn;
    for (let i = 0; i < 10_000 && done < count; i++, done++) {
      w.begin(lsn++, s.timeMs, s.registryVersion, s.eventIndex, null);
      w.feed(s.table, `u${done}`);
      for (const v of s.values) w.value(v as string | number);
      w.end();
    }
    const bytes = Buffer.from(w.take());
    for (let p = 0; p < bytes.length;) p = sealFrame(bytes, p);
    writer.append(bytes, first, lsn - 1);
  }
  writer.sync();
  writer.close();
}

test('admin binds before recovery: /health 200 and /ready 503 recovering while the WAL replays, with progress lines; then ready', { timeout: 180_000 }, async () => {
  const dataDir = tempDataDir();
  try {
    const seed = await startServer({ dataDir, args: ['--snapshot-interval', '0'] });
    try {
      assert.equal((await post(seed.base, '/register', { nodes: NODES })).status, 200);
      assert.equal((await post(seed.base, '/push', { event: 'Hit', data: { user: 'seed', v: 1 } })).status, 200);
    } finally {
      await seed.kill9();
    }
    const RECORDS = 2_000_000;
    growWal(dataDir, RECORDS);

    const srv = spawnServer(['--data-dir', dataDir, '--shards', '1', '--snapshot-interval', '0']);
    try {
      const admin = addrOf(await srv.waitFor('server.admin_bound'));
      const health = await get(`${admin}/health`);
      const ready = await get(`${admin}/ready`);
      const metrics = await get(`${admin}/metrics`);
      assert.equal(srv.logs.some((l) => l.kind === 'server.http_bound'), false, 'still recovering (data listeners not bound)');
      assert.equal(health.status, 200);
      assert.equal(ready.status, 503);
      assert.equal(ready.json.status, 'recovering');
      assert.equal(typeof ready.json.reason, 'string');
      assert.equal(metrics.status, 503, 'routes that need the running server wait for it');
      await srv.waitFor('server.http_bound', 150_000);
      const after = await get(`${admin}/ready`);
      assert.equal(after.status, 200);
      assert.equal(after.json.status, 'ready');
      const progress = srv.logs.filter((l) => l.kind === 'shard.recovery_progress');
      const recovered = srv.logs.find((l) => l.kind === 'shard.recovered')!;
      assert.ok(Number(recovered.ms) >= 1000, `recovery took ${recovered.ms} ms (the test needs >= 1 s to see progress)`);
      // At least one line per second of replay: more than (ms / 1000) - 1 of them.
      assert.ok(progress.length >= Math.floor(Number(recovered.ms) / 1000) - 1 && progress.length >= 1, `${progress.length} progress lines in ${recovered.ms} ms`);
      for (const p of progress) {
        assert.ok(p.records > 0 && p.records <= RECORDS + 2, JSON.stringify(p));
        assert.ok(p.bytes > 0 && p.bytes <= p.bytes_total, JSON.stringify(p));
        assert.ok(p.percent > 0 && p.percent <= 100, JSON.stringify(p));
      }
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i].records > progress[i - 1].records);
      assert.ok(recovered.records >= RECORDS + 1, `recovered ${recovered.records} records`);
    } finally {
      srv.proc.kill('SIGKILL');
      await exitOf(srv.proc);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('/ready is 503 wal_unavailable while the WAL fails, 200 again after a push succeeds', { timeout: 60_000 }, async () => {
  const dataDir = tempDataDir();
  const fault = join(dataDir, 'fault');
  const srv = await startServer({ dataDir, admin: true, env: { SERVICE_FAULT_WAL_FILE: fault } });
  try {
    assert.equal((await post(srv.base, '/register', { nodes: NODES })).status, 200);
    assert.equal((await post(srv.base, '/push', { event: 'Hit', data: { user: 'a', v: 1 } })).status, 200);
    assert.equal((await get(`${srv.adminBase}/ready`)).status, 200);
    writeFileSync(fault, 'ENOSPC');
    await new Promise((r) => setTimeout(r, 200));
    const failed = await post(srv.base, '/push', { event: 'Hit', data: { user: 'a', v: 1 } });
    assert.equal(failed.json.error.code, 'wal_unavailable', failed.text);
    const notReady = await get(`${srv.adminBase}/ready`);
    assert.equal(notReady.status, 503);
    assert.equal(notReady.json.status, 'wal_unavailable');
    assert.match(notReady.json.reason, /shard 0: .*ENOSPC/);
    assert.equal((await get(`${srv.adminBase}/health`)).status, 200, 'liveness is not readiness');
    unlinkSync(fault);
    await new Promise((r) => setTimeout(r, 200));
    let ok = await post(srv.base, '/push', { event: 'Hit', data: { user: 'a', v: 1 } });
    // The writer abandons a failed segment and opens a new one: allow it one more failure.
    if (ok.status !== 200) ok = await post(srv.base, '/push', { event: 'Hit', data: { user: 'a', v: 1 } });
    assert.equal(ok.status, 200, ok.text);
    const back = await get(`${srv.adminBase}/ready`);
    assert.equal(back.status, 200);
    assert.equal(back.json.status, 'ready');
  } finally {
    await srv.kill9();
    if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
  }
});

/** A server whose shard is stuck in a slow fdatasync (test hook), so a stop has in-flight work to wait for. */
async function stuckServer(extra: string[]): Promise<{ srv: ReturnType<typeof spawnServer>; admin: string; dataDir: string }> {
  const dataDir = tempDataDir();
  const fault = join(dataDir, 'fault');
  const srv = spawnServer(['--data-dir', dataDir, '--shards', '1', '--wal-sync', 'always', '--wal-sync-timeout-ms', '4000', ...extra], { SERVICE_FAULT_WAL_FILE: fault });
  const http = addrOf(await srv.waitFor('server.http_bound'));
  const admin = addrOf(srv.logs.find((l) => l.kind === 'server.admin_bound')!);
  const reg = await post(http, '/register', { nodes: NODES });
  if (reg.status !== 200) srv.proc.kill('SIGKILL');
  assert.equal(reg.status, 200, reg.text);
  writeFileSync(fault, 'SLOW_SYNC');
  await new Promise((r) => setTimeout(r, 200));
  // Not awaited: the shard sleeps 8 s in this push's fdatasync.
  void post(http, '/push', { event: 'Hit', data: { user: 'a', v: 1 } }).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 300));
  return { srv, admin, dataDir };
}

test('a stop signal: /ready says draining; a second signal exits at once', { timeout: 60_000 }, async () => {
  const { srv, admin, dataDir } = await stuckServer([]);
  try {
    srv.proc.kill('SIGTERM');
    await srv.waitFor('server.stopping');
    const draining = await get(`${admin}/ready`);
    assert.equal(draining.status, 503);
    assert.equal(draining.json.status, 'draining');
    assert.equal((await get(`${admin}/health`)).status, 200);
    const t0 = Date.now();
    srv.proc.kill('SIGINT');
    assert.equal(await exitOf(srv.proc), 130);
    assert.ok(Date.now() - t0 < 3000, 'the second signal did not wait for the drain');
    assert.ok(srv.logs.some((l) => l.kind === 'server.stop_forced'));
  } finally {
    srv.proc.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a stop past --shutdown-timeout logs server.stop_deadline and exits 1', { timeout: 60_000 }, async () => {
  const { srv, dataDir } = await stuckServer(['--shutdown-timeout', '500ms']);
  try {
    srv.proc.kill('SIGTERM');
    assert.equal(await exitOf(srv.proc), 1);
    const line = srv.logs.find((l) => l.kind === 'server.stop_deadline');
    assert.ok(line !== undefined);
    assert.equal(line.deadline_ms, 500);
  } finally {
    srv.proc.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});
