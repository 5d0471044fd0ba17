/**
 * `streamfeat serve`: resolve the config (src/config.ts), start the server, and
 * own the process lifecycle: the first SIGTERM/SIGINT starts a graceful shutdown
 * bounded by --shutdown-timeout (SHUTDOWN_DEADLINE_MS; past it: server.stop_deadline, exit 1); a
 * second signal exits at once (exit 130 / 143, what a shell reports for a signal
 * death). A signal during recovery exits at once too. The WAL holds every
 * acknowledged push, so leaving early only costs the final snapshot (recovery
 * replays what it would have saved).
 */
import { type CliCommand, UsageError } from './cli_args';
import { resolveServerConfig, SERVE_COMMAND } from './config';

const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

export const SERVE_CLI: CliCommand = {
  spec: SERVE_COMMAND,
  async run(p) {
    const config = resolveServerConfig(p.values, process.env);
    // Server modules load only for `serve`, so client subcommands start fast.
    const { createLogger, flushLogs } = await import('./log');
    const { startServer } = await import('./server');
    const { StartupError } = await import('./startup_error');
    const log = createLogger(config.logLevel);
    let stopping: string | null = null;
    let close: (() => Promise<void>) | null = null;
    const stop = (signal: string): void => {
      if (stopping !== null) {
        log.warn({ kind: 'server.stop_forced', signal, first: stopping });
        process.exit(SIGNAL_EXIT[signal] ?? 1);
      }
      stopping = signal;
      log.info({ kind: 'server.stopping', signal, deadline_ms: config.shutdownTimeoutMs });
      setTimeout(() => {
        log.error({ kind: 'server.stop_deadline', deadline_ms: config.shutdownTimeoutMs });
        process.exit(1);
      }, config.shutdownTimeoutMs).unref();
      if (close !== null) { shutdown(close); return; }
      // Still recovering: nothing acknowledged can be lost (no listener accepts data
      // yet) and recovery may take long; the next start replays from the same files.
      log.info({ kind: 'server.stopped', during: 'recovery' });
      process.exit(0);
    };
    const shutdown = (fn: () => Promise<void>): void => {
      // Waiting log lines are written first, for at most LOG_FLUSH_TIMEOUT_MS (a stalled stdout reader must not stop an exit).
      fn().then(
        () => flushLogs().then(() => process.exit(0)),
        (err) => { log.error({ kind: 'server.stop_failed', err }); void flushLogs().then(() => process.exit(1)); },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    try {
      const server = await startServer(config, log);
      close = () => server.close();
    } catch (err) {
      // A data dir problem (unwritable, a file, full, in use, written with another shard count), a port
      // taken, a bad token file: exit 2 with
      // the message. What start-up acquired before it failed (worker threads, a bound listener) would keep
      // the process alive, so exit once the message is written (the next macrotask).
      // A filesystem error under the data dir that a worker thread met while recovering (the front
      // checked the data dir first, so this is rare: a file changed meanwhile) is one line too.
      const oneLine = err instanceof StartupError ? err : config.memoryOnly ? null : (await import('./data_dir')).startupFsError(err, config.dataDir);
      if (oneLine !== null) {
        setImmediate(() => process.exit(2));
        throw new UsageError(oneLine.message, false);
      }
      // Loaded only in cluster mode (a single node never loads the NATS client).
      if (config.cluster !== null && err instanceof (await import('./cluster/node')).ClusterSetupError) throw new UsageError(err.message);
      throw err;
    }
    return 0;
  },
};
