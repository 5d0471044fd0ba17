/**
 * Result blocks, ratios, PASS/MISS target lines and markdown rows. Every
 * measured number is shown next to the same load against its bare baseline
 * (same run, same generator, same bodies), because absolute numbers drift on
 * shared machines and ratios drift much less.
 */
import { appendFileSync, existsSync } from 'node:fs';
import type { HistSummary } from './hist';
import type { CpuUse } from './procstat';

/** One load against one process. */
export interface Measured {
  /** 'wrk', 'autocannon', 'sf-tcp' (our framed-TCP client), 'sf-http' (our HTTP/1.1 client). */
  generator: string;
  requests: number;
  ok: number;
  errors: number;
  firstError: string | null;
  elapsedS: number;
  /** Successful replies per second. */
  rps: number;
  /** microseconds */
  lat: HistSummary;
  /** Per request kind for mixes: ok/s and latency. */
  kinds: Record<string, { rps: number; lat: HistSummary }>;
  clientCpu: CpuUse | null;
  serverCpu: CpuUse | null;
  serverPeakRssBytes: number | null;
  extra: Record<string, number>;
}

export interface TargetCheck {
  name: string;
  pass: boolean;
  detail: string;
}

/** What a ratio compares: throughput (higher is better) or latency (lower is better). */
export type RatioKind = 'throughput' | 'latency-p50' | 'latency-p99';

export interface ScenarioResult {
  scenario: string;
  /** Settings shown in the block header and the markdown row. */
  settings: Record<string, string | number>;
  /** 'streamfeat', or a baseline's name in the baselines scenario. */
  subjectName: string;
  subject: Measured;
  baselineName: string | null;
  baseline: Measured | null;
  ratioKind: RatioKind;
  ratio: number | null;
  targets: TargetCheck[];
  notes: string[];
  /**
   * The subject's failed requests are the behaviour this row documents (uws under
   * pipelining closes connections), not a broken bench: `--check` does not count them.
   */
  errorsExpected?: boolean;
}

export function ratioOf(kind: RatioKind, subject: Measured, baseline: Measured | null): number | null {
  if (baseline === null) return null;
  if (kind === 'throughput') return baseline.rps > 0 ? subject.rps / baseline.rps : null;
  const pick = kind === 'latency-p50' ? (m: Measured) => m.lat.p50 : (m: Measured) => m.lat.p99;
  const b = pick(baseline);
  return b > 0 ? pick(subject) / b : null;
}

export const ms = (us: number): string => (us / 1000).toFixed(us < 10_000 ? 2 : 1);
const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const mib = (b: number | null): string => (b === null ? 'n/a' : `${(b / 1048576).toFixed(0)} MiB`);

function cpuText(c: CpuUse | null): string {
  if (c === null) return 'n/a';
  return `${c.user.toFixed(2)} s user + ${c.sys.toFixed(2)} s sys = ${c.pctOfCore.toFixed(0)}% of a core`;
}

function latText(l: HistSummary): string {
  return `p50 ${ms(l.p50)} ms  p99 ${ms(l.p99)} ms  p99.9 ${ms(l.p999)} ms  max ${ms(l.max)} ms`;
}

function measuredLines(label: string, m: Measured, isServer: boolean): string[] {
  const out = [
    `${label.padEnd(11)} ${int(m.rps).padStart(9)} req/s  ${latText(m.lat)}  errors ${m.errors}`,
  ];
  for (const [k, v] of Object.entries(m.kinds)) {
    out.push(`  ${k.padEnd(9)} ${int(v.rps).padStart(9)} req/s  ${latText(v.lat)}`);
  }
  if (isServer) out.push(`  server cpu ${cpuText(m.serverCpu)}   peak rss ${mib(m.serverPeakRssBytes)}`);
  else out.push(`  cpu ${cpuText(m.serverCpu)}   peak rss ${mib(m.serverPeakRssBytes)}`);
  out.push(`  client cpu (${m.generator}) ${cpuText(m.clientCpu)}`);
  if (m.errors > 0 && m.firstError !== null) out.push(`  first error: ${m.firstError}`);
  return out;
}

export function formatBlock(r: ScenarioResult): string {
  const header = Object.entries(r.settings).map(([k, v]) => `${k}=${v}`).join(' ');
  const lines = [`== ${r.scenario}  ${header}`];
  lines.push(...measuredLines(r.subjectName, r.subject, r.subjectName === 'streamfeat'));
  const extra = Object.entries(r.subject.extra).map(([k, v]) => `${k}=${Number.isInteger(v) ? v : v.toFixed(3)}`);
  if (extra.length > 0) lines.push(`  ${extra.join('  ')}`);
  if (r.baseline !== null && r.baselineName !== null) lines.push(...measuredLines(r.baselineName, r.baseline, false));
  if (r.ratio !== null) {
    const what = r.ratioKind === 'throughput' ? 'throughput, higher is better' : `${r.ratioKind.replace('latency-', '')} latency, lower is better`;
    lines.push(`ratio       ${r.ratio.toFixed(2)}x of ${r.baselineName} (${what})`);
  } else {
    lines.push('ratio       n/a (no baseline)');
  }
  for (const t of r.targets) lines.push(`target      ${t.pass ? 'PASS' : 'MISS'}  ${t.name}  (${t.detail})`);
  for (const n of r.notes) lines.push(`note        ${n}`);
  return lines.join('\n');
}

const MD_HEADER = [
  '| date | scenario | settings | gen | req/s | p50 ms | p99 ms | p99.9 ms | server cpu % | peak RSS MiB | baseline | baseline req/s | baseline p99 ms | ratio | targets |',
  '|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|',
].join('\n');

export function markdownRow(r: ScenarioResult, date: string): string {
  const s = r.subject;
  const settings = Object.entries(r.settings).map(([k, v]) => `${k}=${v}`).join(' ');
  const b = r.baseline;
  const ratio = r.ratio === null ? 'n/a' : `${r.ratio.toFixed(2)}x${r.ratioKind === 'throughput' ? '' : ` (${r.ratioKind})`}`;
  const targets = r.targets.map((t) => `${t.pass ? 'PASS' : 'MISS'} ${t.name}`).join('; ') || '-';
  return `| ${date} | ${r.scenario}${r.subjectName === 'streamfeat' ? '' : ` (${r.subjectName})`} | ${settings} | ${s.generator} | ${int(s.rps)} | ${ms(s.lat.p50)} | ${ms(s.lat.p99)} | ${ms(s.lat.p999)} | ${
    s.serverCpu === null ? 'n/a' : s.serverCpu.pctOfCore.toFixed(0)} | ${s.serverPeakRssBytes === null ? 'n/a' : (s.serverPeakRssBytes / 1048576).toFixed(0)} | ${
    r.baselineName ?? '-'} | ${b === null ? '-' : int(b.rps)} | ${b === null ? '-' : ms(b.lat.p99)} | ${ratio} | ${targets} |`;
}

/** Appends the row to `file`, writing the table header first when the file is new. */
export function appendMarkdown(file: string, r: ScenarioResult, date: string): void {
  const head = existsSync(file) ? '' : `${MD_HEADER}\n`;
  appendFileSync(file, head + markdownRow(r, date) + '\n');
}

/** Settings that tell the runs of `all` apart (the rest is the same for every run). */
const SUMMARY_KEYS = ['workload', 'keys', 'gen', 'conns', 'rate', 'mix', 'probes'];

/** The summary table of `all`: one line per result, then every target. */
export function formatSummary(results: ScenarioResult[]): string {
  const lines = ['== summary'];
  const first = results[0];
  if (first !== undefined) {
    const common = Object.entries(first.settings).filter(([k]) => !SUMMARY_KEYS.includes(k)).map(([k, v]) => `${k}=${v}`).join(' ');
    lines.push(`(every run: ${common})`);
  }
  lines.push(`${'scenario'.padEnd(24)} ${'settings'.padEnd(58)} ${'req/s'.padStart(9)} ${'p99 ms'.padStart(8)}  ratio`);
  for (const r of results) {
    const name = r.subjectName === 'streamfeat' ? r.scenario : `${r.scenario} (${r.subjectName})`;
    const settings = SUMMARY_KEYS.filter((k) => r.settings[k] !== undefined).map((k) => `${k}=${r.settings[k]}`).join(' ');
    const ratio = r.ratio === null ? 'n/a' : `${r.ratio.toFixed(2)}x${r.ratioKind === 'throughput' ? '' : ` ${r.ratioKind}`}`;
    lines.push(`${name.padEnd(24)} ${settings.padEnd(58)} ${int(r.subject.rps).padStart(9)} ${ms(r.subject.lat.p99).padStart(8)}  ${ratio}`);
  }
  lines.push('', '== targets');
  let n = 0;
  for (const r of results) {
    for (const t of r.targets) {
      n++;
      lines.push(`${t.pass ? 'PASS' : 'MISS'}  ${t.name}  (${t.detail})`);
    }
  }
  if (n === 0) lines.push('(no target applies to the settings run)');
  return lines.join('\n');
}

/** The median of `xs` (not empty). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * `--rounds N`: one line per result of the scenario (the same position in every
 * round) with its ratio and rates in each round, then their median and range.
 */
export function formatRounds(rounds: readonly ScenarioResult[][]): string[] {
  const lines = [`== ${rounds.length} rounds (baseline and streamfeat alternate)`];
  const per = Math.min(...rounds.map((r) => r.length));
  for (let j = 0; j < per; j++) {
    const rs = rounds.map((r) => r[j]);
    const first = rs[0];
    const label = `${first.scenario} ${first.subjectName}${first.baselineName === null ? '' : ` / ${first.baselineName}`}`;
    const ratios = rs.map((r) => r.ratio).filter((x): x is number => x !== null);
    const rates = rs.map((r) => `${int(r.subject.rps)}${r.baseline === null ? '' : ` vs ${int(r.baseline.rps)}`}`).join('; ');
    const p99s = rs.map((r) => ms(r.subject.lat.p99)).join(', ');
    if (ratios.length === 0) {
      lines.push(`${label}: req/s ${rates}; p99 ms ${p99s}`);
      continue;
    }
    const unit = first.ratioKind === 'throughput' ? 'x' : `x ${first.ratioKind}`;
    lines.push(`${label}: ratios ${ratios.map((x) => x.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)}${unit} (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`);
    lines.push(`  req/s ${rates}; p99 ms ${p99s}`);
  }
  return lines;
}
