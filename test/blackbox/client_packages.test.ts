/**
 * The client as a user installs it, compiled by a real tsc and run against a
 * real server, in a new commonjs project (`module: commonjs`, classic node
 * resolution, which ignores `exports`) and a new ESM project (`module:
 * nodenext`): the standalone `streamfeat-client` from its `npm pack` tarball
 * (no dependencies, nothing of the server), and `streamfeat/client` of the
 * server package (resolved through `typesVersions` under commonjs). The typed
 * builders work in both (a wrong push is a compile error there too).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type TestServer } from '../harness/server';

const ROOT = join(__dirname, '..', '..', '..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const CLIENT_PKG = join(ROOT, 'packages', 'streamfeat-client');

let work: string;
let tarball: string;
let srv: TestServer;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'sf-client-pkg-'));
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: CLIENT_PKG, encoding: 'utf8' });
  tarball = join(work, (JSON.parse(out.slice(out.indexOf('['))) as Array<{ filename: string }>)[0].filename);
  srv = await startServer({ memoryOnly: true });
});
after(async () => {
  await srv.stop();
  srv.cleanup();
  rmSync(work, { recursive: true, force: true });
});

/** The user's program: typed builders, a push and a typed get, printed as JSON. */
function program(from: string, esm: boolean): string {
  return `import { Client, agg, event, f64, str, table } from '${from}';
const Txn = event('PkgTxn', { user: str, amount: f64 });
const Spend = table('PkgSpend', { from: Txn, key: 'user', features: { n: agg.count(), total: agg.sum('amount', { window: '1h' }) } });
async function main(): Promise<void> {
  const sf = new Client(process.argv[2]);
  await sf.register([Spend]);
  await sf.push(Txn, { user: 'u1', amount: 12.5 });
  // @ts-expect-error -- amount is a number
  if (process.argv[3] === 'never') await sf.push(Txn, { user: 'u1', amount: 'yes' });
  const row = await sf.get(Spend, 'u1');
  const total: number | null | undefined = row.total;
  console.log(JSON.stringify({ n: row.n, total, module: ${esm ? "'esm'" : "typeof module === 'object' ? 'cjs' : '?'"} }));
  await sf.close();
}
main().catch((e) => { console.error(e); process.exit(1); });
`;
}

function project(name: string, esm: boolean, from: string, install: (dir: string) => void): string {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, type: esm ? 'module' : 'commonjs' }));
  const compilerOptions = esm
    ? { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')], skipLibCheck: false }
    : { module: 'commonjs', moduleResolution: 'node', target: 'es2022', strict: true, esModuleInterop: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')], skipLibCheck: false };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['index.ts'] }));
  writeFileSync(join(dir, 'index.ts'), program(from, esm));
  install(dir);
  const tsc = spawnSync(process.execPath, [TSC, '-p', dir], { encoding: 'utf8' });
  assert.equal(tsc.status, 0, `${name}: tsc\n${tsc.stdout}${tsc.stderr}`);
  return dir;
}

function run(dir: string): Record<string, unknown> {
  const r = spawnSync(process.execPath, [join(dir, 'index.js'), srv.base], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

const npmInstall = (dir: string): void => {
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--offline', tarball], { cwd: dir, encoding: 'utf8' });
};

test('streamfeat-client from its tarball: nothing but itself is installed; commonjs and ESM projects compile and run', async () => {
  const pkg = JSON.parse(readFileSync(join(CLIENT_PKG, 'package.json'), 'utf8')) as { dependencies?: unknown; engines: { node: string } };
  assert.equal(pkg.dependencies, undefined, 'no runtime dependencies');
  const cjs = project('cjs-client', false, 'streamfeat-client', npmInstall);
  assert.deepEqual(readdirSync(join(cjs, 'node_modules')).filter((n) => !n.startsWith('.')), ['streamfeat-client'], 'installing the client pulls nothing else');
  assert.deepEqual(run(cjs), { n: 1, total: 12.5, module: 'cjs' });
  const esm = project('esm-client', true, 'streamfeat-client', npmInstall);
  assert.deepEqual(run(esm), { n: 2, total: 25, module: 'esm' });
});

test('streamfeat/client of the server package: resolves under module commonjs (typesVersions) and nodenext (exports)', async () => {
  const link = (dir: string): void => {
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(ROOT, join(dir, 'node_modules', 'streamfeat'), 'dir');
  };
  assert.deepEqual(run(project('cjs-server-pkg', false, 'streamfeat/client', link)), { n: 3, total: 37.5, module: 'cjs' });
  assert.deepEqual(run(project('esm-server-pkg', true, 'streamfeat/client', link)), { n: 4, total: 50, module: 'esm' });
});
