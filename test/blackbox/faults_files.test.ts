/**
 * Damaged files, black-box (docs/durability.md "When boot refuses"): register v1,
 * push, register v2, push, kill -9; damage one file the way an operator, a script or
 * a disk does (cut or flip the registry log's last entry, delete or empty it; delete
 * or truncate both snapshots; delete a middle WAL segment, cut one at a record
 * boundary, damage the registry log in the middle); restart. Each case asserts the
 * exact outcome: boot refuses with exit code 2 and the message naming the file and
 * what is missing, and `streamfeat wal-check` reports the same lines with exit code
 * 3; with --accept-data-loss the server starts, logs what was lost, and serves
 * exactly the acknowledged pushes that survived; the next boot needs no flag. A torn
 * tail, the normal crash, is still cut off and the boot goes on.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, onJsonLines, post, startServer, tempDataDir, type TestServer } from '../harness/server';

const EV = { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] } };
const TA = { kind: 'table', name: 'A', upstreams: ['Txn'], key: ['user'], agg: { n: { op: 'count', params: {} } } };
const TB = { kind: 'table', name: 'B', upstreams: ['Txn'], key: ['user'], agg: { n: { op: 'count', params: {} } } };
const TC = { kind: 'table', name: 'C', upstreams: ['Txn'], key: ['user'], agg: { s: { op: 'sum', params: { field: 'amount', window: 'forever' } } } };
const ADVICE = 'restore the data dir from a backup, or start with --accept-data-loss to serve what is left and log what was lost (docs/durability.md "When boot refuses")';
/** 1 KiB segments: a few dozen pushes roll several, so there is a middle one to damage. */
const SMALL = ['--wal-segment-bytes', '1024', '--snapshot-interval', '0'];

async function pushN(srv: TestServer, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await post(srv.base, '/push', { event: 'Txn', data: { user: 'u1', amount: 1 } });
    assert.equal(r.status, 200, r.text);
  }
}

async function count(srv: TestServer, table: string): Promise<number | string> {
  const r = await post(srv.base, '/get', { table, key: 'u1' });
  return r.status === 200 ? (r.json.n ?? r.json.s) : r.json.error.code;
}

/** The data dir every case copies: v1 (Txn, A), 50 pushes, v2 (adds B), 50 pushes, kill -9. */
async function twoVersions(): Promise<string> {
  const srv = await startServer({ args: SMALL });
  assert.equal((await post(srv.base, '/register', { nodes: [EV, TA] })).json.registry_version, 1);
  await pushN(srv, 50);
  assert.equal((await post(srv.base, '/register', { nodes: [TB] })).json.registry_version, 2);
  await pushN(srv, 50);
  await srv.kill9();
  return srv.dataDir;
}

/**
 * 40 pushes and SIGTERM (a snapshot), twice, then 20 pushes and kill -9: the second
 * snapshot lets the first one's segments go, so the WAL starts after lsn 1.
 */
async function compacted(): Promise<string> {
  const dataDir = tempDataDir();
  let srv = await startServer({ dataDir, args: SMALL });
  await post(srv.base, '/register', { nodes: [EV, TA] });
  await pushN(srv, 40);
  assert.equal(await srv.stop(), 0);
  srv = await startServer({ dataDir, args: SMALL });
  await pushN(srv, 40);
  assert.equal(await srv.stop(), 0);
  srv = await startServer({ dataDir, args: SMALL });
  await pushN(srv, 20);
  await srv.kill9();
  return dataDir;
}

interface Boot {
  code: number | null;
  stderr: string;
  logs: Array<Record<string, any>>;
  raw: string[];
}

/** A boot expected to end by itself (refused): exit code, stderr, every stdout line. */
function bootRefused(dataDir: string, args: string[] = []): Promise<Boot> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--data-dir', dataDir, '--shards', '1', ...SMALL, ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Array<Record<string, any>> = [];
  const raw: string[] = [];
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  proc.stdout.on('data', (d) => { raw.push(...String(d).split('\n').filter((l) => l !== '')); });
  onJsonLines(proc.stdout, (j) => logs.push(j));
  const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
  return new Promise((resolve) => proc.on('exit', (code) => { clearTimeout(timer); resolve({ code, stderr, logs, raw }); }));
}

function walCheck(dataDir: string): { code: number | null; out: string } {
  const r = spawnSync(process.execPath, [CLI, 'wal-check', '--data-dir', dataDir], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout + r.stderr };
}

/** Refused with exit 2 and exactly `lines` as the losses; wal-check says the same, exit 3; nothing of the registry log changed. */
async function assertRefused(dataDir: string, lines: string[]): Promise<Boot> {
  const regBefore = readFileSync(join(dataDir, 'registry', 'registry.log'), { flag: 'a+' });
  const b = await bootRefused(dataDir);
  assert.equal(b.code, 2, b.stderr);
  const message = [`data dir ${dataDir}: acknowledged data is lost (${lines.length} finding${lines.length === 1 ? '' : 's'}), refusing to start:`, ...lines.map((l) => `  ${l}`), ADVICE].join('\n');
  assert.equal(b.stderr, `error: ${message}\n`);
  assert.equal(b.logs.filter((l) => l.kind === 'server.boot_refused').length, 1);
  assert.ok(!b.logs.some((l) => l.kind === 'server.http_bound'), 'nothing listened');
  assert.deepEqual(readFileSync(join(dataDir, 'registry', 'registry.log'), { flag: 'a+' }), regBefore, 'a refused boot leaves the registry log as it found it');
  const check = walCheck(dataDir);
  assert.equal(check.code, 3, check.out);
  assert.ok(check.out.includes(message), `wal-check prints the same message:\n${check.out}`);
  return b;
}

function segments(dataDir: string): string[] {
  return readdirSync(join(dataDir, 'shard-0', 'wal')).filter((n) => n.endsWith('.log')).sort();
}

/** Records of a segment file: [offset, end, type, lsn]. */
function frames(path: string): Array<[number, number, number, number]> {
  const b = readFileSync(path);
  const out: Array<[number, number, number, number]> = [];
  for (let o = 0; o + 8 <= b.length;) {
    const end = o + 8 + b.readUInt32LE(o);
    out.push([o, end, b[o + 8], b.readUInt32LE(o + 9)]);
    o = end;
  }
  return out;
}

const PUSH = 4;

/** Starts with --accept-data-loss; checks the accepted-loss lines; returns the server. */
async function accepted(dataDir: string, extra: string[] = []): Promise<TestServer> {
  const srv = await startServer({ dataDir, args: [...SMALL, '--accept-data-loss', ...extra] });
  const summary = srv.logs.filter((l) => l.kind === 'server.data_loss_accepted');
  assert.equal(summary.length, 1, JSON.stringify(srv.logs.filter((l) => (l.level as number) >= 50)));
  assert.ok(srv.logs.some((l) => l.kind === 'wal.data_loss_accepted'));
  return srv;
}

/** After an accepted loss, a boot without the flag is clean: the shard snapshots at boot moved past the loss. */
async function bootsCleanAfter(srv: TestServer): Promise<TestServer> {
  await srv.kill9();
  const again = await startServer({ dataDir: srv.dataDir, args: SMALL });
  assert.ok(!again.logs.some((l) => String(l.kind).startsWith('wal.data_loss') || l.kind === 'server.boot_refused'));
  return again;
}

test('damaged files: every proven loss refuses the boot; --accept-data-loss serves exactly what survived', { concurrency: 3 }, async (t) => {
  const [base, snaps] = await Promise.all([twoVersions(), compacted()]);
  const copy = (from: string): string => {
    const d = tempDataDir();
    cpSync(from, d, { recursive: true });
    return d;
  };
  const regLog = (d: string): string => join(d, 'registry', 'registry.log');
  const v2 = 'registry version v2 missing (the log holds only v1): shard-0 holds 50 pushes and 1 other record under v2 (lsns 52-102)';

  await t.test('registry log cut by 10 bytes: refused; accepted, v2 pushes are gone, v2 is never reused', async () => {
    const d = copy(base);
    const b = readFileSync(regLog(d));
    writeFileSync(regLog(d), b.subarray(0, b.length - 10));
    const refused = await assertRefused(d, [`registry/registry.log: ${v2}`]);
    assert.ok(refused.logs.some((l) => l.kind === 'wal.unknown_registry_version' && l.version === 2 && l.pushes === 50 && l.level === 50));
    const srv = await accepted(d);
    const line = srv.logs.find((l) => l.kind === 'wal.data_loss_accepted')!;
    assert.deepEqual([line.file, line.versions, line.pushes, line.lsn_from, line.lsn_to], ['registry/registry.log', [2], 50, 52, 102]);
    assert.equal(srv.logs.find((l) => l.kind === 'registry.version_raised')?.to, 3);
    assert.equal(await count(srv, 'A'), 50, 'the 50 pushes under v1 survive');
    assert.equal(await count(srv, 'B'), 'unknown_table');
    assert.equal((await post(srv.base, '/register', { nodes: [EV, TA, TC] })).json.registry_version, 4, 'the next register takes a new version, not 2');
    await pushN(srv, 5);
    const again = await bootsCleanAfter(srv);
    assert.deepEqual([await count(again, 'A'), await count(again, 'C')], [55, 5]);
    await again.kill9();
    rmSync(d, { recursive: true, force: true });
  });

  await t.test('a flipped byte in the registry log\'s last entry: the same refusal', async () => {
    const d = copy(base);
    const b = readFileSync(regLog(d));
    b[b.length - 5] ^= 0xff;
    writeFileSync(regLog(d), b);
    await assertRefused(d, [`registry/registry.log: ${v2}`]);
    rmSync(d, { recursive: true, force: true });
  });

  await t.test('registry log deleted or emptied: every version is missing; accepted, the registry restarts empty at v3', async () => {
    const all = 'registry/registry.log: registry versions v1, v2 missing (the log holds no registry version): shard-0 holds 50 pushes and 1 other record under v1 (lsns 1-51); '
      + 'shard-0 holds 50 pushes and 1 other record under v2 (lsns 52-102)';
    const emptied = copy(base);
    writeFileSync(regLog(emptied), '');
    await assertRefused(emptied, [all]);
    rmSync(emptied, { recursive: true, force: true });
    const d = copy(base);
    rmSync(regLog(d));
    const b = await bootRefused(d);
    assert.equal(b.code, 2);
    assert.ok(b.stderr.includes(all));
    assert.equal(walCheck(d).code, 3);
    const srv = await accepted(d);
    assert.equal(await count(srv, 'A'), 'unknown_table', 'no definition survived');
    assert.equal((await post(srv.base, '/register', { nodes: [EV, TA] })).json.registry_version, 4);
    assert.deepEqual((await post(srv.base, '/get', { table: 'A', key: 'u1' })).json, {}, 'registered again, A starts empty: its pushes are lost');
    await srv.kill9();
    rmSync(d, { recursive: true, force: true });
  });

  await t.test('registry log damaged in the middle: refused; accepted, the entries around it still read', async () => {
    const d = copy(base);
    const b = readFileSync(regLog(d));
    const first = 8 + b.readUInt32LE(0);
    b[first + 20] ^= 0xff; // inside the v2 entry, with a valid entry after it
    writeFileSync(regLog(d), Buffer.concat([b, readFileSync(regLog(base)).subarray(first)]));
    const damaged = `registry/registry.log: damaged before its end: ${b.length - first} bytes at offset ${first} (corrupt_record); the entries in them are lost`;
    await assertRefused(d, [damaged]);
    const srv = await accepted(d);
    assert.deepEqual([await count(srv, 'A'), await count(srv, 'B')], [100, 50], 'the copy of v2 after the damage still holds every definition');
    const again = await bootsCleanAfter(srv);
    assert.deepEqual([await count(again, 'A'), await count(again, 'B')], [100, 50]);
    await again.kill9();
    rmSync(d, { recursive: true, force: true });
  });

  const firstKept = (): number => Number(segments(snaps)[0].slice(0, 20));

  await t.test('both snapshots deleted after the WAL was compacted: lsns before the WAL are lost', async () => {
    const d = copy(snaps);
    for (const n of readdirSync(join(d, 'shard-0', 'snapshots'))) rmSync(join(d, 'shard-0', 'snapshots', n));
    const f = firstKept();
    await assertRefused(d, [`shard-0/wal/${segments(d)[0]}: lsns 1-${f - 1} missing: the WAL starts after lsn ${f - 1} and there is no snapshot`]);
    const survivors = segments(d).flatMap((n) => frames(join(d, 'shard-0', 'wal', n))).filter((fr) => fr[2] === PUSH).length;
    const srv = await accepted(d);
    assert.equal(await count(srv, 'A'), survivors);
    assert.ok(survivors >= 20 && survivors < 100, `${survivors} of 100 acked pushes are in the WAL that is left`);
    const line = srv.logs.find((l) => l.kind === 'wal.data_loss_accepted')!;
    assert.deepEqual([line.lsn_from, line.lsn_to], [1, f - 1]);
    const again = await bootsCleanAfter(srv);
    assert.equal(await count(again, 'A'), survivors);
    await again.kill9();
    rmSync(d, { recursive: true, force: true });
  });

  await t.test('both snapshots truncated: the same loss, with why each snapshot was skipped', async () => {
    const d = copy(snaps);
    const dir = join(d, 'shard-0', 'snapshots');
    const names = readdirSync(dir).filter((n) => n.endsWith('.snap')).sort();
    assert.equal(names.length, 2);
    for (const n of names) truncateSync(join(dir, n), 100);
    const f = firstKept();
    const b = await assertRefused(d, [`shard-0/wal/${segments(d)[0]}: lsns 1-${f - 1} missing: the WAL starts after lsn ${f - 1} and no snapshot is readable `
      + `(${names[1]}: length_mismatch, ${names[0]}: length_mismatch)`]);
    assert.equal(b.logs.filter((l) => l.kind === 'wal.snapshot_skipped').length, 2, 'each skipped snapshot is logged, though none verified');
    rmSync(d, { recursive: true, force: true });
  });

  await t.test('a middle segment deleted: its lsns are lost; accepted, every other acked push is served', async () => {
    const d = copy(base);
    const names = segments(d);
    assert.ok(names.length >= 5, names.join());
    const victim = names[2];
    const lost = frames(join(d, 'shard-0', 'wal', victim)).filter((fr) => fr[2] === PUSH);
    rmSync(join(d, 'shard-0', 'wal', victim));
    const from = Number(victim.slice(0, 20));
    const to = Number(names[3].slice(0, 20)) - 1;
    await assertRefused(d, [`shard-0/wal/${names[3]}: lsns ${from}-${to} missing before this segment: it follows lsn ${to}, the WAL before it ends at lsn ${from - 1} (a segment deleted or cut short)`]);
    const srv = await accepted(d);
    assert.equal(await count(srv, 'A'), 100 - lost.length);
    await srv.kill9();
    rmSync(d, { recursive: true, force: true });
  });

  await t.test('a middle segment cut at a record boundary: that record is lost', async () => {
    const d = copy(base);
    const names = segments(d);
    const mid = join(d, 'shard-0', 'wal', names[2]);
    const fr = frames(mid);
    const last = fr[fr.length - 1];
    assert.equal(last[2], PUSH);
    truncateSync(mid, last[0]);
    await assertRefused(d, [`shard-0/wal/${names[3]}: lsn ${last[3]} missing before this segment: it follows lsn ${last[3]}, the WAL before it ends at lsn ${last[3] - 1} (a segment deleted or cut short)`]);
    const srv = await accepted(d);
    assert.equal(await count(srv, 'A'), 99);
    await srv.kill9();
    rmSync(d, { recursive: true, force: true });
  });

  await t.test('at --log-level error the loss is still reported, one level per line', async () => {
    const d = copy(base);
    const names = segments(d);
    rmSync(join(d, 'shard-0', 'wal', names[2]));
    const b = await bootRefused(d, ['--log-level', 'error']);
    assert.equal(b.code, 2);
    const kinds = b.logs.map((l) => l.kind);
    assert.ok(kinds.includes('wal.data_loss') && kinds.includes('server.boot_refused'), kinds.join());
    for (const line of b.raw) assert.equal(line.match(/"level":/g)?.length, 1, line);
    rmSync(d, { recursive: true, force: true });
  });

  await t.test('a torn tail (the crash case) is still cut off and the boot goes on', async () => {
    const d = copy(base);
    const names = segments(d);
    const tail = join(d, 'shard-0', 'wal', names[names.length - 1]);
    truncateSync(tail, readFileSync(tail).length - 3);
    const check = walCheck(d);
    assert.equal(check.code, 1, check.out);
    assert.match(check.out, /note: shard-0\/wal\/\d{20}\.log: torn tail: \d+ bytes at offset \d+ \(recovery cuts them off\); an unfinished write, never acknowledged/);
    assert.match(check.out, /data loss: none/);
    const srv = await startServer({ dataDir: d, args: SMALL });
    const torn = srv.logs.find((l) => l.kind === 'wal.torn_tail');
    assert.equal(torn?.level, 40);
    assert.deepEqual([await count(srv, 'A'), await count(srv, 'B')], [99, 49], 'only the torn last push is gone');
    await srv.kill9();
    assert.equal(walCheck(d).code, 0, 'the tail was cut: clean');
    rmSync(d, { recursive: true, force: true });
  });

  rmSync(base, { recursive: true, force: true });
  rmSync(snaps, { recursive: true, force: true });
});

test('a snapshot taken under a version the registry log lost: refused; accepted, it restores what the log still defines', async () => {
  const dataDir = tempDataDir();
  const srv = await startServer({ dataDir, args: SMALL });
  await post(srv.base, '/register', { nodes: [EV, TA] });
  await pushN(srv, 50);
  await post(srv.base, '/register', { nodes: [TB] });
  await pushN(srv, 50);
  assert.equal(await srv.stop(), 0); // the shutdown snapshot, under v2
  const snap = readdirSync(join(dataDir, 'shard-0', 'snapshots')).find((n) => n.endsWith('.snap'))!;
  const reg = join(dataDir, 'registry', 'registry.log');
  const b = readFileSync(reg);
  writeFileSync(reg, b.subarray(0, b.length - 10));
  await assertRefused(dataDir, [`registry/registry.log: registry version v2 missing (the log holds only v1): shard-0/snapshots/${snap} was taken under v2`]);
  const acc = await accepted(dataDir);
  assert.deepEqual([await count(acc, 'A'), await count(acc, 'B')], [100, 'unknown_table'], 'A is defined alike under v1: its state in the snapshot survives whole');
  const again = await bootsCleanAfter(acc);
  assert.equal(await count(again, 'A'), 100);
  await again.kill9();
  rmSync(dataDir, { recursive: true, force: true });
});

test('a failing disk logs wal.write_failed in full once, counts the rest, and one line when writes work again', async () => {
  const fault = join(tempDataDir(), 'fault');
  const srv = await startServer({ args: SMALL, env: { SERVICE_FAULT_WAL_FILE: fault } });
  try {
    await post(srv.base, '/register', { nodes: [EV, TA] });
    writeFileSync(fault, 'ENOSPC');
    await new Promise((r) => setTimeout(r, 100));
    for (let i = 0; i < 30; i++) {
      const r = await post(srv.base, '/push', { event: 'Txn', data: { user: 'u1', amount: 1 } });
      assert.equal(r.json.error?.code, 'wal_unavailable', r.text);
    }
    rmSync(fault);
    // The fault file is polled: on a loaded machine a push right after removing it may
    // still fail. Each such push is one more failed batch in the streak.
    let failures = 30;
    for (;;) {
      const r = await post(srv.base, '/push', { event: 'Txn', data: { user: 'u1', amount: 1 } });
      if (r.status === 200) break;
      assert.equal(r.json.error?.code, 'wal_unavailable', r.text);
      failures++;
      await new Promise((res) => setTimeout(res, 20));
    }
    await new Promise((r) => setTimeout(r, 200));
    const failed = srv.logs.filter((l) => l.kind === 'wal.write_failed');
    assert.equal(failed.length, 1, 'one line for 30 failed batches (the next would come after WAL_ERROR_LOG_INTERVAL_MS)');
    assert.equal(failed[0].level, 50);
    assert.match(String((failed[0].err as { message?: string })?.message), /ENOSPC/);
    const recovered = srv.logs.filter((l) => l.kind === 'wal.write_recovered');
    assert.equal(recovered.length, 1);
    // At least every refused push; one more when a batch of another kind (the register's
    // INSTALL, answered before every shard wrote it) met the fault too.
    const streak = Number(recovered[0].failures);
    assert.ok(streak >= failures && streak <= failures + 1, `streak ${streak}, refused pushes ${failures}`);
    assert.equal(recovered[0].unlogged, streak - 1);
  } finally {
    await srv.kill9();
    srv.cleanup();
  }
});
