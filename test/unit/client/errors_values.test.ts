import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamfeatError, toWireData, toWireKey } from '../../../src/client';
import { errorFromBody, statusHint, transportError } from '../../../src/client/errors';
import { RetryPolicy, Idempotence, shouldRetry } from '../../../src/client/retry';
import { prng } from './fake_servers';

test('push values: Date -> ms, Buffer/Uint8Array -> base64, BigInt -> number when safe', () => {
  const data = {
    at: new Date(1_700_000_000_123),
    blob: Buffer.from('hello'),
    u8: new Uint8Array([1, 2, 3]),
    small: 42n,
    huge: 2n ** 63n - 1n,
    list: [new Date(5), 'x'],
    s: 'plain',
    none: undefined,
  };
  assert.deepEqual(JSON.parse(JSON.stringify(toWireData(data))), {
    at: 1_700_000_000_123,
    blob: 'aGVsbG8=',
    u8: 'AQID',
    small: 42,
    huge: '9223372036854775807',
    list: [5, 'x'],
    s: 'plain',
  });
  const plain = { a: 1, b: 'x', c: null, d: true };
  assert.equal(toWireData(plain), plain, 'plain JSON data is passed through without a copy');
  const sub = Buffer.from('abcdef').subarray(2, 4);
  assert.equal(toWireData({ b: sub }).b, Buffer.from('cd').toString('base64'), 'views encode only their own bytes');
  assert.deepEqual(toWireKey(['a', 7n, new Date(9)]), ['a', 7, 9]);
  assert.equal(toWireKey('k'), 'k');
});

test('error envelope parsing', () => {
  const e = errorFromBody(
    JSON.stringify({
      error: { code: 'force_required', reason: 'destructive', diff: { additive: [], destructive: [{ kind: 'rename', from: 'a', to: 'b' }] } },
      registry_version: 7,
    }),
    409,
  );
  assert.ok(e instanceof StreamfeatError);
  assert.equal(e.code, 'force_required');
  assert.equal(e.status, 409);
  assert.equal(e.reason, 'destructive');
  assert.equal(e.message, 'destructive');
  assert.equal(e.registryVersion, 7);
  assert.deepEqual(e.diff?.destructive, [{ kind: 'rename', from: 'a', to: 'b' }]);

  const v = errorFromBody(
    JSON.stringify({
      error: { code: 'schema_invalid', path: 'nodes[0].schema', message: 'bad' },
      errors: [{ kind: 'unknown_field_type', path: 'nodes[0].schema.fields.a', message: 'no such type' }],
    }),
    400,
  );
  assert.equal(v.path, 'nodes[0].schema');
  assert.equal(v.message, 'bad');
  assert.equal(v.errors.length, 1);
  assert.equal(v.describe(), 'schema_invalid (400): bad at nodes[0].schema');

  // TCP replies carry no status: the code table gives the hint; an unknown code gets 0.
  assert.equal(errorFromBody('{"error":{"code":"unknown_table"}}', null).status, 404);
  assert.equal(statusHint('wal_unavailable'), 503);
  const future = errorFromBody('{"error":{"code":"quota_exceeded_v2","message":"slow down","limit":5}}', 429);
  assert.equal(future.code, 'quota_exceeded_v2');
  assert.equal(future.detail.limit, 5);
  let branch = '';
  const code: string = future.code;
  switch (code) {
    case 'unknown_table':
      branch = 'table';
      break;
    default:
      branch = 'default';
  }
  assert.equal(branch, 'default');

  for (const [body, status] of [['<html>502 Bad Gateway</html>', 502], ['{"oops":1}', 500], ['', 404], ['[1,2]', 400]] as const) {
    const u = errorFromBody(body, status);
    assert.equal(u.code, 'unparseable_error');
    assert.equal(u.status, status);
    assert.equal(u.reason, body);
  }
  assert.equal(errorFromBody('x'.repeat(5000), 500).reason?.length, 515, 'long bodies are cut');
  const t = transportError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
  assert.equal(t.code, 'ECONNREFUSED');
  assert.ok(t.isConnectionError);
});

test('retry classification (spec 7.1)', () => {
  const err = (code: string, status: number): StreamfeatError => new StreamfeatError(code, code, { status });
  const cases: Array<[StreamfeatError, Idempotence, boolean]> = [
    [err('internal_error', 500), Idempotence.ServerErrors, true],
    [err('wal_unavailable', 503), Idempotence.ServerErrors, true],
    [err('wal_sync_timeout', 504), Idempotence.Full, true],
    [err('some_new_5xx', 502), Idempotence.Full, true],
    [err('unparseable_error', 502), Idempotence.Full, true],
    [err('op_not_implemented', 501), Idempotence.Full, false],
    [err('unknown_table', 404), Idempotence.Full, false],
    [err('invalid_event', 400), Idempotence.Full, false],
    [err('force_required', 409), Idempotence.Full, false],
    [err('internal_error', 500), Idempotence.None, false],
    [err('ECONNREFUSED', 0), Idempotence.Full, true],
    [err('ECONNRESET', 0), Idempotence.Full, true],
    [err('ETIMEDOUT', 0), Idempotence.Full, true],
    [err('ECONNRESET', 0), Idempotence.ServerErrors, false],
    [err('ECONNRESET', 0), Idempotence.None, false],
    [err('invalid_descriptor', 0), Idempotence.Full, false],
  ];
  for (const [e, idem, want] of cases) assert.equal(shouldRetry(e, idem), want, `${e.code}/${e.status}/${idem}`);
  assert.equal(shouldRetry(new Error('plain'), Idempotence.Full), false);
});

test('backoff: full jitter within an exponentially growing, capped ceiling', () => {
  const seed = 99;
  const r = prng(seed);
  const p = new RetryPolicy({ baseDelayMs: 10, maxDelayMs: 300, random: r });
  for (let retry = 0; retry < 12; retry++) {
    const ceiling = Math.min(300, 10 * 2 ** retry);
    let max = 0;
    for (let i = 0; i < 200; i++) {
      const d = p.delayMs(retry);
      assert.ok(d >= 0 && d < ceiling, `seed ${seed}: retry ${retry} delay ${d} ceiling ${ceiling}`);
      max = Math.max(max, d);
    }
    assert.ok(max >= ceiling * 0.8, `seed ${seed}: jitter should span the range (retry ${retry}, max ${max})`);
  }
  assert.equal(new RetryPolicy(false).maxAttempts, 1);
  assert.equal(new RetryPolicy({ maxAttempts: 0 }).maxAttempts, 1);
  assert.equal(new RetryPolicy(undefined).maxAttempts, 4);
  assert.equal(new RetryPolicy({ random: () => 0.999999 }).delayMs(100), 1999);
});
