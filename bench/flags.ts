/**
 * The `--name value` pairs of a single-purpose bench script's command line
 * (`node dist/bench/<script>.js --events 1000000 ...`), by name without the dashes.
 * `npm run bench` scenarios parse theirs with bench/args.ts instead.
 */
export function flagPairs(argv: readonly string[] = process.argv.slice(2)): Map<string, string> {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) args.set(argv[i].replace(/^--/, ''), argv[i + 1]);
  return args;
}
