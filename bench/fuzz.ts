/**
 * The long fuzz run (issue 11): `npm run fuzz -- --seconds N [--seed S]
 * [--concurrency C] [--shards K] [--data-dir] [--only I,J,...]`. Starts its own
 * server (the test harness's startServer: --test-mode, --memory-only unless
 * --data-dir), runs the generators of test/fuzz/gen.ts through the same engine as
 * the bounded run in `npm test`, prints progress, inputs tried, per-category
 * counts, outcomes and every crash/hang/wrong answer with the seed and index that
 * replay it (`--seed S --only I`). Exit code 1 when anything failed.
 */
import { startServer } from '../test/harness/server';
import { formatReport, runFuzz } from '../test/fuzz/engine';

interface FuzzArgs {
  seconds: number;
  seed: number;
  concurrency: number;
  shards: number;
  dataDir: boolean;
  only?: number[];
}

function parse(argv: string[]): FuzzArgs {
  const a: FuzzArgs = { seconds: 60, seed: (Date.now() ^ process.pid) >>> 0, concurrency: 8, shards: 2, dataDir: false };
  for (let i = 0; i < argv.length; i++) {
    const v = (): string => {
      const x = argv[++i];
      if (x === undefined) throw new Error(`${argv[i - 1]} needs a value`);
      return x;
    };
    const num = (s: string): number => {
      const n = Number(s);
      if (!Number.isFinite(n) || n < 0) throw new Error(`not a number: ${s}`);
      return n;
    };
    switch (argv[i]) {
      case '--seconds': a.seconds = num(v()); break;
      case '--seed': a.seed = num(v()) >>> 0; break;
      case '--concurrency': a.concurrency = Math.max(1, num(v())); break;
      case '--shards': a.shards = Math.max(1, num(v())); break;
      case '--data-dir': a.dataDir = true; break;
      case '--only': a.only = v().split(',').map(num); break;
      default: throw new Error(`unknown option ${argv[i]}; usage: npm run fuzz -- --seconds N [--seed S] [--concurrency C] [--shards K] [--data-dir] [--only I,J]`);
    }
  }
  return a;
}

async function main(): Promise<void> {
  const a = parse(process.argv.slice(2));
  const srv = await startServer({ memoryOnly: !a.dataDir, shards: a.shards });
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
  console.error(err);
  process.exit(2);
});
