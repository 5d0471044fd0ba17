/**
 * Client subcommands of the `streamfeat` CLI (issue 7 item 5). src/cli.ts
 * dispatches `push get batch-get register ping registry reset` here.
 *
 *   streamfeat push EVENT '{json}' [--retry]
 *   streamfeat get TABLE KEY [--features a,b]
 *   streamfeat batch-get FILE            (FILE: JSON array of {table,key,features?} or {requests:[...]}; - = stdin)
 *   streamfeat register FILE.json [--force] [--dry-run]   (FILE: {nodes:[...]} or an array of nodes)
 *   streamfeat ping | registry | reset
 *   common: --url URL (default $STREAMFEAT_URL or http://127.0.0.1:8080), --json,
 *           --timeout-ms N, --http-url URL (registry over a tcp:// url)
 *
 * Exit codes: 0 ok; 1 the server (or the connection) reported an error, printed
 * as "error: <code> (<status>): <message>"; 2 bad command line or input file.
 */
import { readFileSync } from 'node:fs';
import { Client } from './client';
import type { BatchGetEntry } from './client';
import { formatError, formatPush, formatRegister, formatRegistry, formatRow } from './cli_format';
import { StreamfeatError } from './errors';
import type { WireNode } from './wire';
import type { KeyInput, NativeData } from './values';

export const CLIENT_COMMANDS = ['push', 'get', 'batch-get', 'register', 'ping', 'registry', 'reset'] as const;
export const CLI_URL_DEFAULT = 'http://127.0.0.1:8080';

export const EXIT_OK = 0;
export const EXIT_ERROR = 1;
export const EXIT_USAGE = 2;

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  /** Reads a file ('-' = stdin); injectable for tests. */
  readFile(path: string): string;
}

const defaultIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  readFile: (path) => readFileSync(path === '-' ? 0 : path, 'utf8'),
};

export const CLIENT_USAGE = [
  'usage:',
  "  streamfeat push EVENT '{json}' [--retry]",
  '  streamfeat get TABLE KEY [--features a,b]',
  '  streamfeat batch-get FILE',
  '  streamfeat register FILE.json [--force] [--dry-run]',
  '  streamfeat ping | registry | reset',
  'options: --url URL (http://host:port or tcp://host:port; default $STREAMFEAT_URL or http://127.0.0.1:8080)',
  '         --json (raw JSON output)  --timeout-ms N  --http-url URL (registry over tcp)',
];

class UsageError extends Error {}

interface Parsed {
  positional: string[];
  flags: Map<string, string | true>;
}

const VALUE_FLAGS = new Set(['url', 'features', 'timeout-ms', 'http-url']);
const BOOL_FLAGS = new Set(['json', 'force', 'dry-run', 'retry', 'help']);

/** Runs one client subcommand; `argv` starts with the subcommand name. Returns the exit code. */
export async function runClientCommand(argv: string[], io: CliIo = defaultIo): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = parseArgs(argv);
  } catch (e) {
    return usage(io, (e as Error).message);
  }
  const [command, ...args] = parsed.positional;
  if (parsed.flags.has('help') || command === 'help') {
    for (const line of CLIENT_USAGE) io.out(line);
    return EXIT_OK;
  }
  if (command === undefined) return usage(io, 'missing command');
  if (!(CLIENT_COMMANDS as readonly string[]).includes(command)) return usage(io, `unknown command: ${command}`);
  const json = parsed.flags.has('json');
  let client: Client;
  try {
    client = new Client(stringFlag(parsed, 'url') ?? process.env.STREAMFEAT_URL ?? CLI_URL_DEFAULT, {
      timeoutMs: intFlag(parsed, 'timeout-ms'),
      httpUrl: stringFlag(parsed, 'http-url'),
    });
  } catch (e) {
    return usage(io, (e as Error).message);
  }
  try {
    return await runCommand(client, command, args, parsed, json, io);
  } catch (e) {
    if (e instanceof UsageError) return usage(io, e.message);
    if (!(e instanceof StreamfeatError)) throw e;
    if (json) io.out(JSON.stringify(errorJson(e)));
    else for (const line of formatError(e)) io.err(line);
    return EXIT_ERROR;
  } finally {
    await client.close();
  }
}

async function runCommand(client: Client, command: string, args: string[], p: Parsed, json: boolean, io: CliIo): Promise<number> {
  const print = (reply: unknown, human: string[]): void => {
    if (json) io.out(JSON.stringify(reply));
    else for (const line of human) io.out(line);
  };
  switch (command) {
    case 'push': {
      const [event, dataText] = need(args, 2, 'push EVENT \'{json}\'');
      const data = parseJson(dataText, 'push data');
      if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new UsageError('push data must be a JSON object');
      const ack = await client.push(event, data as NativeData, p.flags.has('retry') ? { retry: true } : {});
      print(ack, formatPush(ack));
      return EXIT_OK;
    }
    case 'get': {
      const [table, keyText] = need(args, 2, 'get TABLE KEY [--features a,b]');
      const featuresText = stringFlag(p, 'features');
      const features = featuresText === undefined ? undefined : featuresText.split(',').map((f) => f.trim()).filter((f) => f !== '');
      const row = await client.get(table, parseKey(keyText), features);
      print(row, formatRow(row, keyText));
      return EXIT_OK;
    }
    case 'batch-get':
      return batchGet(client, need(args, 1, 'batch-get FILE')[0], json, io);
    case 'register': {
      const [file] = need(args, 1, 'register FILE.json [--force] [--dry-run]');
      const nodes = readNodes(io, file);
      const r = await client.register(nodes, { force: p.flags.has('force'), dryRun: p.flags.has('dry-run') });
      print(r, formatRegister(r));
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

async function batchGet(client: Client, file: string, json: boolean, io: CliIo): Promise<number> {
  const input = parseJson(readInput(io, file), file);
  const requests = Array.isArray(input) ? input : (input as { requests?: unknown } | null)?.requests;
  if (!Array.isArray(requests)) throw new UsageError(`${file}: expected an array of {table, key, features?} or {"requests": [...]}`);
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

function readNodes(io: CliIo, file: string): WireNode[] {
  const input = parseJson(readInput(io, file), file);
  if (Array.isArray(input)) return input as WireNode[];
  const nodes = (input as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes)) throw new UsageError(`${file}: expected {"nodes": [...]} or an array of nodes`);
  return nodes as WireNode[];
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

function parseArgs(argv: string[]): Parsed {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--') || a === '--') {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq < 0 ? a.slice(2) : a.slice(2, eq);
    if (VALUE_FLAGS.has(name)) {
      const value = eq < 0 ? argv[++i] : a.slice(eq + 1);
      if (value === undefined) throw new Error(`--${name} needs a value`);
      flags.set(name, value);
    } else if (BOOL_FLAGS.has(name) && eq < 0) {
      flags.set(name, true);
    } else {
      throw new Error(`unknown option --${name}`);
    }
  }
  return { positional, flags };
}

function stringFlag(p: Parsed, name: string): string | undefined {
  const v = p.flags.get(name);
  return typeof v === 'string' ? v : undefined;
}

function intFlag(p: Parsed, name: string): number | undefined {
  const v = stringFlag(p, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer`);
  return n;
}

function need(args: string[], n: number, form: string): string[] {
  if (args.length < n) throw new UsageError(`expected: streamfeat ${form}`);
  if (args.length > n) throw new UsageError(`unexpected argument ${args[n]}; expected: streamfeat ${form}`);
  return args;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${what} is not valid JSON: ${(e as Error).message}`);
  }
}

function readInput(io: CliIo, file: string): string {
  try {
    return io.readFile(file);
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as Error).message}`);
  }
}

function usage(io: CliIo, message: string): number {
  io.err(`error: ${message}`);
  for (const line of CLIENT_USAGE) io.err(line);
  return EXIT_USAGE;
}
