/**
 * CLI conventions of the `streamfeat` program, run as a user runs it (a child
 * process): every command has --help and `help COMMAND` naming its flags,
 * --version prints the package version, a bad value is one line and exit 2,
 * config precedence flags > env > file > defaults, unknown config keys rejected.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { resolveServerConfig, SERVER_ENV } from '../../src/config';
import { CLI } from '../harness/server';

const ROOT = join(__dirname, '..', '..', '..');

function run(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const clean = { ...process.env };
  for (const k of Object.keys(clean)) if (k.startsWith('SERVICE_')) delete clean[k];
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...clean, ...env }, timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** What each command's help must name (written out here, not taken from the specs, so a dropped flag fails). */
const FLAGS: Record<string, string[]> = {
  serve: ['--config', '--http-addr', '--http-engine', '--tcp-addr', '--admin-addr', '--data-dir', '--memory-only', '--test-mode', '--shards',
    '--log-level', '--wal-sync', '--wal-sync-timeout-ms', '--wal-sync-interval-ms', '--wal-segment-bytes', '--snapshot-interval',
    '--max-batch-get', '--tcp-max-frame-bytes', '--shutdown-timeout', '--cluster-url', '--node-id', '--partitions', '--peer-addr', 'SERVICE_MEMORY_GOV_ENFORCE', 'SERVICE_FAULT_WAL_FILE', 'SERVICE_FAULT_CLOCK_FILE'],
  'wal-check': ['--data-dir', '--json'],
  push: ['EVENT', 'JSON', '--retry', '--url', '--json', '--timeout-ms', '--http-url'],
  get: ['TABLE', 'KEY', '--features', '--url'],
  'batch-get': ['FILE', '--url', '--json'],
  register: ['FILE', '--force', '--dry-run', '--url'],
  ping: ['--url', '--timeout-ms'],
  registry: ['--url', '--http-url'],
  reset: ['--url'],
};

test('cli: every command answers --help and help COMMAND (exit 0) naming its flags', () => {
  for (const [cmd, flags] of Object.entries(FLAGS)) {
    const a = run([cmd, '--help']);
    assert.equal(a.status, 0, `${cmd} --help: ${a.stderr}`);
    assert.match(a.stdout, new RegExp(`^usage: streamfeat ${cmd}`), cmd);
    for (const f of flags) assert.ok(a.stdout.includes(f), `${cmd} --help names ${f}`);
    const b = run(['help', cmd]);
    assert.equal(b.status, 0);
    assert.equal(b.stdout, a.stdout, `help ${cmd} = ${cmd} --help`);
  }
  const overview = run(['help']);
  assert.equal(overview.status, 0);
  for (const cmd of Object.keys(FLAGS)) assert.match(overview.stdout, new RegExp(`^  ${cmd} `, 'm'));
});

test('cli: serve --help gives every flag its env variable and default', () => {
  const out = run(['serve', '--help']).stdout;
  assert.match(out, /--http-addr HOST:PORT\s+.*env SERVICE_HTTP_ADDR, default 127\.0\.0\.1:8080/);
  assert.match(out, /--shards N\s+.*env SERVICE_SHARDS, default cores-1/);
  assert.match(out, /--snapshot-interval DUR\s+.*env SERVICE_SNAPSHOT_INTERVAL, default 60s/);
  for (const env of SERVER_ENV) assert.ok(out.includes(env), `serve --help names ${env}`);
});

test('cli: --version prints the package version', () => {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  for (const flag of ['--version', 'version']) {
    const r = run([flag]);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, `${version}\n`);
  }
});

test('cli: bad values and unknown options exit 2 with one line and no stack', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-cli-'));
  try {
    writeFileSync(join(dir, 'unknown.json'), '{"shards": 1, "bogus": true}');
    writeFileSync(join(dir, 'badtype.json'), '{"shards": "two"}');
    writeFileSync(join(dir, 'broken.json'), '{"shards": ');
    writeFileSync(join(dir, 'zero_timeout.json'), '{"tcp-frame-timeout": 0}');
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [['serve', '--log-level', 'loud'], {}, /--log-level must be one of .*info.*got "loud"/],
      [['serve', '--shards', '0'], {}, /--shards must be an integer from 1 to/],
      [['serve', '--http-addr', 'nowhere'], {}, /--http-addr must be HOST:PORT/],
      [['serve', '--tcp-addr', '127.0.0.1:70000'], {}, /--tcp-addr must be HOST:PORT/],
      [['serve', '--snapshot-interval', '5y'], {}, /--snapshot-interval must be a duration/],
      [['serve', '--tcp-frame-timeout', '0'], {}, /--tcp-frame-timeout must be a positive duration/],
      [['serve', '--tcp-frame-timeout', '0s'], {}, /--tcp-frame-timeout must be a positive duration/],
      [['serve'], { SERVICE_TCP_FRAME_TIMEOUT: '-5s' }, /SERVICE_TCP_FRAME_TIMEOUT must be a positive duration/],
      [['serve', '--shutdown-timeout', '0ms'], {}, /--shutdown-timeout must be a positive duration/],
      [['serve', '--wal-sync-timeout-ms', '0'], {}, /--wal-sync-timeout-ms must be an integer >= 1/],
      [['serve'], { SERVICE_WAL_SYNC_INTERVAL_MS: '-1' }, /SERVICE_WAL_SYNC_INTERVAL_MS must be an integer >= 1/],
      [['serve', '--tcp-connections-max', '0'], {}, /--tcp-connections-max must be an integer >= 1/],
      [['serve', '--max-batch-get', '0'], {}, /--max-batch-get must be an integer >= 1/],
      [['serve', '--wal-segment-bytes', '1'], {}, /--wal-segment-bytes must be an integer >= 512/],
      [['serve'], { SERVICE_TCP_IDLE_TIMEOUT: '-1' }, /SERVICE_TCP_IDLE_TIMEOUT must be a duration .*0 means never/],
      [['serve'], { SERVICE_TCP_FRAME_TIMEOUT: '0' }, /SERVICE_TCP_FRAME_TIMEOUT must be a positive duration/],
      [['serve', '--config', join(dir, 'zero_timeout.json')], {}, /zero_timeout\.json: tcp-frame-timeout must be a positive duration/],
      [['serve', '--bogus'], {}, /unknown option --bogus/],
      [['--memory-only', '--frob'], {}, /unknown option --frob/],
      [['serve'], { SERVICE_LOG_LEVEL: 'loud' }, /SERVICE_LOG_LEVEL must be one of/],
      [['serve'], { SERVICE_SHARDS: 'x' }, /SERVICE_SHARDS must be an integer/],
      [['serve'], { SERVICE_TEST_MODE: 'maybe' }, /SERVICE_TEST_MODE must be true, false, 1 or 0/],
      [['serve', '--config', join(dir, 'unknown.json')], {}, /unknown\.json: unknown key "bogus"/],
      [['serve', '--config', join(dir, 'badtype.json')], {}, /badtype\.json: shards must be an integer/],
      [['serve', '--config', join(dir, 'broken.json')], {}, /broken\.json is not valid JSON/],
      [['serve', '--config', join(dir, 'missing.json')], {}, /cannot read config file/],
      [['serve', '--config', join(dir, 'c.yaml')], {}, /YAML config files are not supported/],
      [['serve'], { SERVICE_CONFIG: join(dir, 'unknown.json') }, /unknown key "bogus"/],
      [['wal-check', '--bogus'], {}, /unknown option --bogus/],
      [['wal-check', '--data-dir'], {}, /--data-dir needs a value/],
      [['push', 'Txn'], {}, /expected: streamfeat push EVENT JSON/],
      [['get', 'T', 'k', '--features'], {}, /--features needs a value/],
      [['frobnicate'], {}, /unknown command frobnicate/],
      [['help', 'frobnicate'], {}, /no command frobnicate/],
    ];
    for (const [args, env, want] of cases) {
      const r = run(args, env);
      const label = `${JSON.stringify(env)} ${args.join(' ')}`;
      assert.equal(r.status, 2, `${label}: ${r.stderr}`);
      assert.match(r.stderr, want, label);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, `${label}: one line, got ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /\n\s+at /, label);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('config: 0 is accepted where it has a meaning (snapshot/checkpoint interval: off, TCP idle timeout: never) and refused elsewhere', () => {
  const c = resolveServerConfig({ 'snapshot-interval': '0', 'tcp-idle-timeout': '0s', 'tcp-frame-timeout': '250ms', 'shutdown-timeout': '030s' }, {});
  assert.equal(c.snapshotIntervalMs, 0);
  assert.equal(c.tcpIdleTimeoutMs, 0);
  assert.equal(c.tcpFrameTimeoutMs, 250);
  assert.equal(c.shutdownTimeoutMs, 30_000);
  for (const key of ['tcp-frame-timeout', 'shutdown-timeout']) {
    for (const v of ['0', '0s', '000ms']) assert.throws(() => resolveServerConfig({ [key]: v }, {}), new RegExp(`--${key} must be a positive duration`), `${key} ${v}`);
  }
});

test('config: precedence flags > env > file > defaults, per setting', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-cfg-'));
  try {
    const file = join(dir, 'streamfeat.json');
    writeFileSync(file, JSON.stringify({ shards: 3, 'log-level': 'warn', 'http-addr': '0.0.0.0:9000', 'memory-gov-enforce': true, 'snapshot-interval': 30000, 'data-dir': 'from-file' }));
    const env = { SERVICE_CONFIG: file, SERVICE_SHARDS: '2', SERVICE_MEMORY_GOV_ENFORCE: '0', SERVICE_SNAPSHOT_INTERVAL: '5m', SERVICE_LOG_LEVEL: '' };
    const all = resolveServerConfig({ shards: '4', 'snapshot-interval': '10s' }, env);
    assert.equal(all.shards, 4, 'flag beats env and file');
    assert.equal(all.snapshotIntervalMs, 10_000);
    const noFlag = resolveServerConfig({}, env);
    assert.equal(noFlag.shards, 2, 'env beats file');
    assert.equal(noFlag.snapshotIntervalMs, 300_000);
    assert.equal(noFlag.memoryGovEnforce, false, 'env false beats file true');
    assert.equal(noFlag.logLevel, 'warn', 'an empty env variable is unset: the file decides');
    assert.deepEqual(noFlag.httpAddr, { host: '0.0.0.0', port: 9000 });
    assert.equal(noFlag.dataDir, resolve('from-file'));
    const fileOnly = resolveServerConfig({ config: file }, {});
    assert.equal(fileOnly.shards, 3, 'file beats default');
    assert.equal(fileOnly.snapshotIntervalMs, 30_000, 'file durations may be plain milliseconds');
    const none = resolveServerConfig({}, {});
    assert.equal(none.logLevel, 'info');
    assert.deepEqual(none.httpAddr, { host: '127.0.0.1', port: 8080 });
    assert.deepEqual(none.tcpAddr, { host: '127.0.0.1', port: 8081 });
    assert.equal(none.adminAddr, null);
    assert.equal(none.memoryGovEnforce, true);
    assert.equal(none.snapshotIntervalMs, 60_000);
    assert.ok(Object.isFrozen(none));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('config: a real server started from a config file binds where the file says', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-cfg-srv-'));
  const file = join(dir, 'streamfeat.json');
  writeFileSync(file, JSON.stringify({ 'http-addr': '127.0.0.1:0', 'tcp-addr': '127.0.0.1:0', 'memory-only': true, shards: 1, 'log-level': 'info' }));
  const { spawn } = await import('node:child_process');
  const proc = spawn(process.execPath, [CLI, 'serve', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const lines: Array<Record<string, unknown>> = [];
    await new Promise<void>((resolveBound, reject) => {
      let buf = '';
      const timer = setTimeout(() => reject(new Error('no bind')), 30_000);
      proc.on('exit', (code) => reject(new Error(`exited ${code}`)));
      proc.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const l = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
          buf = buf.slice(nl + 1);
          lines.push(l);
          if (l.kind === 'server.tcp_bound') { clearTimeout(timer); resolveBound(); }
        }
      });
    });
    const http = lines.find((l) => l.kind === 'server.http_bound')!.addr as string;
    const res = await fetch(`http://${http}/ping`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 200);
  } finally {
    proc.removeAllListeners('exit');
    const exited = new Promise((r) => proc.on('exit', r));
    proc.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
});

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) tsFiles(p, out);
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

test('config: every SERVICE_* variable named in src/ is a setting and is documented in the README', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const named = new Set<string>();
  for (const f of tsFiles(join(ROOT, 'src'))) for (const m of readFileSync(f, 'utf8').matchAll(/SERVICE_[A-Z0-9_]+/g)) named.add(m[0]);
  assert.ok(named.size >= 10, `found ${[...named].join(' ')}`);
  for (const v of named) {
    assert.ok(SERVER_ENV.includes(v), `${v} is read through src/config.ts`);
    assert.ok(readme.includes(v), `README documents ${v}`);
  }
});
