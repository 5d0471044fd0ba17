/**
 * The one command-line mechanism of every streamfeat command (serve, wal-check,
 * the client subcommands, the bench driver): a command is described once as a
 * CommandSpec, parsed with node:util parseArgs (strict), and its --help text is
 * generated from the same description, so a flag cannot be accepted without
 * being documented, or documented without being accepted.
 *
 * Bad command lines raise UsageError with ONE line of text; callers print it
 * and exit 2 (EXIT_USAGE). Imports only node built-ins: the standalone
 * client package (packages/streamfeat-client) is built from these sources.
 */
import { parseArgs } from 'node:util';

export const EXIT_OK = 0;
export const EXIT_ERROR = 1;
export const EXIT_USAGE = 2;

/**
 * A bad command line or input: one line, exit 2. `withHelpHint` false leaves off
 * the "see --help" pointer, for messages that carry their own fix (a server that
 * cannot start because of its data dir or a port).
 */
export class UsageError extends Error {
  constructor(message: string, readonly withHelpHint = true) {
    super(message);
  }
}

export interface OptionSpec {
  /** Long name without the dashes. */
  name: string;
  type: 'string' | 'boolean';
  /** Placeholder shown in help for string options (N, HOST:PORT, FILE). */
  value?: string;
  help: string;
  /** Shown in help only; the command resolves env and defaults itself. */
  env?: string;
  default?: string;
}

export interface CommandSpec {
  /** As typed: `push`, `wal-check`; the program name is prepended in help. */
  name: string;
  /** One line for the command list. */
  summary: string;
  /** Positional arguments as shown: EVENT, JSON, FILE; a trailing '?' marks an optional one. */
  args: string[];
  options: OptionSpec[];
  /** Extra help paragraphs (formats, examples, exit codes). */
  notes?: string[];
}

export interface ParsedCommand {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
  /** --help / -h was given: print help, ignore everything else. */
  help: boolean;
}

export function usageLine(program: string, spec: CommandSpec): string {
  const args = spec.args.map((a) => (a.endsWith('?') ? `[${a.slice(0, -1)}]` : a));
  return [program, spec.name, ...args, ...(spec.options.length > 0 ? ['[options]'] : [])].filter((w) => w !== '').join(' ');
}

/** Parses argv (without the command name). Throws UsageError on anything not in the spec. */
export function parseCommand(program: string, spec: CommandSpec, argv: readonly string[]): ParsedCommand {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const o of spec.options) options[o.name] = { type: o.type };
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
  } catch (e) {
    throw new UsageError(parseArgsMessage(e as Error & { code?: string }, spec));
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const help = values.help === true;
  if (!help) {
    const need = spec.args.filter((a) => !a.endsWith('?')).length;
    const n = parsed.positionals.length;
    const form = usageLine(program, spec);
    if (n < need) throw new UsageError(`expected: ${form}`);
    if (n > spec.args.length) throw new UsageError(`unexpected argument ${parsed.positionals[spec.args.length]}; expected: ${form}`);
  }
  return { values, positionals: parsed.positionals, help };
}

/** parseArgs' messages are long and quote JS option objects; say the same thing in our words. */
function parseArgsMessage(e: Error & { code?: string }, spec: CommandSpec): string {
  const flag = /'(-[^' ]+)/.exec(e.message)?.[1] ?? '';
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    return /^-\d/.test(flag) ? `unknown option ${flag} (put arguments that start with '-' after '--')` : `unknown option ${flag}`;
  }
  if (e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const known = spec.options.find((o) => `--${o.name}` === flag);
    return known?.type === 'boolean' ? `${flag} takes no value` : `${flag} needs a value`;
  }
  return e.message.split('\n')[0];
}

/** Option column width of help; longer flags put their description on the next line. */
const HELP_COLUMN = 30;

/** Help text: usage, summary, an aligned option table (with env and default when given), notes. */
export function formatHelp(program: string, spec: CommandSpec): string {
  const rows = spec.options.map((o) => {
    const left = `--${o.name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`;
    const extra = [o.env !== undefined ? `env ${o.env}` : '', o.default !== undefined ? `default ${o.default}` : ''].filter((s) => s !== '');
    return [left, extra.length > 0 ? `${o.help} (${extra.join(', ')})` : o.help];
  });
  rows.push(['--help, -h', 'print this help']);
  const width = Math.min(HELP_COLUMN, Math.max(...rows.map((r) => r[0].length)) + 2);
  const lines = [`usage: ${usageLine(program, spec)}`, '', spec.summary, '', 'options:'];
  for (const [l, r] of rows) {
    if (l.length + 2 <= width) lines.push(`  ${l.padEnd(width)}${r}`);
    else lines.push(`  ${l}`, `  ${''.padEnd(width)}${r}`);
  }
  for (const n of spec.notes ?? []) lines.push('', n);
  return `${lines.join('\n')}\n`;
}

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

export const processIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

/** A command of the `streamfeat` program: its spec and what it does with a parsed command line. */
export interface CliCommand<Io extends CliIo = CliIo> {
  spec: CommandSpec;
  run(p: ParsedCommand, io: Io): Promise<number> | number;
}

/**
 * Parses, answers --help, runs. A UsageError (from parsing or from the command,
 * e.g. a bad input file) prints one line and returns EXIT_USAGE.
 */
export async function runCli<Io extends CliIo>(program: string, cmd: CliCommand<Io>, argv: readonly string[], io: Io): Promise<number> {
  try {
    const p = parseCommand(program, cmd.spec, argv);
    if (p.help) {
      io.out(formatHelp(program, cmd.spec).trimEnd());
      return EXIT_OK;
    }
    return await cmd.run(p, io);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(e.withHelpHint ? `error: ${e.message} (see: ${program} ${cmd.spec.name} --help)` : `error: ${e.message}`);
    return EXIT_USAGE;
  }
}

export function stringValue(p: ParsedCommand, name: string): string | undefined {
  const v = p.values[name];
  return typeof v === 'string' ? v : undefined;
}

/** A number >= min (an integer unless told otherwise); `flag` names it in the error. */
export function numberArg(flag: string, raw: string | undefined, min: number, integer = true): number {
  const n = raw === undefined || raw.trim() === '' ? NaN : Number(raw);
  if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
    throw new UsageError(`${flag} needs ${integer ? 'an integer' : 'a number'} >= ${min}, got ${raw ?? '(nothing)'}`);
  }
  return n;
}

/** A comma-separated list of numbers >= min (e.g. `0,5,15,25`). */
export function numberListArg(flag: string, raw: string | undefined, min: number): number[] {
  if (raw === undefined || raw === '') throw new UsageError(`${flag} needs a comma-separated list of numbers >= ${min}, got (nothing)`);
  return raw.split(',').map((x) => numberArg(flag, x.trim(), min, false));
}

export function oneOfArg<T extends string>(flag: string, raw: string | undefined, allowed: readonly T[]): T {
  if (raw === undefined || !(allowed as readonly string[]).includes(raw)) {
    throw new UsageError(`${flag} must be one of ${allowed.join(', ')}, got ${raw ?? '(nothing)'}`);
  }
  return raw as T;
}

/**
 * A reader that goes away (`streamfeat registry | head -c1`, `npm run bench -- list | head`)
 * ends our output, not our command: exit quietly (0) instead of printing an EPIPE stack.
 * Exiting runs the process's 'exit' handlers (the bench kills the servers it started there).
 * The server logs through its own destinations (src/log.ts), which ignore EPIPE and keep serving.
 */
export function exitQuietlyOnEpipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}
