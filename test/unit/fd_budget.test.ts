/** The descriptor budget of the connection caps (src/fd_budget.ts), without a process. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { descriptorBudget, nofileLimit, openDescriptors } from '../../src/fd_budget';
import { FD_CONNECTIONS_MIN, FD_RESERVE_FRACTION, FD_RESERVE_MIN, FD_RESERVE_PER_SHARD } from '../../src/limits';
import { StartupError } from '../../src/startup_error';

test('a large limit: both caps as asked, nothing lowered', () => {
  const b = descriptorBudget(1_048_576, 40, 4, 10_000, 10_000);
  assert.equal(b.httpConnectionsMax, 10_000);
  assert.equal(b.tcpConnectionsMax, 10_000);
  assert.deepEqual(b.lowered, []);
  assert.equal(b.reserve, Math.ceil(1_048_576 * FD_RESERVE_FRACTION));
});

test('a small limit: the reserve and what is open stay free; the rest is shared, each gets at least half or what it asked', () => {
  const limit = 2048;
  const inUse = 48;
  const b = descriptorBudget(limit, inUse, 1, 10_000, 10_000);
  const reserve = Math.max(FD_RESERVE_MIN + FD_RESERVE_PER_SHARD, Math.ceil(limit * FD_RESERVE_FRACTION));
  assert.equal(b.reserve, reserve);
  assert.equal(b.httpConnectionsMax + b.tcpConnectionsMax, limit - inUse - reserve);
  assert.ok(Math.abs(b.httpConnectionsMax - b.tcpConnectionsMax) <= 1);
  assert.deepEqual(b.lowered.map((l) => l.setting), ['http-connections-max', 'tcp-connections-max']);
  // One listener asking for little leaves the rest to the other.
  const small = descriptorBudget(limit, inUse, 1, 10, 10_000);
  assert.equal(small.httpConnectionsMax, 10);
  assert.equal(small.tcpConnectionsMax, limit - inUse - reserve - 10);
  assert.deepEqual(small.lowered.map((l) => l.setting), ['tcp-connections-max']);
  const smallTcp = descriptorBudget(limit, inUse, 1, 10_000, 10);
  assert.equal(smallTcp.tcpConnectionsMax, 10);
  assert.equal(smallTcp.httpConnectionsMax, limit - inUse - reserve - 10);
});

test('shards add to the reserve; a limit that leaves too little per listener stops the boot with the figures', () => {
  assert.ok(descriptorBudget(4096, 40, 8, 10_000, 10_000).reserve >= FD_RESERVE_MIN + 8 * FD_RESERVE_PER_SHARD);
  const tooLow = 40 + FD_RESERVE_MIN + FD_RESERVE_PER_SHARD + 2 * FD_CONNECTIONS_MIN - 1;
  assert.throws(() => descriptorBudget(tooLow, 40, 1, 10_000, 10_000), (e: Error) => e instanceof StartupError && /RLIMIT_NOFILE/.test(e.message) && /ulimit -n/.test(e.message));
  assert.equal(descriptorBudget(tooLow + 1, 40, 1, 10_000, 10_000).httpConnectionsMax, FD_CONNECTIONS_MIN);
});

test('no readable limit: the caps are as configured; this process reports its own', () => {
  assert.deepEqual(descriptorBudget(null, 0, 1, 7, 9), { limit: null, inUse: 0, reserve: 0, httpConnectionsMax: 7, tcpConnectionsMax: 9, lowered: [] });
  const limit = nofileLimit();
  assert.ok(limit === null || limit > 0);
  assert.ok(openDescriptors() >= 3);
});
