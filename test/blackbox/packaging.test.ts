/**
 * The package as users get it: `npm pack` holds dist/src and docs only (no
 * tests, bench or sources), and require('streamfeat') from an installed copy
 * gives the server API, which starts a real server.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');

test('npm pack --dry-run: dist/src and docs only', () => {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
  const [pack] = JSON.parse(out) as Array<{ files: Array<{ path: string }>; size: number; unpackedSize: number }>;
  const paths = pack.files.map((f) => f.path);
  assert.ok(paths.includes('dist/src/index.js') && paths.includes('dist/src/index.d.ts') && paths.includes('dist/src/cli.js'));
  assert.ok(paths.includes('dist/src/client/index.js') && paths.includes('docs/operations.md'));
  const stray = paths.filter((p) => !/^(dist\/src\/|docs\/|package\.json$|README\.md$|LICENSE$)/.test(p));
  assert.deepEqual(stray, [], 'nothing but dist/src, docs, package.json, README, LICENSE');
});

test("require('streamfeat') from an installed copy: the server API starts a real server", () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-pkg-'));
  try {
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(ROOT, join(dir, 'node_modules', 'streamfeat'), 'dir');
    const script = `
      const sf = require('streamfeat');
      const { Client } = require('streamfeat/client');
      let blocked = false;
      try { require('streamfeat/dist/src/server.js'); } catch (e) { blocked = e.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED'; }
      const config = sf.parseServeArgs(['--memory-only', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--shards', '1', '--log-level', 'warn'], {});
      sf.startServer(config).then(async (s) => {
        const c = new Client('http://127.0.0.1:' + s.httpPort);
        const pong = await c.ping();
        await c.close();
        await s.close();
        console.log(JSON.stringify({ version: sf.VERSION, pong: pong.pong, blocked, types: typeof sf.startServer }));
        process.exit(0);
      });`;
    const r = spawnSync(process.execPath, ['-e', script], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    const line = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
    assert.deepEqual(line, { version: (require(join(ROOT, 'package.json')) as { version: string }).version, pong: true, blocked: true, types: 'function' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
