/**
 * Checks of what the bench ships but never runs itself (part of `smoke`):
 * the k6 scripts still parse as ES modules, and bench/k6/fraud_register.json
 * is still the fraud workload of workloads.ts, under the k6 scripts' own names.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workloadNamed } from './workloads';

/** bench/k6 of the source tree: two levels up from dist/bench, or under the working directory (npm run). */
function k6Dir(): string | null {
  for (const d of [join(__dirname, '..', '..', 'bench', 'k6'), join(process.cwd(), 'bench', 'k6')]) {
    if (existsSync(join(d, 'lib.js'))) return d;
  }
  return null;
}

/** Returns problems found (empty = fine). */
export function staticChecks(): string[] {
  const dir = k6Dir();
  if (dir === null) return ['bench/k6 not found (run from the repository root)'];
  const problems: string[] = [];
  const tmp = mkdtempSync(join(tmpdir(), 'streamfeat-k6-'));
  try {
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.js'))) {
      // .mjs so that node parses it as a module; --check parses without resolving 'k6/http'.
      const copy = join(tmp, f.replace(/\.js$/, '.mjs'));
      copyFileSync(join(dir, f), copy);
      const r = spawnSync(process.execPath, ['--check', copy], { encoding: 'utf8' });
      if (r.status !== 0) problems.push(`bench/k6/${f} does not parse: ${r.stderr.trim().split('\n').slice(0, 5).join(' | ')}`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const shipped = JSON.parse(readFileSync(join(dir, 'fraud_register.json'), 'utf8')) as unknown;
  if (!isDeepStrictEqual(shipped, k6Registration())) {
    problems.push('bench/k6/fraud_register.json differs from the fraud workload in bench/workloads.ts: regenerate it (see bench/README.md)');
  }
  return problems;
}

/**
 * The k6 scripts' registration: the fraud workload with every node name (and
 * upstream) prefixed `K6`, so that running them against a server someone uses
 * (the README quick start registers its own `Txn`) changes none of its nodes.
 */
export const K6_NAME_PREFIX = 'K6';

export function k6Registration(): unknown {
  const reg = JSON.parse(JSON.stringify(workloadNamed('fraud').register)) as { nodes: Array<{ name: string; upstreams?: string[] }> };
  for (const n of reg.nodes) {
    n.name = `${K6_NAME_PREFIX}${n.name}`;
    if (n.upstreams !== undefined) n.upstreams = n.upstreams.map((u) => `${K6_NAME_PREFIX}${u}`);
  }
  return reg;
}
