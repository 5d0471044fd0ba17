/** RepeatedLine (src/log_throttle.ts): a line per batch becomes one full line, then counts per interval. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Logger } from '../../src/log';
import { RepeatedLine } from '../../src/log_throttle';

function fakeLog(): { log: Logger; lines: Array<[string, Record<string, unknown>]> } {
  const lines: Array<[string, Record<string, unknown>]> = [];
  const at = (level: string) => (obj: Record<string, unknown>) => { lines.push([level, obj]); };
  return { log: { error: at('error'), info: at('info'), warn: at('warn') } as unknown as Logger, lines };
}

test('the first failure in full, then one line per interval with the count, then one line when it clears', () => {
  const { log, lines } = fakeLog();
  let now = 1000;
  const r = new RepeatedLine(log, 'wal.write_failed', 'wal.write_recovered', 10_000, () => now);
  const err = Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
  r.ok({ shard: 0 });
  assert.equal(lines.length, 0, 'nothing failing: ok() logs nothing');
  r.hit({ shard: 0 }, err);
  assert.deepEqual(lines, [['error', { kind: 'wal.write_failed', shard: 0, err }]]);
  for (let i = 0; i < 500; i++) { now += 10; r.hit({ shard: 0 }, err); } // 5 s of failing batches
  assert.equal(lines.length, 1, 'within the interval they are only counted');
  now = 11_000;
  r.hit({ shard: 0 }, err);
  assert.deepEqual(lines[1], ['error', { kind: 'wal.write_failed', shard: 0, count: 501, since_ms: 10_000, failures: 502, error: 'ENOSPC: no space left on device' }]);
  now += 100;
  r.hit({ shard: 0 }, err);
  now += 400;
  r.ok({ shard: 0 });
  assert.deepEqual(lines[2], ['info', { kind: 'wal.write_recovered', shard: 0, failures: 503, unlogged: 1, duration_ms: 10_500 }]);
  assert.equal(lines.length, 3);
  r.hit({ shard: 0 }, err);
  assert.equal(lines.length, 4, 'a new streak starts with a full line again');
  assert.equal(lines[3][1].err, err);
});
