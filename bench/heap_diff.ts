/**
 * Diffs two V8 heap snapshots of one process (`node --heapsnapshot-signal=SIGUSR2`
 * or the inspector): `node dist/bench/heap_diff.js A.heapsnapshot B.heapsnapshot [N]`
 * prints the N (default 25) groups whose retained-by-self bytes grew most from A to
 * B, grouped by constructor name for objects and by node type otherwise (strings,
 * code, arrays, ...), with counts. Used to tell a leak (one group growing with the
 * requests served) from V8 heap sizing (bench/journal/2026-11-23-hardening-and-soak.md).
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

interface Group { count: number; bytes: number }

/** Group name -> count and self bytes. */
export function groups(file: string): Map<string, Group> {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const f = s.snapshot.meta.node_fields;
  const width = f.length;
  const iType = f.indexOf('type');
  const iName = f.indexOf('name');
  const iSize = f.indexOf('self_size');
  const types = s.snapshot.meta.node_types[0];
  const out = new Map<string, Group>();
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + iType]];
    const key = type === 'object' || type === 'closure' ? `${type} ${s.strings[s.nodes[i + iName]]}` : `(${type})`;
    const g = out.get(key);
    if (g === undefined) out.set(key, { count: 1, bytes: s.nodes[i + iSize] });
    else { g.count++; g.bytes += s.nodes[i + iSize]; }
  }
  return out;
}

function main(): void {
  const [a, b, n] = process.argv.slice(2);
  if (a === undefined || b === undefined) {
    process.stderr.write('usage: node dist/bench/heap_diff.js A.heapsnapshot B.heapsnapshot [N]\n');
    process.exit(2);
  }
  const ga = groups(a);
  const gb = groups(b);
  const total = (g: Map<string, Group>): number => [...g.values()].reduce((x, y) => x + y.bytes, 0);
  const rows = [...new Set([...ga.keys(), ...gb.keys()])].map((k) => {
    const x = ga.get(k) ?? { count: 0, bytes: 0 };
    const y = gb.get(k) ?? { count: 0, bytes: 0 };
    return { k, dCount: y.count - x.count, dBytes: y.bytes - x.bytes, bytes: y.bytes, count: y.count };
  }).sort((p, q) => q.dBytes - p.dBytes).slice(0, Number(n ?? 25));
  const mib = (v: number): string => (v / 1048576).toFixed(2);
  process.stdout.write(`self bytes: A ${mib(total(ga))} MiB, B ${mib(total(gb))} MiB (${(total(gb) - total(ga) >= 0 ? '+' : '')}${mib(total(gb) - total(ga))})\n`);
  process.stdout.write(`${'group'.padEnd(48)} ${'Δ MiB'.padStart(8)} ${'Δ count'.padStart(9)} ${'B MiB'.padStart(8)} ${'B count'.padStart(9)}\n`);
  for (const r of rows) {
    process.stdout.write(`${r.k.slice(0, 48).padEnd(48)} ${mib(r.dBytes).padStart(8)} ${String(r.dCount).padStart(9)} ${mib(r.bytes).padStart(8)} ${String(r.count).padStart(9)}\n`);
  }
}

if (require.main === module) main();
