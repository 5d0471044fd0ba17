/**
 * The boot verdict on lost data (main thread, between shard recovery and the
 * listeners; server.ts step 3): the registry log's facts (coordinator `state`) and
 * every shard's audit (ShardHello.audit) go through wal/loss.ts, the same code
 * `streamfeat wal-check` runs.
 *
 *   nothing lost            open the registry log (a torn tail is cut) and serve
 *   lost, no flag           refuse: DataLossError (a StartupError: exit code 2) naming
 *                           every file, the lsns and registry versions lost, and what
 *                           to do; the registry log is left as it was found
 *   lost, --accept-data-loss log each loss (wal.data_loss_accepted) and a summary
 *                           (server.data_loss_accepted), open the log skipping damage,
 *                           raise the registry version above everything on disk
 *                           (registry.version_raised), then the caller snapshots
 *                           every shard so the next boot starts past what was lost
 */
import type { Logger } from '../log';
import type { CoordinatorBoot, ShardHello } from '../protocol/messages';
import type { RegistryWire } from '../registry/wire';
import { StartupError } from '../startup_error';
import { formatEvidence, judge, refusalMessage, type Evidence, type ShardAudit } from '../wal';
import { runCoordinator, type CoordinatorPool } from '../protocol/coordinator_calls';

/** Boot refused: recovery proved acknowledged data lost and --accept-data-loss was not given. */
export class DataLossError extends StartupError {
  readonly losses: readonly Evidence[];
  constructor(message: string, losses: readonly Evidence[]) {
    super(message);
    this.losses = losses;
  }
}

export interface BootLossOutcome {
  /** Losses accepted (empty when nothing was lost). */
  accepted: Evidence[];
  /** The registry version `open` made above the lost ones; the front installs it. Null when none. */
  raised: RegistryWire | null;
}

function lossLine(e: Evidence): Record<string, unknown> {
  return { file: e.file, label: e.label, evidence: e.kind, lsn_from: e.lsnFrom, lsn_to: e.lsnTo, versions: e.versions, pushes: e.pushes, records: e.records, why: e.why };
}

/** Judges what the shards recovered; throws DataLossError, or opens the registry log and returns what was accepted. */
export async function settleBootLosses(
  coordinator: CoordinatorPool, boot: CoordinatorBoot, hellos: readonly ShardHello[], dataDir: string, accept: boolean, log: Logger,
): Promise<BootLossOutcome> {
  const audits = hellos.map((h) => h.audit).filter((a): a is ShardAudit => a !== null);
  if (boot.log === null) return { accepted: [], raised: null };
  const verdict = judge(boot.log, audits);
  // Shards logged their own evidence; the registry log's is judged here, with all shards.
  for (const e of verdict.evidence.filter((x) => x.file.startsWith('registry/'))) {
    if (e.loss) log.error({ kind: 'wal.data_loss', ...lossLine(e) }, formatEvidence(e));
    else log.warn({ kind: `wal.${e.kind}`, ...lossLine(e) }, formatEvidence(e));
  }
  if (verdict.losses.length > 0 && !accept) {
    const message = refusalMessage(dataDir, verdict.losses);
    log.error({ kind: 'server.boot_refused', data_dir: dataDir, losses: verdict.losses.map(lossLine) }, message);
    throw new DataLossError(message, verdict.losses);
  }
  for (const e of verdict.losses) log.error({ kind: 'wal.data_loss_accepted', ...lossLine(e) }, formatEvidence(e));
  const opened = await runCoordinator(coordinator, { kind: 'open', acceptDataLoss: accept, versionFloor: verdict.losses.length > 0 ? verdict.versionFloor : 0 });
  if (!opened.ok) throw new Error(`registry log could not be opened: ${opened.error.code} ${JSON.stringify(opened.error.detail)}`);
  if (verdict.losses.length > 0) {
    const pushes = verdict.losses.reduce((n, e) => n + Math.max(0, e.pushes), 0);
    log.error({
      kind: 'server.data_loss_accepted', losses: verdict.losses.length, pushes_lost_known: pushes,
      lsn_ranges: verdict.losses.filter((e) => e.lsnFrom >= 0).map((e) => [e.lsnFrom, e.lsnTo]), registry_version: opened.registryVersion,
    }, `started with --accept-data-loss: ${verdict.losses.length} loss(es) accepted`);
  }
  return { accepted: verdict.losses, raised: opened.wire };
}
