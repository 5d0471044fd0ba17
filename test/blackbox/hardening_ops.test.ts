/**
 * Issue 11, finding 9 replayed with real processes: one server per data dir
 * (a lock, taken over after kill -9), one server per port (HTTP, TCP and admin
 * listen exclusively), logging that never blocks (stdout piped to a reader that
 * stopped reading), and a CLI that exits quietly when its reader goes away.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, post, startServer, tempDataDir, type TestServer } from '../harness/server';

const NODES = [
  { kind: 'event', name: 'Txn', schema: { fields: { user: 'str' }, optional_fields: [] } },
  { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' } } },
];

/** How long a server that must refuse to start may take to say so (boot is ~1 s; the box may be loaded). */
const REFUSE_WITHIN_MS = 30_000;

/** Runs the CLI (or `cmd`) to its exit; returns the code and stderr. */
function runToExit(args: string[], env: Record<string, string> = {}, cmd: [string, ...string[]] = [process.execPath, CLI]): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd[0], [...cmd.slice(1), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let stdout = '';
    p.stderr.on('data', (d) => { stderr += d; });
    p.stdout.on('data', (d) => { stdout += d; });
    const t = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`still running after ${REFUSE_WITHIN_MS} ms: ${args.join(' ')}`)); }, REFUSE_WITHIN_MS);
    p.on('exit', (code) => { clearTimeout(t); resolve({ code, stderr, stdout }); });
  });
}

const serveArgs = (dataDir: string, extra: string[] = []): string[] =>
  ['serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--data-dir', dataDir, '--shards', '1', ...extra];

async function count(srv: TestServer, user: string): Promise<unknown> {
  return (await post(srv.base, '/get', { table: 'UserT', key: user })).json;
}

describe('one server per data dir', () => {
  let dataDir: string;
  let first: TestServer;
  before(async () => {
    dataDir = tempDataDir();
    first = await startServer({ dataDir });
    assert.equal((await post(first.base, '/register', { nodes: NODES })).status, 200);
    for (let i = 0; i < 3; i++) assert.equal((await post(first.base, '/push', { event: 'Txn', data: { user: 'u1' } })).status, 200);
  });
  after(async () => { await first.stop(); first.cleanup(); });

  test('a second server on the same data dir exits with code 2 naming the holder\'s pid; the first keeps serving', async () => {
    const lock = JSON.parse(readFileSync(join(dataDir, 'streamfeat.lock'), 'utf8'));
    assert.equal(lock.pid, first.proc.pid);
    const second = await runToExit(serveArgs(dataDir));
    assert.equal(second.code, 2, second.stderr);
    assert.match(second.stderr, new RegExp(`in use by another streamfeat server \\(pid ${first.proc.pid}`));
    assert.doesNotMatch(second.stderr, /\n\s+at /, 'a message, not a stack trace');
    assert.deepEqual(await count(first, 'u1'), { cnt: 3 });
    assert.equal((await post(first.base, '/push', { event: 'Txn', data: { user: 'u1' } })).status, 200);
  });

  test('after kill -9 the stale lock is taken over: the restarted server recovers everything; a clean stop removes the lock', async () => {
    await first.kill9();
    assert.ok(existsSync(join(dataDir, 'streamfeat.lock')), 'kill -9 leaves the lock behind');
    first = await startServer({ dataDir });
    assert.deepEqual(await count(first, 'u1'), { cnt: 4 });
    await first.stop();
    assert.equal(existsSync(join(dataDir, 'streamfeat.lock')), false);
    first = await startServer({ dataDir });
    assert.deepEqual(await count(first, 'u1'), { cnt: 4 });
  });
});

describe('one server per port', () => {
  let srv: TestServer;
  before(async () => { srv = await startServer({ memoryOnly: true, admin: true }); });
  after(async () => { await srv.stop(); srv.cleanup(); });

  test('HTTP, TCP and admin ports in use: exit code 2 with a clear message; the first server keeps serving', async () => {
    const adminPort = Number(new URL(srv.adminBase!).port);
    const cases: Array<[string[], RegExp]> = [
      [['--http-addr', `127.0.0.1:${srv.httpPort}`], new RegExp(`cannot listen for HTTP on 127\\.0\\.0\\.1:${srv.httpPort}: the port is in use`)],
      [['--tcp-addr', `127.0.0.1:${srv.tcpPort}`], new RegExp(`cannot listen for TCP on 127\\.0\\.0\\.1:${srv.tcpPort}: the port is in use`)],
      [['--admin-addr', `127.0.0.1:${adminPort}`], new RegExp(`cannot listen for admin on 127\\.0\\.0\\.1:${adminPort}: the port is in use`)],
    ];
    for (const [flags, message] of cases) {
      const r = await runToExit(['serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--memory-only', '--shards', '1', ...flags]);
      assert.equal(r.code, 2, `${flags.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
    }
    assert.equal((await post(srv.base, '/ping', {})).status, 200);
  });
});

describe('logging never blocks', () => {
  test('stdout piped to a reader that stops reading: /register and /reset keep answering, /ping stays fast, SIGTERM stops the server', async () => {
    const proc = spawn(process.execPath, [CLI, ...serveArgs(tempDataDir(), ['--memory-only', '--test-mode'])], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => proc.once('exit', (c) => r(c)));
    let port = 0;
    await new Promise<void>((resolve, reject) => {
      let buf = '';
      const t = setTimeout(() => reject(new Error('no bound lines')), 30_000);
      const onData = (d: Buffer): void => {
        buf += d.toString();
        const m = /"kind":"server\.http_bound","addr":"[^"]*:(\d+)"/.exec(buf);
        if (m !== null && buf.includes('server.tcp_bound')) {
          clearTimeout(t);
          port = Number(m[1]);
          proc.stdout!.off('data', onData);
          proc.stdout!.pause(); // from here on nobody reads: the 64 KB pipe fills
          resolve();
        }
      };
      proc.stdout!.on('data', onData);
    });
    const base = `http://127.0.0.1:${port}`;
    // Each register logs its added names: 100 names of ~120 bytes, ~12 KB a line. 30 rounds
    // write ~400 KB, six times the pipe; the synchronous logger hung at the fifth or sixth.
    const long = 'x'.repeat(110);
    for (let round = 0; round < 30; round++) {
      const nodes = Array.from({ length: 100 }, (_, j) => ({ kind: 'event', name: `E${round}_${j}_${long}`, schema: { fields: { a: 'str' }, optional_fields: [] } }));
      const r = await post(base, '/register', { nodes }, {});
      assert.equal(r.status, 200, r.text);
      const ping = performance.now();
      assert.equal((await post(base, '/ping', {})).status, 200);
      assert.ok(performance.now() - ping < 1000, 'ping');
      if (round % 5 === 4) assert.equal((await post(base, '/reset', {})).status, 200);
    }
    proc.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('still running'), 20_000))]);
    if (code === 'still running') proc.kill('SIGKILL');
    assert.equal(code, 0, 'SIGTERM stops the server although its stdout is not read');
  });
});

describe('the CLI and a reader that goes away', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startServer({ memoryOnly: true });
    // A registry big enough that `registry` prints far more than one pipe buffer.
    const nodes = Array.from({ length: 600 }, (_, j) => ({ kind: 'event', name: `Ev${j}_${'y'.repeat(100)}`, schema: { fields: { a: 'str', b: 'f64' }, optional_fields: ['b'] } }));
    assert.equal((await post(srv.base, '/register', { nodes })).status, 200);
  });
  after(async () => { await srv.stop(); srv.cleanup(); });

  test('`streamfeat registry | head -c1` exits quietly: no EPIPE stack', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const p = spawn('sh', ['-c', `"${process.execPath}" "${CLI}" registry --json --url ${srv.base} | head -c1 >/dev/null; exit 0`], { stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        p.stderr.on('data', (d) => { stderr += d; });
        p.on('exit', (code) => resolve({ code, stderr }));
      });
      assert.equal(r.stderr, '', 'nothing on stderr');
    }
  });
  test('`npm run bench -- list | true` and a baseline with a bad flag: no EPIPE stack, one line, exit 2', async () => {
    // `true` exits without reading: every write of the bench runner hits a closed pipe.
    const bench = join(__dirname, '..', '..', 'bench');
    const r = await runToExit(['-c', `"${process.execPath}" "${join(bench, 'run.js')}" list | true; exit 0`], {}, ['sh']);
    assert.equal(r.stderr, '', 'nothing on stderr');
    const b = await runToExit(['--tcp-addr', 'nowhere'], {}, [process.execPath, join(bench, 'baseline', 'tcp_echo.js')]);
    assert.equal(b.code, 2);
    assert.equal(b.stderr, 'tcp_echo: --tcp-addr HOST:PORT is required\n');
  });
});
