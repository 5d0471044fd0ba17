/**
 * The push ack (front/push.ts ackBody) is byte-identical to the contract's JSON whatever
 * order registry versions and replay flags come in (the tail is kept per version).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ackBody, ackBytes } from '../../../src/front/push';

test('ackBody: the exact ack bytes across versions, replays and large LSNs', () => {
  const cases: Array<[number, number, boolean]> = [[1, 1, false], [1, 1, true], [123_456_789, 7, false], [2, 1, true], [Number.MAX_SAFE_INTEGER, 7, true], [0, 0, false], [3, 7, false]];
  for (const [lsn, version, replay] of cases) {
    const body = ackBody(lsn, version, replay);
    assert.equal(body, `{"ack_lsn":${lsn},"registry_version":${version},"idempotent_replay":${replay}}`);
    assert.deepEqual(JSON.parse(body), { ack_lsn: lsn, registry_version: version, idempotent_replay: replay });
  }
});

test('ackBytes: the same bytes as ackBody(..., false), across LSN digit counts and versions', () => {
  const lsns = [0, 1, 9, 10, 99, 100, 12_345, 999_999_999, 1_000_000_000, 2 ** 32, Number.MAX_SAFE_INTEGER];
  for (const version of [0, 1, 7, 4_294_967_295, 7]) {
    for (const lsn of lsns) {
      const bytes = ackBytes(lsn, version);
      assert.equal(Buffer.from(bytes).toString('latin1'), ackBody(lsn, version, false), `lsn ${lsn} version ${version}`);
    }
    for (const lsn of [...lsns].reverse()) assert.equal(Buffer.from(ackBytes(lsn, version)).toString('latin1'), ackBody(lsn, version, false));
  }
});
