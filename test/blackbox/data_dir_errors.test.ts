/**
 * First-deploy data dir problems, each met by the real CLI: the server must say
 * in one line what is wrong with which path and what to do, exit 2, and do so at
 * once (no stack trace, no spinning). And a stop signal always stops a server
 * that is still starting.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, startServer } from '../harness/server';

/**
 * Far above the milliseconds a refusal takes (printed per case) and far below
 * "forever": the old behaviour on /proc was a mkdir loop that never ended.
 */
const REFUSE_WITHIN_MS = 10_000;
const SERVE = ['serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--shards', '1'];
const IS_ROOT = process.getuid?.() === 0;
/** The user a root test runs the server as, so that file modes apply to it. */
const NOBODY = 65534;

interface Exit { code: number | null; stderr: string; stdout: string; ms: number }

function run(cmd: string, args: string[], opts: { uid?: number } = {}): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(opts.uid === undefined ? {} : { uid: opts.uid, gid: opts.uid }) });
    let stderr = '';
    let stdout = '';
    p.stderr.on('data', (d) => { stderr += d; });
    p.stdout.on('data', (d) => { stdout += d; });
    const t = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`still running after ${REFUSE_WITHIN_MS} ms: ${args.join(' ')}; stderr: ${stderr}`)); }, REFUSE_WITHIN_MS);
    p.on('exit', (code) => { clearTimeout(t); resolve({ code, stderr, stdout, ms: Date.now() - t0 }); });
  });
}

const serve = (dataDir: string, opts: { uid?: number } = {}): Promise<Exit> => run(process.execPath, [CLI, ...SERVE, '--data-dir', dataDir], opts);

/** Exit 2 and exactly one stderr line that matches every pattern. */
function assertOneLine(r: Exit, ...patterns: RegExp[]): void {
  assert.equal(r.code, 2, r.stderr);
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line, got:\n${r.stderr}`);
  assert.match(lines[0], /^error: /);
  for (const p of patterns) assert.match(lines[0], p);
  assert.doesNotMatch(lines[0], /\(see: /, "the line carries its own fix, not a pointer to --help");
  console.log(`# ${r.ms} ms: ${lines[0]}`);
}

const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'sf-datadir-'));
  chmodSync(d, 0o755); // reachable by the unprivileged user of the permission cases
  return d;
}

test('a data dir that is a file, or under a file: one line naming it, exit 2', async () => {
  const root = tmp();
  try {
    const file = join(root, 'afile');
    writeFileSync(file, 'x');
    assertOneLine(await serve(file), new RegExp(`data dir ${esc(file)} is a file, not a directory`), /move the file away or choose another --data-dir/);
    assertOneLine(await serve(join(file, 'sub')), new RegExp(`cannot create data dir ${esc(join(file, 'sub'))}: ${esc(file)} is a file`));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a filesystem that refuses directories (/proc): one line at once, no mkdir loop', async () => {
  const dir = `/proc/sfdata-${process.pid}`;
  assertOneLine(await serve(dir), new RegExp(`cannot create data dir ${esc(dir)}: the filesystem holding /proc refuses to create directories`), /choose a --data-dir on a disk/);
});

test('a parent the server may not write, and a data dir written by another user: one line with the owner and the fix', async () => {
  const root = tmp();
  try {
    const ro = join(root, 'ro');
    mkdirSync(ro);
    chmodSync(ro, 0o555);
    const uid = IS_ROOT ? NOBODY : process.getuid!();
    const as = IS_ROOT ? { uid: NOBODY } : {};
    assertOneLine(await serve(join(ro, 'data'), as),
      new RegExp(`cannot create data dir ${esc(join(ro, 'data'))}: ${esc(ro)} is not writable by this server \\(uid ${uid}; ${esc(ro)} is owned by uid \\d+, mode 0555\\)`),
      new RegExp(`chown ${uid} `));

    // A data dir a first run left behind (as root, or before a chmod): the registry dir is not ours to write.
    const used = join(root, 'used');
    const first = await startServer({ dataDir: used });
    await first.stop();
    chmodSync(used, 0o777);
    if (!IS_ROOT) chmodSync(join(used, 'registry'), 0o555);
    assertOneLine(await serve(used, as),
      new RegExp(`data dir ${esc(used)}: ${esc(join(used, 'registry'))} is not writable by this server \\(uid ${uid};`),
      new RegExp(`chown -R ${uid} ${esc(used)}`));
  } finally {
    spawnSync('chmod', ['-R', 'u+w', root]);
    rmSync(root, { recursive: true, force: true });
  }
});

test('a damaged identity file: one line saying what it should hold', async () => {
  const root = tmp();
  try {
    writeFileSync(join(root, 'streamfeat.json'), '{"format":1,');
    assertOneLine(await serve(root), new RegExp(`${esc(join(root, 'streamfeat.json'))} is not valid JSON`), /"shards":N/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/**
 * A full and a read-only filesystem: a small tmpfs mounted in a private mount
 * namespace (unshare), so nothing outside the test sees it or outlives it.
 */
function inMountNamespace(script: string): Promise<Exit> {
  const args = [...(IS_ROOT ? [] : ['--map-root-user']), '--mount', 'sh', '-c', script];
  return run('unshare', args);
}

test('a full disk and a read-only filesystem: one line naming the data dir and the fix', async () => {
  const mnt = tmp();
  try {
    const data = join(mnt, 'data');
    const node = `"${process.execPath}" "${CLI}" ${SERVE.join(' ')} --data-dir "${data}"`;
    const full = await inMountNamespace(`mount -t tmpfs -o size=1m tmpfs "${mnt}" && (head -c 2000000 /dev/zero > "${mnt}/filler" 2>/dev/null; exec ${node})`);
    assertOneLine(full, new RegExp(`the filesystem holding data dir ${esc(data)} is full \\(0 bytes free\\)`), /free space on it or choose a --data-dir on another disk/);
    const ro = await inMountNamespace(`mount -t tmpfs -o size=1m,ro tmpfs "${mnt}" && exec ${node}`);
    assertOneLine(ro, new RegExp(`data dir ${esc(data)}`), /read-only filesystem/, /remount it read-write or choose another --data-dir/);
  } finally {
    rmSync(mnt, { recursive: true, force: true });
  }
});

test('SIGTERM stops a server that is still starting, whenever it arrives', { timeout: 120_000 }, async () => {
  for (const delayMs of [0, 50, 100, 200, 300, 500]) {
    const dir = tmp();
    try {
      const p = spawn(process.execPath, [CLI, ...SERVE, '--data-dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (d) => { out += d; });
      await new Promise((r) => setTimeout(r, delayMs));
      const t0 = Date.now();
      p.kill('SIGTERM');
      const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve, reject) => {
        const t = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`SIGTERM at ${delayMs} ms after spawn did not stop it; log: ${out}`)); }, REFUSE_WITHIN_MS);
        p.on('exit', (code, signal) => { clearTimeout(t); resolve({ code, signal }); });
      });
      // Before the handler is installed the default action ends it; after, it exits 0 (or 143 if the
      // handler met a second signal), once serving it drains and exits 0.
      assert.ok(exit.signal === 'SIGTERM' || exit.code === 0, `${delayMs} ms: ${JSON.stringify(exit)}`);
      console.log(`# SIGTERM ${delayMs} ms after spawn: stopped in ${Date.now() - t0} ms (${JSON.stringify(exit)})`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});
