/**
 * Restarting at once after `kill -9`: the killed server's lock must be taken over
 * even while the dead process still exists (a zombie its parent has not reaped
 * yet, or one still tearing down with SIGKILL pending), and everything acked
 * before the kill is there after the restart.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { CLI, onJsonLines, post, startServer, tempDataDir, type TestServer } from '../harness/server';

const NODES = [
  { kind: 'event', name: 'Txn', schema: { fields: { user: 'str' }, optional_fields: [] } },
  { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' } } },
];
const ROUNDS = 4;

const parents: ChildProcess[] = [];
after(() => { for (const p of parents) p.kill('SIGKILL'); });

function procState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2];
  } catch {
    return null;
  }
}

/**
 * Starts a server whose parent never reaps it: `sh` starts it in the background and
 * then becomes `sleep`, so after kill -9 the server stays a zombie until the test ends.
 */
function startUnreaped(dataDir: string): Promise<{ pid: number; base: string }> {
  const script = `"${process.execPath}" "${CLI}" serve --http-addr 127.0.0.1:0 --tcp-addr 127.0.0.1:0 --data-dir "${dataDir}" --shards 1 --test-mode & echo "pid $!" >&2; exec sleep 600`;
  const parent = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  parents.push(parent);
  return new Promise((resolve, reject) => {
    let pid = 0;
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`unreaped server did not bind; stderr: ${stderr}`)), 30_000);
    parent.stderr!.on('data', (d) => {
      stderr += d;
      const m = /pid (\d+)/.exec(stderr);
      if (m !== null) pid = Number(m[1]);
    });
    onJsonLines(parent.stdout!, (j) => {
      if (j.kind === 'server.http_bound') {
        clearTimeout(timer);
        resolve({ pid, base: `http://127.0.0.1:${String(j.addr).split(':').pop()}` });
      }
    });
  });
}

async function count(base: string): Promise<unknown> {
  return (await post(base, '/get', { table: 'UserT', key: 'u1' })).json;
}

test('kill -9 of a server nobody reaps, then an immediate restart: the zombie\'s lock is taken over, every acked push is there', { timeout: 120_000 }, async () => {
  const dataDir = tempDataDir();
  try {
    let pushed = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const dead = await startUnreaped(dataDir);
      if (round === 0) assert.equal((await post(dead.base, '/register', { nodes: NODES })).status, 200);
      assert.deepEqual(await count(dead.base), pushed === 0 ? {} : { cnt: pushed });
      assert.equal((await post(dead.base, '/push', { event: 'Txn', data: { user: 'u1' } })).status, 200);
      pushed++;
      process.kill(dead.pid, 'SIGKILL');
      // Wait until it is a zombie, so the case is the one under test (the dying phase before it is another).
      for (let i = 0; i < 200 && procState(dead.pid) !== 'Z'; i++) await new Promise((r) => setTimeout(r, 5));
      assert.equal(procState(dead.pid), 'Z', 'the killed server stays a zombie (its parent does not reap it)');
      const next = await startServer({ dataDir });
      try {
        assert.deepEqual(await count(next.base), { cnt: pushed });
      } finally {
        await next.kill9();
      }
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('kill -9 and restart without waiting for the exit, repeatedly: each start takes the lock over and recovers', { timeout: 120_000 }, async () => {
  const dataDir = tempDataDir();
  let srv: TestServer = await startServer({ dataDir });
  try {
    assert.equal((await post(srv.base, '/register', { nodes: NODES })).status, 200);
    for (let round = 1; round <= ROUNDS; round++) {
      assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: 'u1' } })).status, 200);
      srv.proc.kill('SIGKILL'); // no await: the next server starts while this one may still be dying
      srv = await startServer({ dataDir });
      assert.deepEqual(await count(srv.base), { cnt: round });
    }
  } finally {
    await srv.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
