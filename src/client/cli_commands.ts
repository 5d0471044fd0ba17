/**
 * Client subcommands of the `streamfeat` CLI (issue 7 item 5). src/cli.ts
 * dispatches `push get batch-get register ping registry reset` here; each has
 * its own spec (and so its own --help) in CLIENT_SPECS.
 *
 * Exit codes: 0 ok; 1 the server (or the connection) reported an error, printed
 * as "error: <code> (<status>): <message>"; 2 bad command line or input file;
 * 3 `register --dry-run` of a change the server would refuse without --force
 * (so a CI step can gate on it).
 */
import { readFileSync } from 'node:fs';
import { type CliCommand, type CliIo as BaseIo, type CommandSpec, type OptionSpec, type ParsedCommand, EXIT_ERROR, EXIT_OK, EXIT_USAGE, numberArg, processIo, runCli, stringValue, UsageError } from '../cli_args';
import { Client } from './client';
import type { BatchGetEntry } from './client';
import { formatError, formatPush, formatRegister, formatRegistry, formatRow } from './cli_format';
import { StreamfeatError } from './errors';
import type { WireNode } from './wire';
import type { KeyInput, NativeData } from './values';

export { EXIT_ERROR, EXIT_OK, EXIT_USAGE };
/** `register --dry-run`: the change is destructive and would be refused without --force. */
export const EXIT_NEEDS_FORCE = 3;
export const CLI_URL_DEFAULT = 'http://127.0.0.1:8080';

export interface CliIo extends BaseIo {
  /** Reads a file ('-' = stdin); injectable for tests. */
  readFile(path: string): string;
}

const defaultIo: CliIo = { ...processIo, readFile: (path) => readFileSync(path === '-' ? 0 : path, 'utf8') };

const COMMON: OptionSpec[] = [
  { name: 'url', type: 'string', value: 'URL', help: 'server: http://host:port or tcp://host:port', env: 'STREAMFEAT_URL', default: CLI_URL_DEFAULT },
  { name: 'json', type: 'boolean', help: 'print the raw JSON reply' },
  { name: 'timeout-ms', type: 'string', value: 'N', help: 'per-request timeout', default: '30000' },
  { name: 'http-url', type: 'string', value: 'URL', help: 'HTTP address for registry/register when --url is tcp://' },
  { name: 'token', type: 'string', value: 'T', help: "the server's auth token, if it has one (docs/security.md)", env: 'STREAMFEAT_TOKEN' },
  { name: 'token-file', type: 'string', value: 'FILE', help: 'read the auth token from FILE', env: 'STREAMFEAT_TOKEN_FILE' },
];
const EXIT_NOTE = 'exit codes: 0 ok, 1 the server or the connection reported an error, 2 bad command line or input';

function spec(name: string, args: string[], summary: string, own: OptionSpec[] = [], notes: string[] = [], exitNote = EXIT_NOTE): CommandSpec {
  return { name, args, summary, options: [...own, ...COMMON], notes: [...notes, exitNote] };
}
/** What a JSON argument may be: the text itself, a file, or - for stdin. */
const JSON_ARG_NOTE = 'an argument that starts with [ or { is inline JSON unless a file has that name; - reads stdin';

export const CLIENT_SPECS: Record<string, CommandSpec> = {
  push: spec('push', ['EVENT', 'JSON'], "Push one event: streamfeat push Txn '{\"card\":\"c1\",\"amount\":5}'.",
    [{ name: 'retry', type: 'boolean', help: 'retry retryable errors with backoff (spec 7.1)' }]),
  get: spec('get', ['TABLE', 'KEY'], 'Read one row. KEY: a JSON array or number as parsed, a JSON string unquoted, anything else as written.',
    [{ name: 'features', type: 'string', value: 'A,B', help: 'only these features' }]),
  'batch-get': spec('batch-get', ['FILE'], 'Read many rows in one request.', [],
    [`FILE: a file holding a JSON array of {"table","key","features"?} or {"requests": [...]}, or that JSON itself; ${JSON_ARG_NOTE}. Exit 1 when any entry failed.`]),
  register: spec('register', ['FILE'], 'Register events, derived events and tables.', [
    { name: 'force', type: 'boolean', help: 'allow breaking changes (drops state of changed tables)' },
    { name: 'dry-run', type: 'boolean', help: 'print the diff, change nothing; exit 3 if the change needs --force' },
  ], [`FILE: a file holding {"nodes": [...]} or an array of nodes (the wire form of spec 3), or that JSON itself; ${JSON_ARG_NOTE}.`],
  'exit codes: 0 ok (with --dry-run: the change would apply as it is), 1 the server or the connection reported an error (a register refused with force_required included), 2 bad command line or input, 3 with --dry-run: the change is destructive and would be refused without --force'),
  ping: spec('ping', [], 'Check that the server answers; prints its registry version.'),
  registry: spec('registry', [], 'Print the registered nodes.'),
  reset: spec('reset', [], 'Drop every registration and all state (server must run with --test-mode).'),
};

export const CLIENT_COMMANDS = Object.keys(CLIENT_SPECS);

/** The command for src/cli.ts; an io without readFile reads real files. */
export function clientCommand(name: string): CliCommand {
  return { spec: CLIENT_SPECS[name], run: (p, io) => runParsed(name, p, { readFile: defaultIo.readFile, ...io }) };
}

/** Runs one client subcommand; `argv` starts with the subcommand name. Returns the exit code. */
export async function runClientCommand(argv: string[], io: CliIo = defaultIo): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || !(command in CLIENT_SPECS)) {
    io.err(`error: ${command === undefined ? 'missing command' : `unknown command: ${command}`}; usage: streamfeat ${CLIENT_COMMANDS.join('|')} ... (streamfeat help)`);
    return EXIT_USAGE;
  }
  return runCli('streamfeat', clientCommand(command), rest, io);
}

async function runParsed(command: string, parsed: ParsedCommand, io: CliIo): Promise<number> {
  const json = parsed.values.json === true;
  const timeout = stringValue(parsed, 'timeout-ms');
  const timeoutMs = timeout === undefined ? undefined : numberArg('--timeout-ms', timeout, 1);
  let client: Client;
  try {
    client = new Client(stringValue(parsed, 'url') ?? process.env.STREAMFEAT_URL ?? CLI_URL_DEFAULT, {
      timeoutMs,
      httpUrl: stringValue(parsed, 'http-url'),
      token: tokenOf(parsed, io),
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  try {
    return await runCommand(client, command, parsed.positionals, parsed, json, io);
  } catch (e) {
    if (!(e instanceof StreamfeatError)) throw e;
    if (json) io.out(JSON.stringify(errorJson(e)));
    else for (const line of formatError(e)) io.err(line);
    return EXIT_ERROR;
  } finally {
    await client.close();
  }
}

/** --token, else --token-file, else $STREAMFEAT_TOKEN, else $STREAMFEAT_TOKEN_FILE; undefined = none. */
function tokenOf(p: ParsedCommand, io: CliIo): string | undefined {
  const direct = stringValue(p, 'token');
  if (direct !== undefined) return direct;
  const file = stringValue(p, 'token-file');
  if (file !== undefined) return readToken(io, file);
  if (process.env.STREAMFEAT_TOKEN) return process.env.STREAMFEAT_TOKEN;
  if (process.env.STREAMFEAT_TOKEN_FILE) return readToken(io, process.env.STREAMFEAT_TOKEN_FILE);
  return undefined;
}

function readToken(io: CliIo, file: string): string {
  try {
    return io.readFile(file).trim();
  } catch (e) {
    throw new Error(`cannot read token file ${file}: ${(e as Error).message}`);
  }
}

async function runCommand(client: Client, command: string, args: string[], p: ParsedCommand, json: boolean, io: CliIo): Promise<number> {
  const print = (reply: unknown, human: string[]): void => {
    if (json) io.out(JSON.stringify(reply));
    else for (const line of human) io.out(line);
  };
  switch (command) {
    case 'push': {
      const [event, dataText] = args;
      const data = parseJson(dataText, 'push data');
      if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new UsageError('push data must be a JSON object');
      const ack = await client.push(event, data as NativeData, p.values.retry === true ? { retry: true } : {});
      print(ack, formatPush(ack));
      return EXIT_OK;
    }
    case 'get': {
      const [table, keyText] = args;
      const featuresText = stringValue(p, 'features');
      const features = featuresText === undefined ? undefined : featuresText.split(',').map((f) => f.trim()).filter((f) => f !== '');
      const row = await client.get(table, parseKey(keyText), features);
      print(row, formatRow(row, keyText));
      return EXIT_OK;
    }
    case 'batch-get':
      return batchGet(client, args[0], json, io);
    case 'register': {
      const [file] = args;
      const nodes = readNodes(io, file);
      const r = await client.register(nodes, { force: p.values.force === true, dryRun: p.values['dry-run'] === true });
      print(r, formatRegister(r));
      if (r.dry_run === true && r.would_apply === false) {
        if (!json) io.err(`refused without --force: the change is destructive (exit ${EXIT_NEEDS_FORCE}); re-run with --force to apply it`);
        return EXIT_NEEDS_FORCE;
      }
      return EXIT_OK;
    }
    case 'ping': {
      const r = await client.ping();
      print(r, [`pong registry_version=${r.registry_version}${r.server_version === undefined ? '' : ` server_version=${r.server_version}`} (${client.url})`]);
      return EXIT_OK;
    }
    case 'registry': {
      const r = await client.registry();
      print(r, formatRegistry(r));
      return EXIT_OK;
    }
    default: {
      const r = await client.reset();
      print(r, [`reset: registry_version=${r.registry_version}`]);
      return EXIT_OK;
    }
  }
}

async function batchGet(client: Client, arg: string, json: boolean, io: CliIo): Promise<number> {
  const { value: input, from } = readJsonArg(io, arg);
  const requests = Array.isArray(input) ? input : (input as { requests?: unknown } | null)?.requests;
  if (!Array.isArray(requests)) throw new UsageError(`${from}: expected an array of {table, key, features?} or {"requests": [...]}`);
  const results = await client.batchGet(requests as BatchGetEntry[]);
  const failed = results.filter((r) => r instanceof StreamfeatError).length;
  if (json) {
    io.out(JSON.stringify({ results: results.map((r) => (r instanceof StreamfeatError ? errorJson(r) : r)) }));
  } else {
    results.forEach((r, i) => {
      const req = requests[i] as { table?: unknown; key?: unknown };
      const label = `[${i}] ${String(req.table)} ${JSON.stringify(req.key)}`;
      if (r instanceof StreamfeatError) io.out(`${label}: error: ${r.describe()}`);
      else io.out(`${label}: ${Object.keys(r).length === 0 ? '(no events for this key)' : JSON.stringify(r)}`);
    });
    if (failed > 0) io.err(`error: ${failed} of ${results.length} entries failed`);
  }
  return failed > 0 ? EXIT_ERROR : EXIT_OK;
}

function readNodes(io: CliIo, arg: string): WireNode[] {
  const { value: input, from } = readJsonArg(io, arg);
  if (Array.isArray(input)) return input as WireNode[];
  const nodes = (input as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes)) throw new UsageError(`${from}: expected {"nodes": [...]} or an array of nodes`);
  return nodes as WireNode[];
}

/**
 * A JSON argument: `-` is stdin, a path that can be read is a file, and text
 * that starts with `[` or `{` and names no file is the JSON itself. Errors say
 * which was tried, so `ENOENT` never hides a typo in inline JSON.
 */
function readJsonArg(io: CliIo, arg: string): { value: unknown; from: string } {
  const from = arg === '-' ? 'stdin' : `file ${arg}`;
  let text: string;
  try {
    text = io.readFile(arg);
  } catch (e) {
    const looksInline = /^\s*[[{]/.test(arg);
    if (!looksInline) throw new UsageError(`cannot read ${from}: ${(e as Error).message} (an argument that starts with [ or { is read as inline JSON)`);
    try {
      return { value: JSON.parse(arg), from: 'inline JSON' };
    } catch (pe) {
      throw new UsageError(`inline JSON is not valid: ${(pe as Error).message} (no file has that name either)`);
    }
  }
  return { value: parseJson(text, from), from };
}

/** KEY: a JSON array or number as parsed, a JSON string unquoted, anything else as written. */
export function parseKey(text: string): KeyInput {
  try {
    const v: unknown = JSON.parse(text);
    if (Array.isArray(v) || typeof v === 'number' || typeof v === 'string') return v as KeyInput;
  } catch {
    // Not JSON: a plain string key.
  }
  return text;
}

function errorJson(e: StreamfeatError): Record<string, unknown> {
  const error: Record<string, unknown> = { ...e.detail, code: e.code, message: e.message };
  if (e.path !== undefined) error.path = e.path;
  if (e.reason !== undefined) error.reason = e.reason;
  if (e.diff !== undefined) error.diff = e.diff;
  const out: Record<string, unknown> = { error, status: e.status };
  if (e.errors.length > 0) out.errors = e.errors;
  if (e.registryVersion !== undefined) out.registry_version = e.registryVersion;
  return out;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${what} is not valid JSON: ${(e as Error).message}`);
  }
}
