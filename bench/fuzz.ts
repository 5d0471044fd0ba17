/**
 * The long fuzz run: `npm run fuzz -- --seconds N [--seed S]
 * [--concurrency C] [--shards K] [--data-dir] [--only I,J,...]`. Starts its own
 * server (the test harness's startServer: --test-mode, --memory-only unless
 * --data-dir), runs the generators of test/fuzz/gen.ts through the same engine as
 * the bounded run in `npm test`, prints progress, inputs tried, per-category
 * counts, outcomes and every crash/hang/wrong answer with the seed and index that
 * replay it (`--seed S --only I`). Exit code 1 when anything failed.
 */
import { type CommandSpec, EXIT_USAGE, exitQuietlyOnEpipe, formatHelp, numberArg, numberListArg, parseCommand, stringValue, UsageError } from '../src/cli_args';
import { startServer } from '../test/harness/server';
import { formatReport, runFuzz } from '../test/fuzz/engine';

const PROGRAM = 'npm run fuzz --';
const SPEC: CommandSpec = {
  name: '', args: [], summary: 'Fuzz a server it starts with seeded HTTP and TCP inputs; exit 1 on any crash, hang or wrong answer.',
  options: [
    { name: 'seconds', type: 'string', value: 'N', help: 'input loop budget', default: '60' },
    { name: 'seed', type: 'string', value: 'S', help: 'generator seed', default: 'time-based, printed' },
    { name: 'concurrency', type: 'string', value: 'C', help: 'inputs in flight', default: '8' },
    { name: 'shards', type: 'string', value: 'K', help: 'server shards', default: '2' },
    { name: 'data-dir', type: 'boolean', help: 'run the server with a data dir (WAL) instead of --memory-only' },
    { name: 'only', type: 'string', value: 'I,J', help: 'replay only these input indices of the seed' },
  ],
};

interface FuzzArgs {
  seconds: number;
  seed: number;
  concurrency: number;
  shards: number;
  dataDir: boolean;
  only?: number[];
}

function parse(argv: string[]): FuzzArgs | null {
  const p = parseCommand(PROGRAM, SPEC, argv);
  if (p.help) return null;
  const n = (name: string, def: number, min: number): number => {
    const v = stringValue(p, name);
    return v === undefined ? def : numberArg(`--${name}`, v, min);
  };
  const only = stringValue(p, 'only');
  return {
    seconds: n('seconds', 60, 0),
    seed: n('seed', (Date.now() ^ process.pid) >>> 0, 0) >>> 0,
    concurrency: n('concurrency', 8, 1),
    shards: n('shards', 2, 1),
    dataDir: p.values['data-dir'] === true,
    only: only === undefined ? undefined : numberListArg('--only', only, 0),
  };
}

async function main(): Promise<void> {
  const a = parse(process.argv.slice(2));
  if (a === null) {
    process.stdout.write(formatHelp(PROGRAM, SPEC));
    return;
  }
  const srv = await startServer({ memoryOnly: !a.dataDir, shards: a.shards });
  // `npm run fuzz | head`: the reader going away ends the run quietly, and the server with it.
  process.on('exit', () => { if (srv.proc.exitCode === null) srv.proc.kill('SIGKILL'); });
  exitQuietlyOnEpipe(process.stdout);
  exitQuietlyOnEpipe(process.stderr);
  let stderr = '';
  srv.proc.stderr!.on('data', (d) => { stderr += d; });
  console.log(`fuzz: seed ${a.seed}, ${a.seconds} s, concurrency ${a.concurrency}, server pid ${srv.proc.pid} (${a.shards} shards, ${a.dataDir ? 'data dir ' + srv.dataDir : 'memory only'})`);
  let lastPrint = 0;
  const report = await runFuzz(
    { httpPort: srv.httpPort, tcpPort: srv.tcpPort, alive: () => srv.proc.exitCode === null && srv.proc.signalCode === null },
    {
      seed: a.seed, seconds: a.only ? 1e9 : a.seconds, concurrency: a.concurrency, only: a.only,
      onChunk: (r) => {
        if (r.seconds - lastPrint < 10) return;
        lastPrint = r.seconds;
        console.log(`  ${r.seconds.toFixed(0)} s: ${r.inputs} inputs, ${r.pushesAcked} pushes acked, ${r.failures.length} failures`);
      },
    },
  );
  const crashed = srv.proc.exitCode !== null || srv.proc.signalCode !== null;
  console.log(formatReport(report));
  if (crashed) console.log(`SERVER CRASHED (exit ${srv.proc.exitCode}, signal ${srv.proc.signalCode}); stderr tail:\n${stderr.slice(-4000)}`);
  await srv.stop();
  srv.cleanup();
  process.exit(report.failures.length > 0 || crashed ? 1 : 0);
}

main().catch((err) => {
  if (err instanceof UsageError) {
    console.error(`${PROGRAM.replace(/ --$/, '')}: ${err.message}`);
    process.exit(EXIT_USAGE);
  }
  console.error(err);
  process.exit(1);
});
