#!/usr/bin/env node
/**
 * `streamfeat` command: `serve` starts the server (the default); the client
 * subcommands (push, get, batch-get, register, ping, registry) talk to one.
 */
import { ConfigError, parseServeArgs, USAGE } from './config';

const CLIENT_COMMANDS = new Set(['push', 'get', 'batch-get', 'register', 'ping', 'registry', 'reset']);

async function serve(argv: string[]): Promise<void> {
  let config;
  try {
    config = parseServeArgs(argv, process.env);
  } catch (err) {
    if (err instanceof ConfigError) { process.stderr.write(`streamfeat: ${err.message}\n`); process.exit(2); }
    throw err;
  }
  // Server modules load only for `serve`, so client subcommands start fast.
  const { createLogger } = await import('./log');
  const { startServer } = await import('./server');
  const { DataDirError } = await import('./data_dir');
  const { ClusterSetupError } = await import('./cluster/node');
  const log = createLogger(config.logLevel);
  let server;
  try {
    server = await startServer(config, log);
  } catch (err) {
    if (err instanceof DataDirError || err instanceof ClusterSetupError) { process.stderr.write(`streamfeat: ${err.message}\n`); process.exit(2); }
    throw err;
  }
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ kind: 'server.stopping', signal });
    server.close().then(() => process.exit(0), (err) => { log.error({ kind: 'server.stop_failed', err: String(err) }); process.exit(1); });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function main(): Promise<void> {
  const [cmd, ...rest] = process.argv.slice(2);
  if (cmd === undefined || cmd === 'serve') return serve(rest);
  if (cmd.startsWith('--')) return serve(process.argv.slice(2));
  if (cmd === 'help' || cmd === '--help' || cmd === '-h') { process.stdout.write(USAGE); return; }
  if (cmd === 'wal-check') {
    const { runWalCheck } = await import('./wal_check_cli');
    process.exitCode = runWalCheck(rest);
    return;
  }
  if (CLIENT_COMMANDS.has(cmd)) {
    const { runClientCommand } = await import('./client/cli_commands');
    process.exitCode = await runClientCommand([cmd, ...rest]);
    return;
  }
  process.stderr.write(`streamfeat: unknown command ${cmd}\n\n${USAGE}`);
  process.exit(2);
}

main().catch((err) => {
  process.stderr.write(`streamfeat: ${(err as Error)?.stack ?? err}\n`);
  process.exit(1);
});
