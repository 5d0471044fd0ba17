/**
 * `streamfeat wal-check [--data-dir DIR] [--json]`: verifies a data directory
 * offline (every shard's WAL segments and snapshots, and the registry log)
 * without changing anything, and judges what boot would prove lost with the same
 * code as boot (src/wal/loss.ts, audit.ts): the same findings, in the same words.
 * Exit 0 when clean, 1 when damaged in a way recovery repairs or tolerates (a torn
 * tail), 3 when boot refuses (acknowledged data lost).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type CliCommand, EXIT_USAGE, stringValue } from './cli_args';
import { auditShardDir, checkRegistryLog, checkWalDir, formatEvidence, formatWalCheckReport, judge, readRegistryLogFacts, refusalMessage, REGISTRY_LOG_FILE } from './wal';

/** Exit code when boot would refuse the data dir (0 clean, 1 damaged, 2 usage). */
export const EXIT_DATA_LOSS = 3;

export const WAL_CHECK_COMMAND: CliCommand = {
  spec: {
    name: 'wal-check',
    args: [],
    summary: 'Verify a data directory offline (WAL segments, snapshots, registry log); changes nothing.',
    options: [
      { name: 'data-dir', type: 'string', value: 'DIR', help: 'data directory to check', env: 'SERVICE_DATA_DIR', default: './data' },
      { name: 'json', type: 'boolean', help: 'one JSON object instead of the text report' },
    ],
    notes: [
      'exit codes: 0 clean, 1 damaged in a way recovery repairs or tolerates (e.g. a torn tail), 3 acknowledged data lost: the server refuses to start on it (see serve --accept-data-loss), 2 bad command line or no such directory',
    ],
  },
  run: (p, io) => runWalCheck(stringValue(p, 'data-dir') ?? (process.env.SERVICE_DATA_DIR || './data'), p.values.json === true, io),
};

function runWalCheck(dirArg: string, json: boolean, io: { out(line: string): void; err(line: string): void }): number {
  const dir = resolve(dirArg);
  if (!existsSync(dir)) { io.err(`error: no data directory ${dir}`); return EXIT_USAGE; }
  const shards = readdirSync(dir).filter((n) => /^shard-\d+$/.test(n)).sort((a, b) => Number(a.slice(6)) - Number(b.slice(6)));
  const reports = shards.map((s) => ({ shard: s, report: checkWalDir(join(dir, s)) }));
  const regPath = join(dir, REGISTRY_LOG_FILE);
  const registry = existsSync(regPath) ? checkRegistryLog(regPath) : null;
  // What boot would judge: the registry log as the coordinator reads it, each shard as it recovers.
  const reg = readRegistryLogFacts(regPath).facts;
  const verdict = judge(reg, shards.map((s) => auditShardDir(join(dir, s), s, reg.known)));
  const lost = verdict.losses.length > 0;
  const ok = !lost && reports.every((r) => r.report.ok) && (registry === null || registry.ok);
  if (json) {
    io.out(JSON.stringify({ ok, dataLoss: lost, dataDir: dir, registry, shards: reports, evidence: verdict.evidence, losses: verdict.losses }));
  } else {
    io.out(`data dir ${dir}: ${lost ? 'DATA LOSS' : ok ? 'OK' : 'DAMAGED'}`);
    io.out(`registry log: ${registry === null ? 'none' : JSON.stringify(registry)}`);
    for (const r of reports) io.out(`[${r.shard}]\n${formatWalCheckReport(r.report)}`);
    const notes = verdict.evidence.filter((e) => !e.loss);
    for (const e of notes) io.out(`note: ${formatEvidence(e)}`);
    io.out(lost ? refusalMessage(dir, verdict.losses) : 'data loss: none (the server starts on this data dir)');
  }
  return lost ? EXIT_DATA_LOSS : ok ? 0 : 1;
}
