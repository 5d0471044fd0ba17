/**
 * The two examples run against a real server (started here), over HTTP and
 * over TCP, and make the decisions they are written to show. Also runs one of
 * them as a program, the way the docs tell users to.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { CLI, startServer } from '../harness/server';
import type { TestServer } from '../harness/server';
import * as cardFraud from '../../examples/card_fraud';
import * as agentSafety from '../../examples/agent_safety';

const SKIP = existsSync(CLI) ? false : `server not built (${CLI} missing)`;
let srv: TestServer | null = null;

before(async () => {
  if (SKIP === false) srv = await startServer({ memoryOnly: true, testMode: true });
});

after(async () => {
  await srv?.stop();
});

const url = (transport: 'http' | 'tcp'): string => (transport === 'http' ? srv!.base : `tcp://127.0.0.1:${srv!.tcpPort}`);

for (const transport of ['http', 'tcp'] as const) {
  test(`card_fraud example over ${transport}: the ordinary card passes, the taken-over card is declined`, { skip: SKIP }, async () => {
    const lines: string[] = [];
    const scored = await cardFraud.run(url(transport), (l) => lines.push(l));
    assert.equal(scored.length, 15);
    const alice = scored.filter((s) => s.card_id.startsWith('alice-'));
    const bob = scored.filter((s) => s.card_id.startsWith('bob-'));
    assert.ok(alice.every((s) => s.decision === 'APPROVE'), JSON.stringify(alice));
    assert.ok(bob.slice(0, 4).every((s) => s.decision === 'APPROVE'), 'normal use before the takeover');
    assert.ok(bob.slice(4).every((s) => s.decision !== 'APPROVE'), 'every takeover purchase is stopped');
    assert.equal(bob[bob.length - 1].decision, 'DECLINE');
    assert.ok(bob[bob.length - 1].reasons.some((r) => /countries in 1h/.test(r)));
    assert.equal(lines.length, 16, 'one line for the registration, one per transaction');
  });

  test(`agent_safety example over ${transport}: the calm session is allowed, the runaway one throttled then halted`, { skip: SKIP }, async () => {
    const lines: string[] = [];
    const { steps, final } = await agentSafety.run(url(transport), (l) => lines.push(l));
    assert.deepEqual(final, { calm: 'ALLOW', runaway: 'HALT' });
    const runaway = steps.filter((s) => s.session_id.startsWith('runaway-')).map((s) => s.verdict);
    const firstThrottle = runaway.indexOf('THROTTLE');
    const firstHalt = runaway.indexOf('HALT');
    assert.ok(firstThrottle > 0 && firstHalt > firstThrottle, runaway.join(','));
    assert.ok(steps.filter((s) => s.session_id.startsWith('calm-')).every((s) => s.verdict === 'ALLOW'));
    assert.ok(lines.some((l) => /shell\s+uses=6 errors=6/.test(l)), 'composite-key report');
  });
}

test('examples run as programs (require.main) and exit 0', { skip: SKIP }, () => {
  for (const name of ['card_fraud', 'agent_safety']) {
    const file = join(__dirname, '..', '..', 'examples', `${name}.js`);
    const r = spawnSync(process.execPath, [file, url('http')], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /registered/);
  }
});
