/**
 * `npm run bench -- <scenario> --rounds N`: the option parses, and the rounds
 * summary reports every round's ratio and their median (the bare baseline swings
 * between runs on this machine, so the median over alternated rounds is what
 * bench/CURRENT.md quotes).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseArgs } from '../../bench/args';
import { formatRounds, median, ratioOf, type Measured, type ScenarioResult } from '../../bench/report';

function measured(rps: number, p99Us: number): Measured {
  return {
    generator: 'wrk', requests: rps, ok: rps, errors: 0, firstError: null, elapsedS: 1, rps,
    lat: { count: rps, p50: p99Us / 2, p99: p99Us, p999: p99Us, max: p99Us, mean: p99Us / 2 },
    kinds: {}, clientCpu: null, serverCpu: null, serverPeakRssBytes: null, extra: {},
  };
}

function round(subjectRps: number, baselineRps: number): ScenarioResult {
  const subject = measured(subjectRps, 4000);
  const baseline = measured(baselineRps, 2000);
  return {
    scenario: 'http-push', settings: {}, subjectName: 'streamfeat', subject, baselineName: 'uws_bare', baseline,
    ratioKind: 'throughput', ratio: ratioOf('throughput', subject, baseline), targets: [], notes: [],
  };
}

test('median of odd and even lists', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([7]), 7);
});

test('--rounds parses, defaults to 1 and refuses 0', () => {
  assert.equal(parseArgs(['http-push']).opts.rounds, 1);
  assert.equal(parseArgs(['http-push', '--rounds', '3']).opts.rounds, 3);
  assert.throws(() => parseArgs(['http-push', '--rounds', '0']));
});

test('the rounds summary lists each ratio, the median and the range', () => {
  const lines = formatRounds([[round(60_000, 80_000)], [round(70_000, 100_000)], [round(64_000, 80_000)]]);
  assert.equal(lines[0], '== 3 rounds (baseline and streamfeat alternate)');
  assert.equal(lines[1], 'http-push streamfeat / uws_bare: ratios 0.75, 0.70, 0.80; median 0.75x (0.70-0.80)');
  assert.equal(lines[2], '  req/s 60,000 vs 80,000; 70,000 vs 100,000; 64,000 vs 80,000; p99 ms 4.00, 4.00, 4.00');
});
