/**
 * The data format of a data dir (src/data_format.ts, docs/durability.md "Formats"):
 * a new data dir records data format 1 in streamfeat.json and restarts on it; a
 * data dir written by a build before data format 1 (an identity file without
 * data_format, or a registry log without an identity file) or in another data
 * format is refused at start: exit 2, one line naming the format and what to do,
 * and nothing in it changes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { CLI, post, startServer, tempDataDir } from '../harness/server';

const NODES = [
  { kind: 'event', name: 'Hit', schema: { fields: { user: 'str' }, optional_fields: [] } },
  { kind: 'table', name: 'Hits', upstreams: ['Hit'], key: ['user'], agg: { n: { op: 'count', params: {} } } },
];

/** Every file under `dir` with its size and modification time. */
function listing(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (!e.name.startsWith('streamfeat.lock')) { const st = statSync(p); out.push(`${p} ${st.size} ${st.mtimeMs}`); }
    }
  };
  walk(dir);
  return out.sort();
}

function serve(dataDir: string): ReturnType<typeof spawnSync> {
  return spawnSync(process.execPath, [CLI, 'serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--data-dir', dataDir, '--shards', '1'], { encoding: 'utf8', timeout: 20_000 });
}

test('a data dir records data format 1; one of a pre-release build or of another data format is refused at start (exit 2, nothing changed)', async () => {
  const dataDir = tempDataDir();
  const identity = join(dataDir, 'streamfeat.json');
  try {
    const srv = await startServer({ dataDir, args: ['--snapshot-interval', '0'] });
    assert.equal((await post(srv.base, '/register', { nodes: NODES })).status, 200);
    assert.equal((await post(srv.base, '/push', { event: 'Hit', data: { user: 'a' } })).status, 200);
    await srv.kill9();
    assert.deepEqual(JSON.parse(readFileSync(identity, 'utf8')), { data_format: 1, shards: 1 });

    const refused = (contents: string | null, message: RegExp): void => {
      if (contents === null) unlinkSync(identity);
      else writeFileSync(identity, contents);
      const before = listing(dataDir);
      const out = serve(dataDir);
      assert.equal(out.status, 2, String(out.stderr));
      assert.match(String(out.stderr), message);
      assert.match(String(out.stderr), /start with another --data-dir \(or move .* away\); its state cannot be converted/);
      assert.equal(String(out.stderr).trim().split('\n').length, 1, 'one line');
      assert.deepEqual(listing(dataDir), before, 'nothing in the data dir changed');
    };
    // What builds before data format 1 wrote.
    refused(JSON.stringify({ format: 1, shards: 1 }), new RegExp(`data dir ${dataDir.replace(/[/\\\\.]/g, '\\$&')} is in a pre-release format \\(its streamfeat.json names no data_format`));
    // Builds before the identity file: a registry log and WAL segments, no streamfeat.json.
    refused(null, /is in a pre-release format \(a registry log or WAL segments but no streamfeat\.json/);
    refused(JSON.stringify({ data_format: 2, shards: 1 }), /is in data format 2; this build reads data format 1 only: start the build that wrote it/);

    writeFileSync(identity, JSON.stringify({ data_format: 1, shards: 1 }));
    const again = await startServer({ dataDir, args: ['--snapshot-interval', '0'] });
    assert.deepEqual((await post(again.base, '/get', { table: 'Hits', key: 'a' })).json, { n: 1 });
    await again.stop();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
