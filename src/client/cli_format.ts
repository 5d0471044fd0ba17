/**
 * Human-readable output of the client CLI commands (`--json` prints the raw
 * reply instead). Pure functions returning lines, so tests compare text.
 */
import type { StreamfeatError } from './errors';
import type { DiffItem, FeatureRow, ForgetReply, PushAck, RegisterDiff, RegisterResult, RegistryReply } from './wire';

export function formatError(err: StreamfeatError): string[] {
  const lines = [`error: ${err.describe()}`];
  if (err.reason !== undefined && err.reason !== err.message) lines.push(`  reason: ${err.reason}`);
  for (const item of err.errors) lines.push(`  - ${item.kind}${item.path ? ` at ${item.path}` : ''}: ${item.message}`);
  if (err.diff !== undefined) lines.push(...formatDiff(err.diff));
  if (err.code === 'force_required') lines.push('hint: re-run with --force to apply the destructive changes');
  return lines;
}

export function formatPush(ack: PushAck): string[] {
  const replay = ack.idempotent_replay ? ' idempotent_replay (duplicate of an earlier push; nothing changed)' : '';
  return [`ok ack_lsn=${ack.ack_lsn} registry_version=${ack.registry_version}${replay}`];
}

/** One line per table the forget reached, then the total. */
export function formatForget(r: ForgetReply, keyText: string): string[] {
  const names = Object.keys(r.tables);
  const width = Math.max(0, ...names.map((n) => n.length));
  const lines = names.map((n) => `  ${n.padEnd(width)}  ${r.tables[n] > 0 ? 'removed' : 'not held'}`);
  return [`forgot ${keyText}: ${r.removed} row(s) removed, ack_lsn=${r.ack_lsn} registry_version=${r.registry_version}`, ...lines];
}

export function formatRow(row: FeatureRow, keyText: string): string[] {
  const names = Object.keys(row);
  if (names.length === 0) return [`(no features for key ${keyText}: it has received no events)`];
  const width = Math.max(...names.map((n) => n.length));
  return names.map((n) => `${n.padEnd(width)}  ${JSON.stringify(row[n])}`);
}

export function formatRegister(r: RegisterResult): string[] {
  const lines: string[] = [];
  if (r.dry_run === true) {
    lines.push(`dry run: would_apply=${r.would_apply ? 'yes' : 'no'} registry_version=${r.registry_version} (nothing changed)`);
  } else {
    lines.push(`registered: registry_version=${r.registry_version}`);
    lines.push(...nameList('added', r.added), ...nameList('changed', r.changed), ...nameList('unchanged', r.unchanged));
  }
  if (r.diff !== undefined) lines.push(...formatDiff(r.diff));
  return lines;
}

export function formatDiff(diff: RegisterDiff): string[] {
  const additive = Array.isArray(diff.additive) ? diff.additive : [];
  const destructive = Array.isArray(diff.destructive) ? diff.destructive : [];
  if (additive.length === 0 && destructive.length === 0) return ['diff: no changes'];
  const lines = [`diff: ${additive.length} additive, ${destructive.length} destructive`];
  for (const item of additive) lines.push(`  + ${formatDiffItem(item)}`);
  for (const item of destructive) lines.push(`  - ${formatDiffItem(item)}`);
  return lines;
}

export function formatDiffItem(item: DiffItem): string {
  const d = item as Record<string, unknown>;
  const s = (k: string): string => (typeof d[k] === 'string' ? (d[k] as string) : JSON.stringify(d[k]));
  switch (item.kind) {
    case 'new_descriptor':
      return `new ${s('descriptor_kind')} ${s('name')}`;
    case 'new_agg':
      return `new feature ${s('table')}.${s('agg')} (${s('source')})`;
    case 'new_field':
      return `new field ${s('event')}.${s('field')}: ${s('type')}`;
    case 'rename':
      return `rename ${s('from')} -> ${s('to')}`;
    case 'type_change':
      return `type change ${s('field')}: ${s('from')} -> ${s('to')}`;
    case 'op_removal':
      return `op removed ${s('table')}.${s('agg')}`;
    case 'agg_removal':
      return d.agg === '' ? `removed ${s('table')}` : `feature removed ${s('table')}.${s('agg')}`;
    case 'window_change':
      return `window change ${s('agg')}: ${s('from')} -> ${s('to')}`;
    case 'key_cols_change':
      return `key change ${s('table')}: ${JSON.stringify(d.from)} -> ${JSON.stringify(d.to)}`;
    default: {
      const { kind, ...rest } = d;
      return `${String(kind)} ${JSON.stringify(rest)}`;
    }
  }
}

export function formatRegistry(r: RegistryReply): string[] {
  const nodes = Array.isArray(r.nodes) ? r.nodes : [];
  const lines = [`registry_version=${r.registry_version} nodes=${nodes.length}`];
  for (const n of nodes) lines.push(formatNode(n as Record<string, unknown>));
  return lines;
}

function formatNode(n: Record<string, unknown>): string {
  const name = String(n.name);
  const upstreams = Array.isArray(n.upstreams) ? ` <- ${n.upstreams.join(', ')}` : '';
  if (n.kind === 'event') {
    const schema = (n.schema ?? {}) as { fields?: Record<string, string>; optional_fields?: string[] };
    const optional = new Set(schema.optional_fields ?? []);
    const fields = Object.entries(schema.fields ?? {}).map(([f, t]) => `${f}:${t}${optional.has(f) ? '?' : ''}`);
    const dedupe = typeof n.dedupe_key === 'string' ? `  dedupe_key=${n.dedupe_key} (${String(n.dedupe_window ?? '')})` : '';
    return `  event ${name}  fields: ${fields.join(', ')}${dedupe}`;
  }
  const ops = Array.isArray(n.ops) && n.ops.length > 0 ? `  ops: ${n.ops.map((o) => (o as { op: string }).op).join(', ')}` : '';
  if (n.kind === 'table' || n.output_kind === 'table') {
    const aggs = Object.entries((n.agg ?? {}) as Record<string, { op: string; params?: Record<string, unknown> }>).map(
      ([f, a]) => `${f}=${a.op}(${formatParams(a.params ?? {})})`,
    );
    return `  table ${name}${upstreams}  key: [${(n.key as string[] | undefined)?.join(', ') ?? ''}]${ops}  features: ${aggs.join(', ')}`;
  }
  return `  ${String(n.kind)} ${name}${upstreams}${ops}`;
}

function formatParams(p: Record<string, unknown>): string {
  return Object.entries(p)
    .map(([k, v]) => (k === 'field' ? String(v) : `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`))
    .join(', ');
}

function nameList(label: string, names: string[] | undefined): string[] {
  return names === undefined || names.length === 0 ? [] : [`${label}: ${names.join(', ')}`];
}
