/**
 * A strict reader of Prometheus text exposition 0.0.4 for tests: every line is
 * HELP, TYPE or a well-formed sample; a family's HELP and TYPE come before its
 * samples, once; samples of a family are contiguous; counters end in _total;
 * no series repeats; histogram buckets are cumulative in `le` order and end
 * with +Inf equal to _count. Throws (assert) on the first violation.
 */
import assert from 'node:assert/strict';

export interface PromSample { name: string; labels: Record<string, string>; labelText: string; value: number }
export interface PromFamily { name: string; type: string; help: string; samples: PromSample[] }

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(\\{(.*)\\})? (\\S+)$`);
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/;

function parseValue(v: string, line: string): number {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  if (v === 'NaN') return NaN;
  assert.match(v, /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/, `bad value in ${JSON.stringify(line)}`);
  return Number(v);
}

function parseLabels(text: string, line: string): Record<string, string> {
  const out: Record<string, string> = {};
  let rest = text;
  while (rest.length > 0) {
    const m = LABEL.exec(rest);
    assert.ok(m !== null, `bad labels in ${JSON.stringify(line)}`);
    assert.ok(!(m[1] in out), `label ${m[1]} twice in ${JSON.stringify(line)}`);
    out[m[1]] = m[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    rest = rest.slice(m[0].length);
  }
  return out;
}

function familyOf(name: string, families: Map<string, PromFamily>): PromFamily | undefined {
  if (families.has(name)) return families.get(name);
  const base = name.replace(/_(bucket|sum|count)$/, '');
  const f = families.get(base);
  return f !== undefined && f.type === 'histogram' ? f : undefined;
}

export function parsePrometheus(text: string): Map<string, PromFamily> {
  assert.ok(text.endsWith('\n'), 'exposition ends with a newline');
  const families = new Map<string, PromFamily>();
  const closed = new Set<string>();
  let current: PromFamily | null = null;
  const series = new Set<string>();
  for (const line of text.slice(0, -1).split('\n')) {
    assert.notEqual(line, '', 'no empty lines');
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
      const [, kind, name, ...rest] = line.split(' ');
      assert.match(name, new RegExp(`^${NAME}$`));
      let f = families.get(name);
      if (f === undefined) {
        assert.ok(!closed.has(name), `family ${name} appears twice`);
        f = { name, type: '', help: '', samples: [] };
        families.set(name, f);
        if (current !== null) closed.add(current.name);
        current = f;
      }
      assert.equal(f.samples.length, 0, `${kind} of ${name} after its samples`);
      if (kind === 'HELP') { assert.equal(f.help, '', `two HELP lines for ${name}`); f.help = rest.join(' '); }
      else {
        assert.equal(f.type, '', `two TYPE lines for ${name}`);
        f.type = rest.join(' ');
        assert.ok(['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(f.type), `unknown type ${f.type}`);
      }
      continue;
    }
    assert.ok(!line.startsWith('#'), `unexpected comment ${JSON.stringify(line)}`);
    const m = SAMPLE.exec(line);
    assert.ok(m !== null, `malformed sample line ${JSON.stringify(line)}`);
    const f = familyOf(m[1], families);
    assert.ok(f !== undefined && f.type !== '', `sample ${m[1]} has no # TYPE before it`);
    assert.equal(f, current, `samples of ${f.name} are not contiguous`);
    const labels = parseLabels(m[3] ?? '', line);
    const key = `${m[1]}{${Object.entries(labels).sort().map(([k, v]) => `${k}=${v}`).join(',')}}`;
    assert.ok(!series.has(key), `series ${key} twice`);
    series.add(key);
    f.samples.push({ name: m[1], labels, labelText: m[3] ?? '', value: parseValue(m[4], line) });
  }
  for (const f of families.values()) {
    assert.ok(f.type !== '', `family ${f.name} has no TYPE`);
    if (f.type === 'counter') assert.match(f.name, /_total$/, `counter ${f.name} must end in _total`);
    else assert.doesNotMatch(f.name, /_total$/, `${f.type} ${f.name} must not end in _total`);
    if (f.type === 'counter') for (const s of f.samples) assert.ok(s.value >= 0, `counter ${s.name} is negative`);
    if (f.type === 'histogram') checkHistogram(f);
  }
  return families;
}

function checkHistogram(f: PromFamily): void {
  const groups = new Map<string, PromSample[]>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const k = JSON.stringify(Object.entries(rest).sort());
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k)!.push(s);
    if (s.name === `${f.name}_bucket`) assert.ok(le !== undefined, `${s.name} without le`);
  }
  for (const samples of groups.values()) {
    const buckets = samples.filter((s) => s.name === `${f.name}_bucket`);
    const count = samples.find((s) => s.name === `${f.name}_count`);
    assert.ok(samples.some((s) => s.name === `${f.name}_sum`) && count !== undefined, `${f.name} series without _sum/_count`);
    assert.ok(buckets.length >= 2, `${f.name} has too few buckets`);
    for (let i = 1; i < buckets.length; i++) {
      assert.ok(Number(buckets[i].labels.le) > Number(buckets[i - 1].labels.le) || buckets[i].labels.le === '+Inf', `${f.name} buckets out of le order`);
      assert.ok(buckets[i].value >= buckets[i - 1].value, `${f.name} buckets are not cumulative`);
    }
    assert.equal(buckets[buckets.length - 1].labels.le, '+Inf');
    assert.equal(buckets[buckets.length - 1].value, count.value, `${f.name} +Inf bucket != _count`);
  }
}

/** Value of one sample (labels must match exactly); undefined when absent. */
export function sampleValue(families: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}): number | undefined {
  const f = familyOf(name, families);
  const want = JSON.stringify(Object.entries(labels).sort());
  return f?.samples.find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want)?.value;
}

export async function scrape(adminBase: string): Promise<Map<string, PromFamily>> {
  const res = await fetch(`${adminBase}/metrics`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  return parsePrometheus(await res.text());
}
