/**
 * front/push_text.ts against the JSON.parse path it stands in for (front.ts push:
 * JSON.parse, envelope, PushValidator, PushRoute): on generated and mutated bodies
 * (their UTF-8 bytes, inside a buffer with other bytes around them),
 * every body the reader takes is one that path accepts, routed to the same shards
 * and written into the same PUSH record bytes; what it does not take it leaves
 * untouched (parse() answers null), so that path answers it, errors included.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileRegistry, type CompiledRegistry } from '../../../src/registry/compile';
import { PushRoute, targetsOf } from '../../../src/front/routing';
import { PushText } from '../../../src/front/push_text';
import { PushFrameWriter } from '../../../src/wal/push_record';
import { asSfError } from '../../../src/errors';
import { KEY_BYTES_MAX } from '../../../src/limits';
import { stringBytesMax } from '../../../src/string_cap';
import { isObj } from '../../../src/util/plain_object';
import { BodyGen, workloadNamed } from '../../../bench/workloads';
import { prng } from '../../harness/prng';

const LSN = 41;
const T = 1_700_000_000_123;

const NODES = [
  {
    kind: 'event', name: 'E',
    schema: { fields: { user: 'str', amount: 'f64', n: 'i64', flag: 'bool', merchant: 'str', score: 'f64', note: 'str' }, optional_fields: ['n', 'flag', 'merchant', 'score', 'note'] },
  },
  {
    kind: 'table', name: 'ByUser', upstreams: ['E'], key: ['user'], agg: {
      cnt: { op: 'count' },
      spend: { op: 'sum', params: { field: 'amount', window: '1h', where: 'score > 0.5' } },
      last_m: { op: 'last', params: { field: 'merchant' } },
      last_flag: { op: 'last', params: { field: 'flag' } },
      last_n: { op: 'last', params: { field: 'n' } },
      last_note: { op: 'last', params: { field: 'note' } },
    },
  },
  // An optional key field (absent or null: the feed is skipped), a number key, a bool key.
  { kind: 'table', name: 'ByMerchant', upstreams: ['E'], key: ['merchant'], agg: { cnt: { op: 'count' }, users: { op: 'n_unique', params: { field: 'user', window: '24h' } } } },
  { kind: 'table', name: 'ByN', upstreams: ['E'], key: ['n'], agg: { total: { op: 'sum', params: { field: 'amount', window: 'forever' } } } },
  { kind: 'table', name: 'ByFlag', upstreams: ['E'], key: ['flag'], agg: { cnt: { op: 'count' } } },
  // Events the reader leaves to JSON.parse: a validator, a datetime field, a dedupe field, a chain.
  { kind: 'event', name: 'V', schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] }, validators: ['amount >= 0'] },
  { kind: 'table', name: 'VT', upstreams: ['V'], key: ['user'], agg: { cnt: { op: 'count' } } },
  { kind: 'event', name: 'D', schema: { fields: { user: 'str', at: 'datetime' }, optional_fields: [] } },
  { kind: 'table', name: 'DT', upstreams: ['D'], key: ['user'], agg: { last_at: { op: 'last', params: { field: 'at' } } } },
  { kind: 'event', name: 'P', schema: { fields: { id: 'str', user: 'str' }, optional_fields: [] }, dedupe_key: 'id', dedupe_window: '10m' },
  { kind: 'table', name: 'PT', upstreams: ['P'], key: ['user'], agg: { cnt: { op: 'count' } } },
  { kind: 'event', name: 'C', schema: { fields: { user: 'str', a: 'i64' }, optional_fields: [] } },
  { kind: 'table', name: 'CT', upstreams: ['C'], ops: [{ op: 'filter', expr: 'a > 1' }], key: ['user'], agg: { cnt: { op: 'count' } } },
];

function compile(nodes: unknown[], version = 1): CompiledRegistry {
  return compileRegistry({ version, nodes: nodes as never }, { memoryGovEnforce: false, pushValidators: true, features: false });
}

type Outcome = { error: string } | { mask: number; records: string[] };


/** The JSON.parse path of front.ts push() (single node), as records per shard or the error it answers. */
function slowPath(reg: CompiledRegistry, text: string, shards: number): Outcome {
  try {
    const body = JSON.parse(text) as unknown;
    if (!isObj(body) || typeof body.event !== 'string') return { error: 'missing_event_name_in_body' };
    const plan = reg.events.get(body.event);
    if (plan === undefined) return { error: 'event_not_found' };
    for (const k in body) if (k !== 'event' && k !== 'data' && k !== 'body') return { error: `invalid_event ${k}` };
    if (body.data !== undefined && body.body !== undefined) return { error: 'invalid_event both' };
    const data = body.data !== undefined ? body.data : body.body;
    if (data === undefined) return { error: 'invalid_event no data' };
    const row = plan.validator!.validate(data);
    const route = new PushRoute();
    if (route.route(plan, row, shards) >= 0) return { error: 'invalid_event key too long' };
    const mask = targetsOf(route.mask, LSN, shards);
    const records: string[] = [];
    for (let s = 0; s < shards; s++) {
      if ((mask & (1 << s)) === 0) continue;
      const w = new PushFrameWriter();
      route.write(w, s, plan, LSN, T, reg.version, null);
      records.push(Buffer.from(w.take()).toString('hex'));
    }
    return { mask, records };
  } catch (err) {
    return { error: asSfError(err).code };
  }
}

/**
 * Bytes after a body inside the buffer the reader gets (a TCP frame's payload is
 * followed by the next frame's bytes): each would extend or complete some body if
 * the reader looked past its end.
 */
const PADS = ['', '0', ' ', '}', '5}}', '"', 'e5', ',"x":1}', '.5', 'ue}}'];

/** The reader on the body's UTF-8 bytes inside a larger buffer: records per shard, or null when it leaves the body to the JSON.parse path. */
function fastPath(reader: PushText, reg: CompiledRegistry, text: string, shards: number): Outcome | null {
  const body = Buffer.from(text);
  const b = Buffer.concat([Buffer.from('{"'), body, Buffer.from(PADS[text.length % PADS.length])]);
  const ev = reader.parse(b, 2, 2 + body.length, reg.events);
  if (ev === null) return null;
  const keyed = reader.route(ev, b, shards);
  if (keyed < 0) return null;
  const mask = targetsOf(keyed, LSN, shards);
  const records: string[] = [];
  for (let s = 0; s < shards; s++) {
    if ((mask & (1 << s)) === 0) continue;
    const w = new PushFrameWriter();
    reader.write(w, s, ev, b, LSN, T, reg.version);
    records.push(Buffer.from(w.take()).toString('hex'));
  }
  return { mask, records };
}

const WS = ['', '', '', ' ', '\n', '\t', '\r\n ', '  '];

/** A random string: mostly plain ASCII (JSON punctuation included), sometimes escapes or non-ASCII. */
function str(r: () => number, plain: boolean): string {
  const len = Math.floor(r() * 12);
  let s = '';
  for (let i = 0; i < len; i++) {
    const x = r();
    if (plain || x < 0.85) {
      let c = 0x20 + Math.floor(r() * 0x60);
      if (c === 0x22 || c === 0x5c) c = 0x61;
      s += String.fromCharCode(c);
    } else if (x < 0.9) s += ['\\"', '\\\\', '\\n', '\\u0041', '\\/', '\\ud800'][Math.floor(r() * 6)];
    else if (x < 0.95) s += ['é', '€', '😀', '\u007f'][Math.floor(r() * 4)];
    else s += String.fromCharCode(Math.floor(r() * 0x20)); // a raw control character: not JSON
  }
  return `"${s}"`;
}

const NUMBERS = [
  '0', '-0', '1', '-1', '0.5', '-0.0', '123.45', '2147483647', '2147483648', '-2147483648', '-2147483649',
  '9007199254740991', '9007199254740992', '9007199254740993', '1.0', '1.5', '1e3', '1E-3', '2.5e+10', '1e400', '-1e400',
  '123456789012345', '1234567890123456', '12345678901234567890', '0.1', '0.30000000000000004', '0.0000000000000000000001',
  '1.7976931348623157e308', '5e-324', '01', '-', '1.', '.5', '1e', '+1', '0x10', '1_0', 'NaN', 'Infinity', '00.5',
];

/** A random JSON number (mostly valid, in many forms). */
function num(r: () => number): string {
  const x = r();
  if (x < 0.3) return NUMBERS[Math.floor(r() * NUMBERS.length)];
  if (x < 0.6) return (r() * 1000).toFixed(Math.floor(r() * 4));
  if (x < 0.8) {
    const digits = 1 + Math.floor(r() * 22);
    let s = String(1 + Math.floor(r() * 9));
    for (let i = 1; i < digits; i++) s += String(Math.floor(r() * 10));
    const point = Math.floor(r() * digits);
    return (r() < 0.3 ? '-' : '') + (point === 0 ? s : `${s.slice(0, point)}.${s.slice(point)}`);
  }
  return String(Math.floor((r() - 0.5) * 2 ** 40));
}

function value(r: () => number, type: string, plain: boolean): string {
  const x = r();
  if (x < 0.05) return 'null';
  if (x < 0.1 && !plain) return ['true', 'false', num(r), str(r, true), '[]', '{}', '{"a":1}', 'nul', 'tru'][Math.floor(r() * 9)];
  switch (type) {
    case 'str': return str(r, plain);
    case 'bool': return r() < 0.5 ? 'true' : 'false';
    case 'i64': return r() < 0.7 ? String(Math.floor((r() - 0.5) * 2 ** 34)) : num(r);
    default: return num(r);
  }
}

const FIELDS: Array<[string, string]> = [['user', 'str'], ['amount', 'f64'], ['n', 'i64'], ['flag', 'bool'], ['merchant', 'str'], ['score', 'f64'], ['note', 'str']];

/** An E push: fields in declared or shuffled order, optional ones sometimes left out, whitespace anywhere. */
function body(r: () => number, plain: boolean): string {
  const w = (): string => (plain ? '' : WS[Math.floor(r() * WS.length)]);
  const fields = FIELDS.filter(([f]) => f === 'user' || f === 'amount' || r() < 0.7 || !plain && r() < 0.1);
  if (!plain && r() < 0.3) fields.sort(() => r() - 0.5);
  const members = fields.map(([f, t]) => `${w()}"${f}"${w()}:${w()}${value(r, t, plain)}${w()}`);
  if (!plain && r() < 0.05) members.push(`"extra":1`);
  if (!plain && r() < 0.05) members.push(`"user":"again"`);
  const key = plain || r() < 0.8 ? 'data' : ['body', 'Data', 'dat\\u0061'][Math.floor(r() * 3)];
  const event = plain || r() < 0.9 ? '"E"' : ['"V"', '"D"', '"C"', '"P"', '"X"', '"\\u0045"', '1'][Math.floor(r() * 7)];
  let text = `${w()}{${w()}"event"${w()}:${w()}${event}${w()},${w()}"${key}"${w()}:${w()}{${members.join(',')}}${w()}}${w()}`;
  if (!plain && r() < 0.05) text = `{"data":{"user":"u","amount":1},"event":"E"}`;
  return text;
}

/** A random edit of a body: a character deleted, inserted, doubled, or the text cut short. */
function mutate(r: () => number, text: string): string {
  const at = Math.floor(r() * (text.length + 1));
  const x = r();
  if (x < 0.3) return text.slice(0, at) + text.slice(at + 1);
  if (x < 0.6) return text.slice(0, at) + '{}[]",:\\ 0-.e"ntfu\u0000é'[Math.floor(r() * 21)] + text.slice(at);
  if (x < 0.8) return text.slice(0, at) + text.slice(at - 1, at) + text.slice(at);
  return text.slice(0, at);
}

function compare(reader: PushText, reg: CompiledRegistry, text: string, shards: number, counts: { taken: number }): void {
  const fast = fastPath(reader, reg, text, shards);
  if (fast === null) return;
  counts.taken++;
  assert.deepEqual(fast, slowPath(reg, text, shards), `the reader took ${JSON.stringify(text)} (${shards} shards)`);
}

test('every generated body the reader takes gives the JSON.parse path\'s records; every plain body is taken', () => {
  const reg = compile(NODES);
  for (const shards of [1, 2, 3]) {
    const r = prng(1234 + shards);
    const reader = new PushText();
    const plain = { taken: 0 };
    for (let i = 0; i < 3000; i++) {
      const text = body(r, true);
      const slow = slowPath(reg, text, shards);
      compare(reader, reg, text, shards, plain);
      // A plain body the JSON.parse path accepts is one the reader was made for.
      if (!('error' in slow)) assert.notEqual(fastPath(reader, reg, text, shards), null, `not taken: ${text}`);
    }
    assert.ok(plain.taken > 1500, `plain bodies taken: ${plain.taken}`);
    const any = { taken: 0 };
    for (let i = 0; i < 20000; i++) compare(reader, reg, body(r, false), shards, any);
    assert.ok(any.taken > 1000, `varied bodies taken: ${any.taken}`);
    const mutated = { taken: 0 };
    for (let i = 0; i < 20000; i++) {
      let text = body(r, r() < 0.5);
      for (let k = 1 + Math.floor(r() * 3); k > 0; k--) text = mutate(r, text);
      compare(reader, reg, text, shards, mutated);
    }
    assert.ok(mutated.taken > 200, `mutated bodies taken: ${mutated.taken}`);
  }
});

test('numbers: the reader reads every form as JSON.parse does (f64 field, i32/f64 record tags)', () => {
  const reg = compile(NODES);
  const reader = new PushText();
  const r = prng(99);
  const forms = [...NUMBERS];
  for (let i = 0; i < 20000; i++) forms.push(num(r));
  for (let i = 0; i < 2000; i++) forms.push(String(r() * 10 ** Math.floor(r() * 40 - 20)), String(-r()), (r() * 1e6).toPrecision(1 + Math.floor(r() * 17)));
  let taken = 0;
  for (const n of forms) {
    const text = `{"event":"E","data":{"user":"u1","amount":${n}}}`;
    const fast = fastPath(reader, reg, text, 1);
    const slow = slowPath(reg, text, 1);
    if (fast !== null) { taken++; assert.deepEqual(fast, slow, n); }
    // Every valid JSON number of the f64 range is taken.
    if (!('error' in slow)) assert.notEqual(fast, null, `not taken: ${n}`);
  }
  assert.ok(taken > 20000, `taken ${taken}`);
});

test('the workloads\' bodies (bench/workloads.ts) are all taken, into the same records', () => {
  for (const name of ['small', 'medium', 'fraud']) {
    const wl = workloadNamed(name);
    const reg = compile(wl.register.nodes);
    const gen = new BodyGen(wl, 'zipf', 100_000, 1, 3);
    const reader = new PushText();
    for (const shards of [1, 2]) {
      for (let i = 0; i < 2000; i++) {
        const text = gen.push();
        const fast = fastPath(reader, reg, text, shards);
        assert.notEqual(fast, null, text);
        assert.deepEqual(fast, slowPath(reg, text, shards), text);
      }
    }
  }
});

test('events whose rows are not their bodies as pushed are left to JSON.parse', () => {
  const reg = compile(NODES);
  const reader = new PushText();
  for (const text of [
    '{"event":"V","data":{"user":"u","amount":1}}', // validator predicate
    '{"event":"D","data":{"user":"u","at":"2024-01-01T00:00:00Z"}}', // datetime
    '{"event":"P","data":{"id":"x","user":"u"}}', // dedupe field
    '{"event":"C","data":{"user":"u","a":5}}', // a chain (filter) before the table
  ]) {
    assert.equal(fastPath(reader, reg, text, 1), null, text);
    assert.ok(!('error' in slowPath(reg, text, 1)), text);
  }
});

test('limits: a string over the string cap or a key over KEY_BYTES_MAX is left to JSON.parse (which refuses it)', () => {
  const reg = compile(NODES);
  const reader = new PushText();
  const long = (n: number): string => `"${'k'.repeat(n)}"`;
  const at = (user: string, merchant: string, note: string): string => `{"event":"E","data":{"user":${user},"amount":1,"merchant":${merchant},"note":${note}}}`;
  const fits = at(long(KEY_BYTES_MAX), long(KEY_BYTES_MAX), long(stringBytesMax()));
  assert.deepEqual(fastPath(reader, reg, fits, 2), slowPath(reg, fits, 2));
  for (const text of [at(long(KEY_BYTES_MAX + 1), '"m"', '"x"'), at('"u"', long(KEY_BYTES_MAX + 1), '"x"'), at('"u"', '"m"', long(stringBytesMax() + 1))]) {
    assert.equal(fastPath(reader, reg, text, 1), null);
    assert.ok('error' in slowPath(reg, text, 1));
  }
});

test('bytes of 0x80 and above in a string (UTF-8, or not UTF-8 at all) are left to the JSON.parse path, wherever they sit', () => {
  const reg = compile(NODES);
  const reader = new PushText();
  const pre = Buffer.from('{"event":"E","data":{"user":"u1","amount":1,"note":"ab');
  const post = Buffer.from('cd"}}');
  // A stray continuation byte (0x80, 0xbf), a lone lead byte, bytes no UTF-8 has, and a whole character (é, €).
  for (const raw of [[0x80], [0x81], [0xbf], [0xc0], [0xc3], [0xfe], [0xff], [0xc3, 0xa9], [0xe2, 0x82, 0xac]]) {
    const body = Buffer.concat([pre, Buffer.from(raw), post]);
    const b = Buffer.concat([Buffer.from('{"'), body, Buffer.from('"}')]);
    // Taken as one latin1 character per byte, 0x80 would read "\u0080" where the JSON.parse path reads the decoded text.
    assert.equal(reader.parse(b, 2, 2 + body.length, reg.events), null, `bytes ${raw.map((x) => x.toString(16)).join(' ')}`);
  }
  // The same body with the highest ASCII byte there (DEL, allowed unescaped in JSON) is taken.
  const ascii = Buffer.concat([pre, Buffer.from([0x7f]), post]);
  assert.notEqual(reader.parse(Buffer.concat([Buffer.from('{"'), ascii]), 2, 2 + ascii.length, reg.events), null);
});

test('a new registry version is read under its own plans (the event cache follows the registry)', () => {
  const v1 = compile(NODES, 1);
  const v2 = compile([{ kind: 'event', name: 'E', schema: { fields: { user: 'str', amount: 'str' }, optional_fields: [] } },
    { kind: 'table', name: 'T', upstreams: ['E'], key: ['user'], agg: { last_a: { op: 'last', params: { field: 'amount' } } } }], 2);
  const reader = new PushText();
  const num = '{"event":"E","data":{"user":"u","amount":5}}';
  const text = '{"event":"E","data":{"user":"u","amount":"5"}}';
  assert.deepEqual(fastPath(reader, v1, num, 1), slowPath(v1, num, 1));
  assert.equal(fastPath(reader, v2, num, 1), null, 'amount is a string in v2');
  assert.deepEqual(fastPath(reader, v2, text, 1), slowPath(v2, text, 1));
  assert.equal(fastPath(reader, v1, text, 1), null, 'and a number in v1');
});
