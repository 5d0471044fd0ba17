#!/usr/bin/env node
/**
 * The `streamfeat` program. `serve` starts the server (the default command);
 * the others are one-shot tools. Every command is a CliCommand (src/cli_args.ts):
 * `streamfeat help CMD` and `streamfeat CMD --help` print its generated help,
 * a bad command line prints one line and exits 2. A command's module loads only
 * when it runs, so client commands do not load the server.
 *
 * To add a command: one entry in COMMANDS.
 */
import { type CliCommand, EXIT_OK, EXIT_USAGE, exitQuietlyOnEpipe, processIo, runCli } from './cli_args';

const PROGRAM = 'streamfeat';

const client = (name: string) => async (): Promise<CliCommand> => (await import('./client/cli_commands')).clientCommand(name) as CliCommand;

const COMMANDS: Record<string, () => Promise<CliCommand>> = {
  serve: async () => (await import('./serve_cli')).SERVE_CLI,
  'wal-check': async () => (await import('./wal_check_cli')).WAL_CHECK_COMMAND,
  replay: async () => (await import('./training/replay_cli')).REPLAY_COMMAND,
  export: async () => (await import('./training/export_cli')).EXPORT_COMMAND,
  push: client('push'),
  get: client('get'),
  'batch-get': client('batch-get'),
  forget: client('forget'),
  register: client('register'),
  ping: client('ping'),
  registry: client('registry'),
  reset: client('reset'),
  info: async () => (await import('./admin_cli')).INFO_COMMAND,
  inspect: async () => (await import('./admin_cli')).INSPECT_COMMAND,
};

async function overview(): Promise<string> {
  const rows = await Promise.all(Object.entries(COMMANDS).map(async ([name, load]) => [name, (await load()).spec.summary.split('. ')[0].replace(/\.$/, '')]));
  const width = Math.max(...rows.map((r) => r[0].length)) + 2;
  return [
    `usage: ${PROGRAM} COMMAND [options]      (no command = serve)`,
    '',
    'commands:',
    ...rows.map(([n, s]) => `  ${n.padEnd(width)}${s}`),
    '',
    `${PROGRAM} help COMMAND (or ${PROGRAM} COMMAND --help) for its options; ${PROGRAM} --version`,
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  exitQuietlyOnEpipe(process.stdout);
  exitQuietlyOnEpipe(process.stderr);
  const [cmd, ...rest] = argv;
  if (cmd === '--version' || cmd === '-V' || cmd === 'version') {
    processIo.out((await import('./version')).VERSION);
    return EXIT_OK;
  }
  if (cmd === 'help' || cmd === '--help' || cmd === '-h') {
    const topic = rest[0];
    if (topic === undefined) { processIo.out(await overview()); return EXIT_OK; }
    if (!(topic in COMMANDS)) { processIo.err(`error: no command ${topic} (see: ${PROGRAM} help)`); return EXIT_USAGE; }
    return runCli(PROGRAM, await COMMANDS[topic](), ['--help'], processIo);
  }
  // No command, or flags first (`streamfeat --http-addr ...`): serve.
  if (cmd === undefined || cmd.startsWith('-')) return runCli(PROGRAM, await COMMANDS.serve(), argv, processIo);
  if (!(cmd in COMMANDS)) { processIo.err(`error: unknown command ${cmd} (see: ${PROGRAM} help)`); return EXIT_USAGE; }
  return runCli(PROGRAM, await COMMANDS[cmd](), rest, processIo);
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err) => {
    process.stderr.write(`${PROGRAM}: ${(err as Error)?.stack ?? err}\n`);
    process.exit(1);
  },
);
