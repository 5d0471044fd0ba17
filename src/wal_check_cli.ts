/**
 * `streamfeat wal-check [--data-dir DIR] [--json]`: verifies a data directory
 * offline (every shard's WAL segments and snapshots, and the registry log)
 * without changing anything. Exit 0 when clean, 1 when anything is damaged.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type CliCommand, EXIT_USAGE, stringValue } from './cli_args';
import { checkRegistryLog, checkWalDir, formatWalCheckReport } from './wal';

export const WAL_CHECK_COMMAND: CliCommand = {
  spec: {
    name: 'wal-check',
    args: [],
    summary: 'Verify a data directory offline (WAL segments, snapshots, registry log); changes nothing.',
    options: [
      { name: 'data-dir', type: 'string', value: 'DIR', help: 'data directory to check', env: 'SERVICE_DATA_DIR', default: './data' },
      { name: 'json', type: 'boolean', help: 'one JSON object instead of the text report' },
    ],
    notes: ['exit codes: 0 clean, 1 something is damaged, 2 bad command line or no such directory'],
  },
  run: (p, io) => runWalCheck(stringValue(p, 'data-dir') ?? (process.env.SERVICE_DATA_DIR || './data'), p.values.json === true, io),
};

function runWalCheck(dirArg: string, json: boolean, io: { out(line: string): void; err(line: string): void }): number {
  const dir = resolve(dirArg);
  if (!existsSync(dir)) { io.err(`error: no data directory ${dir}`); return EXIT_USAGE; }
  const shards = readdirSync(dir).filter((n) => /^shard-\d+$/.test(n)).sort((a, b) => Number(a.slice(6)) - Number(b.slice(6)));
  const reports = shards.map((s) => ({ shard: s, report: checkWalDir(join(dir, s)) }));
  const regPath = join(dir, 'registry', 'registry.log');
  const registry = existsSync(regPath) ? checkRegistryLog(regPath) : null;
  const ok = reports.every((r) => r.report.ok) && (registry === null || registry.ok);
  if (json) {
    io.out(JSON.stringify({ ok, dataDir: dir, registry, shards: reports }));
  } else {
    io.out(`data dir ${dir}: ${ok ? 'OK' : 'DAMAGED'}`);
    io.out(`registry log: ${registry === null ? 'none' : JSON.stringify(registry)}`);
    for (const r of reports) io.out(`[${r.shard}]\n${formatWalCheckReport(r.report)}`);
  }
  return ok ? 0 : 1;
}
