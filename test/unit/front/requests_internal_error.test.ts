/**
 * The request adapter (front/requests.ts): a throw out of a request's handling is
 * internal_error, and its envelope follows the rule of every other error of that
 * request kind (errorCarriesVersion, spec 2.7 / docs/wire.md): registry_version on
 * push, register, ping and reset errors; none on get and batch_get errors.
 * No request can be made to throw over a socket, so the Front here is a stand-in
 * whose handlers throw; its `fail` answers as Front.fail does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorJson, type ErrorCode, type ErrorDetail } from '../../../src/errors';
import type { Front } from '../../../src/front/front';
import { errorCarriesVersion, handlePushBytes, handlePushTo, handleRequest, type RequestKind } from '../../../src/front/requests';
import { TRANSPORT_HTTP, type Reply } from '../../../src/front/reply';
import type { ErrorPayload } from '../../../src/protocol/messages';

const VERSION = 7;

/** Records the one error envelope a request is answered with, as the transports write it. */
class RecordingReply implements Reply {
  readonly transport = TRANSPORT_HTTP;
  readonly answers: string[] = [];
  ok(body: string): void { this.answers.push(body); }
  ack(): void { this.answers.push('ack'); }
  error(code: ErrorCode, detail?: ErrorDetail, registryVersion?: number): void { this.answers.push(errorJson(code, detail, registryVersion)); }
  only(): { error: { code: string; reason?: string }; registry_version?: number } {
    assert.equal(this.answers.length, 1, `one answer: ${JSON.stringify(this.answers)}`);
    return JSON.parse(this.answers[0]);
  }
}

/** A Front whose every request handler throws; `fail` answers like Front.fail (the version unless withVersion is false). */
function throwingFront(): { front: Front; logged: unknown[] } {
  const logged: unknown[] = [];
  const boom = (): never => { throw new Error('boom'); };
  const stand = {
    version: VERSION,
    log: { error: (o: unknown) => { logged.push(o); } },
    fail(reply: Reply, e: ErrorPayload, withVersion = true): void { reply.error(e.code, e.detail, withVersion ? VERSION : undefined); },
    ping: boom, push: boom, pushBytes: boom, get: boom, batchGet: boom, forget: boom,
    control: { reset: boom, register: boom },
  };
  return { front: stand as unknown as Front, logged };
}

const BODIES: Record<RequestKind, string> = {
  push: '{"event":"E","data":{}}', get: '{"table":"T","key":"k"}', batch_get: '{"requests":[]}', register: '{"nodes":[]}', ping: '', reset: '',
  forget: '{"table":"T","key":"k"}',
};

test('internal_error carries registry_version exactly for the request kinds whose errors carry it', () => {
  for (const kind of Object.keys(BODIES) as RequestKind[]) {
    const { front, logged } = throwingFront();
    const reply = new RecordingReply();
    handleRequest(front, kind, BODIES[kind], reply);
    const env = reply.only();
    assert.equal(env.error.code, 'internal_error', kind);
    assert.equal(env.error.reason, 'Error: boom', kind);
    if (errorCarriesVersion(kind)) assert.equal(env.registry_version, VERSION, `${kind}: ${reply.answers[0]}`);
    else assert.ok(!('registry_version' in env), `${kind}: ${reply.answers[0]}`);
    assert.equal(logged.length, 1, `${kind}: logged once`);
  }
  assert.deepEqual((['push', 'register', 'ping', 'reset', 'forget', 'get', 'batch_get'] as RequestKind[]).map(errorCarriesVersion), [true, true, true, true, true, false, false]);
});

test('internal_error of a body kind has the same envelope as its invalid_json_body', () => {
  for (const kind of ['push', 'get', 'batch_get', 'forget'] as RequestKind[]) {
    const bad = new RecordingReply();
    handleRequest(throwingFront().front, kind, '{not json', bad);
    const thrown = new RecordingReply();
    handleRequest(throwingFront().front, kind, BODIES[kind], thrown);
    const [a, b] = [bad.only(), thrown.only()];
    assert.equal(a.error.code, 'invalid_json_body');
    assert.equal('registry_version' in b, 'registry_version' in a, kind);
    assert.equal(b.registry_version, a.registry_version, kind);
  }
});

test('internal_error of a push read from its bytes or sent to /push/{event} carries registry_version', () => {
  const bytes = new RecordingReply();
  assert.equal(handlePushBytes(throwingFront().front, Buffer.from(BODIES.push), 0, BODIES.push.length, bytes), true);
  assert.equal(bytes.only().error.code, 'internal_error');
  assert.equal(bytes.only().registry_version, VERSION);
  const to = new RecordingReply();
  handlePushTo(throwingFront().front, 'E', '{}', to);
  assert.equal(to.only().error.code, 'internal_error');
  assert.equal(to.only().registry_version, VERSION);
});

test('a completion that throws answers internal_error with the envelope of its request kind (Front.completionFailed)', async () => {
  const { Front } = await import('../../../src/front/front');
  const { GetCtx, BatchCtx, CountdownSink } = await import('../../../src/front/sinks');
  const { front } = throwingFront();
  const stand = Object.assign(front, { metrics: { completionErrorsTotal: 0 } });
  const cases: Array<[string, (r: Reply) => { reply?: Reply }, boolean]> = [
    ['get', (r) => new GetCtx(r, stand as never, 0), false],
    ['batch_get', (r) => new BatchCtx(r, [], stand as never, 1, 0), false],
    ['register', (r) => new CountdownSink(1, () => {}, r), true],
  ];
  for (const [name, sinkOf, withVersion] of cases) {
    const reply = new RecordingReply();
    Front.prototype.completionFailed.call(stand, sinkOf(reply) as never, new Error('late boom'));
    const env = reply.only();
    assert.equal(env.error.code, 'internal_error', name);
    assert.equal('registry_version' in env, withVersion, `${name}: ${reply.answers[0]}`);
  }
  assert.equal(stand.metrics.completionErrorsTotal, cases.length);
});
