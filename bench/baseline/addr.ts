/** `--flag HOST:PORT` for the baseline servers (port 0 = any free port). */
export function parseAddr(argv: string[], flag: string): { host: string; port: number } {
  const i = argv.indexOf(flag);
  const v = i >= 0 ? argv[i + 1] : undefined;
  const m = v === undefined ? null : /^(.+):(\d+)$/.exec(v);
  if (m === null) throw new Error(`usage: ${flag} HOST:PORT`);
  return { host: m[1], port: Number(m[2]) };
}
