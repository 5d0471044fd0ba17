/**
 * `streamfeat wal-check [--data-dir DIR] [--json]`: verifies a data directory
 * offline (every shard's WAL segments and snapshots, and the registry log)
 * without changing anything. Exit 0 when clean, 1 when anything is damaged.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { checkRegistryLog, checkWalDir, formatWalCheckReport } from './wal';

export function runWalCheck(argv: string[]): number {
  let dir = './data';
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--data-dir') dir = argv[++i] ?? dir;
    else if (argv[i] === '--json') json = true;
    else { process.stderr.write(`wal-check: unknown option ${argv[i]}\n`); return 2; }
  }
  dir = resolve(dir);
  if (!existsSync(dir)) { process.stderr.write(`wal-check: no data directory ${dir}\n`); return 2; }
  const shards = readdirSync(dir).filter((n) => /^shard-\d+$/.test(n)).sort((a, b) => Number(a.slice(6)) - Number(b.slice(6)));
  const reports = shards.map((s) => ({ shard: s, report: checkWalDir(join(dir, s)) }));
  const regPath = join(dir, 'registry', 'registry.log');
  const registry = existsSync(regPath) ? checkRegistryLog(regPath) : null;
  const ok = reports.every((r) => r.report.ok) && (registry === null || registry.ok);
  if (json) {
    process.stdout.write(`${JSON.stringify({ ok, dataDir: dir, registry, shards: reports })}\n`);
  } else {
    process.stdout.write(`data dir ${dir}: ${ok ? 'OK' : 'DAMAGED'}\n`);
    process.stdout.write(`registry log: ${registry === null ? 'none' : JSON.stringify(registry)}\n`);
    for (const r of reports) process.stdout.write(`[${r.shard}]\n${formatWalCheckReport(r.report)}\n`);
  }
  return ok ? 0 : 1;
}
