/**
 * Seeded input generators of the fuzz suite: HTTP requests and TCP
 * byte streams, built from valid requests of every endpoint and opcode, then
 * mutated (bit flips, truncation, splicing, duplicated keys, type swaps, deep
 * nesting, huge numbers, unicode, prototype keys) or replaced by random bytes or
 * random JSON. Pure functions of the PRNG: one seed replays one input sequence.
 */
import {
  encodeFrame, CT_JSON, CT_MSGPACK, OP_BATCH_GET, OP_ERROR_RESPONSE, OP_GET, OP_GET_RESPONSE, OP_PING, OP_PUSH,
  OP_FORGET, OP_PUSH_MANY, OP_PUSH_SYNC, OP_REGISTER, OP_RESET, OP_SET_FIRST, OP_SET_LAST,
} from '../../src/protocol/frame';

export type Rand = () => number;

/** The registry every fuzz run installs: pushes to FzEvt feed a count and a sum per key in FzT. */
export const FUZZ_EVENT = 'FzEvt';
export const FUZZ_TABLE = 'FzT';
export const FUZZ_NODES = [
  { kind: 'event', name: FUZZ_EVENT, schema: { fields: { k: 'str', v: 'f64', tag: 'str' }, optional_fields: ['tag'] } },
  {
    kind: 'table', name: FUZZ_TABLE, upstreams: [FUZZ_EVENT], key: ['k'],
    agg: { cnt: { op: 'count', params: { window: 'forever' } }, total: { op: 'sum', params: { field: 'v', window: 'forever' } } },
  },
];

/** Keys valid pushes use (unicode included); the final check reads every one of them. */
export const FUZZ_KEYS = ['u0', 'u1', 'u2', 'u3', 'u4', 'u5', 'u6', 'u7', 'ü', '键', '🙂', 'a b', '', '__proto__', 'constructor', 'toString'];

export interface HttpInput {
  t: 'http';
  cat: string;
  method: string;
  path: string;
  body: Buffer;
  contentType: string | null;
}

export interface TcpInput {
  t: 'tcp';
  cat: string;
  bytes: Buffer;
}

export type FuzzInput = HttpInput | TcpInput;

const int = (r: Rand, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'];
const UNICODE = ['\u0000', '\ud800', '\udfff', '\ufeff', '\u200b', '\u202e', 'é', 'e\u0301', '𝕏', '🙂', '\uffff', '\\', '"', '\n'];
const HUGE_NUMBERS = ['1e308', '1e400', '-1e400', '-0', '9007199254740993', '1e-400', '0.1e999999999', '123456789012345678901234567890',
  '1' + '0'.repeat(400), 'NaN', 'Infinity', '-Infinity', '0x10', '01', '1.', '.5', '+1'];

// ---------------------------------------------------------------- valid requests

export function validPush(r: Rand): Record<string, unknown> {
  const data: Record<string, unknown> = { k: pick(r, FUZZ_KEYS), v: int(r, -1000, 1000) };
  if (r() < 0.3) data.tag = randomString(r, 8);
  return r() < 0.1 ? { event: FUZZ_EVENT, body: data } : { event: FUZZ_EVENT, data };
}

function validGet(r: Rand): Record<string, unknown> {
  const g: Record<string, unknown> = { table: FUZZ_TABLE, key: pick(r, FUZZ_KEYS) };
  if (r() < 0.5) g.features = r() < 0.5 ? ['cnt'] : ['cnt', 'total'];
  return g;
}

function validBatchGet(r: Rand): Record<string, unknown> {
  const n = int(r, 0, 6);
  return { requests: Array.from({ length: n }, () => validGet(r)) };
}

/** Registers of other names (Ox0..Ox3), mostly dry runs: they must never touch FzEvt/FzT. */
function validRegister(r: Rand): Record<string, unknown> {
  const i = int(r, 0, 3);
  const ev = `Ox${i}`;
  const nodes: unknown[] = [{ kind: 'event', name: ev, schema: { fields: { id: 'str', x: pick(r, ['f64', 'i64']) }, optional_fields: [] } }];
  if (r() < 0.7) {
    nodes.push({
      kind: 'table', name: `Ox${i}T`, upstreams: [ev], key: ['id'],
      agg: { c: { op: 'count', params: { window: pick(r, ['1h', 'forever', '5m']) } }, m: { op: pick(r, ['max', 'min', 'sum', 'mean']), params: { field: 'x', window: '1h' } } },
    });
  }
  return { nodes, dry_run: r() < 0.8 };
}

export type Endpoint = 'push' | 'get' | 'batch_get' | 'register' | 'ping' | 'reset' | 'registry';
const ENDPOINTS: readonly Endpoint[] = ['push', 'push', 'push', 'get', 'get', 'batch_get', 'register', 'ping', 'registry'];
/** Resets are rare: each one empties every aggregate (and runs alone), which would leave the final check little to compare. */
const RESET_SHARE = 0.015;

function endpoint(r: Rand, http: boolean): Endpoint {
  if (r() < RESET_SHARE) return 'reset';
  const ep = pick(r, ENDPOINTS);
  return !http && ep === 'registry' ? 'ping' : ep;
}

function validBody(r: Rand, ep: Endpoint): unknown {
  switch (ep) {
    case 'push': return validPush(r);
    case 'get': return validGet(r);
    case 'batch_get': return validBatchGet(r);
    case 'register': return validRegister(r);
    default: return r() < 0.5 ? {} : randomJson(r, 2);
  }
}

// ---------------------------------------------------------------- random JSON

export function randomString(r: Rand, maxLen: number): string {
  const n = int(r, 0, maxLen);
  let s = '';
  for (let i = 0; i < n; i++) {
    const x = r();
    if (x < 0.6) s += String.fromCharCode(int(r, 0x61, 0x7a));
    else if (x < 0.75) s += pick(r, UNICODE);
    else if (x < 0.85) s += pick(r, PROTO_KEYS);
    else s += String.fromCharCode(int(r, 0, 0xffff));
  }
  return s;
}

/** A random JSON value (as a JS value; huge numbers are added at the text level by mutate). */
export function randomJson(r: Rand, depth: number): unknown {
  const x = r();
  if (depth <= 0 || x < 0.45) {
    const y = r();
    if (y < 0.2) return null;
    if (y < 0.35) return r() < 0.5;
    if (y < 0.6) return r() < 0.5 ? int(r, -1e6, 1e6) : (r() - 0.5) * 10 ** int(r, -20, 300);
    if (y < 0.8) return randomString(r, 12);
    return pick(r, [FUZZ_EVENT, FUZZ_TABLE, 'cnt', 'total', 'k', 'v', 'tag', 'data', 'body', 'event', 'nodes', 'requests', 'features']);
  }
  if (x < 0.7) return Array.from({ length: int(r, 0, 5) }, () => randomJson(r, depth - 1));
  const o: Record<string, unknown> = {};
  const keys = ['event', 'data', 'body', 'table', 'key', 'features', 'requests', 'nodes', 'force', 'dry_run', 'k', 'v', 'tag',
    'kind', 'name', 'schema', 'fields', 'agg', 'op', 'params', 'upstreams', 'dedupe_key', 'event_time', 'event_time_ms', ...PROTO_KEYS];
  for (let i = int(r, 0, 5); i > 0; i--) {
    const k = r() < 0.8 ? pick(r, keys) : randomString(r, 6);
    Object.defineProperty(o, k, { value: randomJson(r, depth - 1), enumerable: true, configurable: true, writable: true });
  }
  return o;
}

// ---------------------------------------------------------------- mutations

function randomBytes(r: Rand, n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (r() * 256) | 0;
  return b;
}

/** Replaces one random JSON value in the tree (type swap, proto keys, unicode, nesting). */
function mutateTree(r: Rand, v: unknown, depth = 0): unknown {
  const isObj = v !== null && typeof v === 'object';
  if (!isObj || r() < 0.25 || depth > 6) {
    const x = r();
    if (x < 0.3) return randomJson(r, 2);
    if (x < 0.45) return pick(r, [null, true, 0, -1, '', [], {}, '1', [v], { v }]);
    if (x < 0.55) return pick(r, UNICODE) + (typeof v === 'string' ? v : '') + pick(r, UNICODE);
    if (x < 0.6) return 'a'.repeat(pick(r, [129, 4097, 60_000]));
    if (x < 0.75) return pick(r, PROTO_KEYS);
    if (x < 0.9) return (r() < 0.5 ? -1 : 1) * 10 ** int(r, 15, 308);
    return nest(r, v, int(r, 2, 64));
  }
  if (Array.isArray(v)) {
    const a = v.slice();
    if (a.length === 0 || r() < 0.2) a.push(randomJson(r, 2));
    else a[int(r, 0, a.length - 1)] = mutateTree(r, a[int(r, 0, a.length - 1)], depth + 1);
    return a;
  }
  const o: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    Object.defineProperty(o, k, { value: x, enumerable: true, configurable: true, writable: true });
  }
  const keys = Object.keys(o);
  const y = r();
  if (keys.length === 0 || y < 0.2) {
    Object.defineProperty(o, r() < 0.5 ? pick(r, PROTO_KEYS) : randomString(r, 6), { value: randomJson(r, 2), enumerable: true, configurable: true, writable: true });
  } else if (y < 0.35) {
    delete o[pick(r, keys)];
  } else {
    const k = pick(r, keys);
    o[k] = mutateTree(r, o[k], depth + 1);
  }
  return o;
}

function nest(r: Rand, v: unknown, depth: number): unknown {
  let x = v;
  for (let i = 0; i < depth; i++) x = r() < 0.5 ? [x] : { a: x };
  return x;
}

/** Text-level deep nesting: `[[[...]]]` or `{"a":{"a":...}}` too deep to build as objects cheaply. */
function deepText(r: Rand, depth: number): string {
  return r() < 0.5 ? '['.repeat(depth) + '1' + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/** Byte/text-level mutations of a request body. */
function mutateText(r: Rand, text: string, donor: string): Buffer {
  const b = Buffer.from(text);
  const x = r();
  if (x < 0.15) { // bit flips
    const out = Buffer.from(b);
    for (let i = int(r, 1, 4); i > 0 && out.length > 0; i--) out[int(r, 0, out.length - 1)] ^= 1 << int(r, 0, 7);
    return out;
  }
  if (x < 0.25) return b.subarray(0, int(r, 0, b.length)); // truncation
  if (x < 0.35) { // splice with another valid request
    const d = Buffer.from(donor);
    return Buffer.concat([b.subarray(0, int(r, 0, b.length)), d.subarray(int(r, 0, d.length))]);
  }
  if (x < 0.47) { // duplicated key: repeat the first member after the opening brace
    const m = /^\{("[^"]*":(?:"[^"]*"|[-0-9.eE]+|true|false|null))/.exec(text);
    if (m) return Buffer.from(text.slice(0, -1) + ',' + m[1] + '}');
    return Buffer.from(`{"event":"${FUZZ_EVENT}","event":${JSON.stringify(text)}}`);
  }
  if (x < 0.6) { // huge / odd numbers in place of a number
    const nums = [...text.matchAll(/-?\d+(\.\d+)?/g)];
    if (nums.length > 0) {
      const m = pick(r, nums);
      return Buffer.from(text.slice(0, m.index) + pick(r, HUGE_NUMBERS) + text.slice(m.index! + m[0].length));
    }
    return Buffer.from(text.replace(/}$/, `,"n":${pick(r, HUGE_NUMBERS)}}`));
  }
  if (x < 0.7) { // deep nesting inserted as a member or a value
    const deep = deepText(r, pick(r, [64, 200, 1000, 5000, 100_000]));
    return Buffer.from(text.startsWith('{') && text.length > 2 ? `{"junk":${deep},` + text.slice(1) : deep);
  }
  if (x < 0.8) { // raw unicode / invalid UTF-8 bytes inside the text
    const at = int(r, 0, b.length);
    const ins = r() < 0.5 ? Buffer.from(pick(r, UNICODE)) : pick(r, [Buffer.from([0xff]), Buffer.from([0xc3]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xef, 0xbb, 0xbf])]);
    return Buffer.concat([b.subarray(0, at), ins, b.subarray(at)]);
  }
  if (x < 0.9) { // delete or duplicate a range
    const i = int(r, 0, b.length);
    const j = int(r, i, Math.min(b.length, i + 32));
    return r() < 0.5 ? Buffer.concat([b.subarray(0, i), b.subarray(j)]) : Buffer.concat([b.subarray(0, j), b.subarray(i, j), b.subarray(j)]);
  }
  const at = int(r, 0, b.length); // random bytes inserted
  return Buffer.concat([b.subarray(0, at), randomBytes(r, int(r, 1, 16)), b.subarray(at)]);
}

/** One body for `ep`, and the category it was drawn from. */
function body(r: Rand, ep: Endpoint): { cat: string; body: Buffer } {
  const x = r();
  if (x < 0.3) return { cat: 'valid', body: Buffer.from(JSON.stringify(validBody(r, ep))) };
  if (x < 0.5) return { cat: 'tree_mutation', body: Buffer.from(JSON.stringify(mutateTree(r, validBody(r, ep)))) };
  if (x < 0.8) {
    return { cat: 'text_mutation', body: mutateText(r, JSON.stringify(validBody(r, ep)), JSON.stringify(validBody(r, pick(r, ENDPOINTS)))) };
  }
  if (x < 0.93) return { cat: 'random_json', body: Buffer.from(JSON.stringify(randomJson(r, 4)) ?? 'null') };
  if (x < 0.995) return { cat: 'random_bytes', body: randomBytes(r, int(r, 0, 512)) };
  // Rare big bodies: around and over the 4 MiB cap.
  const n = pick(r, [1024 * 1024, 4 * 1024 * 1024 - 10, 4 * 1024 * 1024 + 10]);
  return { cat: 'big_body', body: r() < 0.5 ? Buffer.from(deepText(r, Math.floor(n / 2))) : Buffer.alloc(n, 0x20) };
}

// ---------------------------------------------------------------- HTTP and TCP inputs

const HTTP_PATH: Record<Endpoint, string> = {
  push: '/push', get: '/get', batch_get: '/batch_get', register: '/register', ping: '/ping', reset: '/reset', registry: '/registry',
};
const ODD_PATHS = ['/', '/push/' + FUZZ_EVENT, '/push/__proto__', '/push/constructor', '/push/Nope', '/get/', '/metrics', '/health', '/ready',
  '/__proto__', '/constructor', '/registry/x', '/push?x=1', '/%00', '/%ff', '//push', '/push/../get', '/' + 'a'.repeat(3000)];

export function httpInput(r: Rand): HttpInput {
  const ep = endpoint(r, true);
  const { cat, body: b } = body(r, ep);
  let method = ep === 'registry' ? 'GET' : 'POST';
  let path = HTTP_PATH[ep];
  let c = `http_${ep}_${cat}`;
  if (r() < 0.06) { path = pick(r, ODD_PATHS); c = 'http_odd_path'; }
  if (r() < 0.04) { method = pick(r, ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']); c = 'http_odd_method'; }
  if (path.startsWith('/push/') && c === 'http_odd_path' && r() < 0.5) {
    // The peer's form: the body is the data object itself.
    const p = validPush(r);
    return { t: 'http', cat: c, method: 'POST', path, body: Buffer.from(JSON.stringify(p.data ?? p.body)), contentType: 'application/json' };
  }
  const ct = r() < 0.93 ? 'application/json' : pick(r, [null, 'text/plain', 'application/json; charset=utf-8', 'application/x-msgpack', '']);
  return { t: 'http', cat: c, method, path, body: b, contentType: ct };
}

const OPS_BY_ENDPOINT: Partial<Record<Endpoint, number>> = {
  push: OP_PUSH, get: OP_GET, batch_get: OP_BATCH_GET, register: OP_REGISTER, ping: OP_PING, reset: OP_RESET,
};
/** Opcodes a client should not send (0x0041 is OP_FORGET: a get body sent with it would erase what the shadow model counts). */
const ODD_OPS = [OP_PUSH_SYNC, OP_PUSH_MANY, OP_GET_RESPONSE, OP_SET_FIRST, OP_SET_LAST, OP_ERROR_RESPONSE, 0x0002, 0x0003, 0x0042, 0x8000];

function tcpFrame(r: Rand): { cat: string; bytes: Buffer } {
  const ep = endpoint(r, false);
  const { cat, body: b } = body(r, ep);
  let op = OPS_BY_ENDPOINT[ep]!;
  let c = `tcp_${ep}_${cat}`;
  if (r() < 0.08) {
    op = r() < 0.7 ? pick(r, ODD_OPS) : int(r, 0, 0xffff);
    if (op === OP_FORGET) op++; // see ODD_OPS
    c = 'tcp_odd_op';
  }
  let ct = CT_JSON;
  if (r() < 0.05) { ct = r() < 0.5 ? CT_MSGPACK : int(r, 0, 255); c = 'tcp_odd_content_type'; }
  return { cat: c, bytes: encodeFrame(op, b, ct) };
}

export function tcpInput(r: Rand): TcpInput {
  const x = r();
  if (x < 0.05) return { t: 'tcp', cat: 'tcp_random_bytes', bytes: randomBytes(r, int(r, 1, 256)) };
  if (x < 0.08) { // a header declaring a bad length
    const h = Buffer.alloc(7);
    h.writeUInt32BE(pick(r, [0, 1, 2, 0xffffffff, 4 * 1024 * 1024 + 4, 0x7fffffff]), 0);
    h.writeUInt16BE(int(r, 0, 0x41), 4);
    h[6] = CT_JSON;
    return { t: 'tcp', cat: 'tcp_bad_length', bytes: Buffer.concat([h, randomBytes(r, int(r, 0, 32))]) };
  }
  const frames = Array.from({ length: int(r, 1, 4) }, () => tcpFrame(r));
  let bytes = Buffer.concat(frames.map((f) => f.bytes));
  let cat = frames[0].cat;
  if (x < 0.2) { // stream-level mutation: flips land in headers too
    const y = r();
    if (y < 0.4) {
      bytes = Buffer.from(bytes);
      for (let i = int(r, 1, 3); i > 0; i--) bytes[int(r, 0, Math.min(bytes.length - 1, 11))] ^= 1 << int(r, 0, 7);
    } else if (y < 0.7) {
      bytes = bytes.subarray(0, int(r, 0, bytes.length - 1)); // truncated frame, then half-close
    } else {
      bytes = Buffer.concat([bytes, randomBytes(r, int(r, 1, 64))]);
    }
    cat = 'tcp_stream_mutation';
  }
  return { t: 'tcp', cat, bytes };
}

export function fuzzInput(r: Rand): FuzzInput {
  return r() < 0.5 ? httpInput(r) : tcpInput(r);
}
