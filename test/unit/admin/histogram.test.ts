/** The fixed-bucket histogram, its quantile estimate and the Prometheus text writer's rules. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diffHistograms, Histogram, histogramQuantile, LATENCY_BUCKETS_S, mergeHistograms } from '../../../src/admin/histogram';
import { PromText } from '../../../src/admin/prom_text';
import { parsePrometheus, sampleValue } from '../../harness/prom';

test('observe puts a value in the first bucket whose bound is >= it; +Inf takes the rest', () => {
  const h = new Histogram();
  h.observe(0);
  h.observe(LATENCY_BUCKETS_S[0]);
  h.observe(LATENCY_BUCKETS_S[0] * 1.01);
  h.observe(1e9);
  const d = h.data();
  assert.equal(d.counts[0], 2);
  assert.equal(d.counts[1], 1);
  assert.equal(d.counts[LATENCY_BUCKETS_S.length], 1);
  assert.equal(d.count, 4);
});

test('quantiles interpolate inside the bucket and stay within its bounds', () => {
  const h = new Histogram();
  for (let i = 0; i < 100; i++) h.observe(0.003); // bucket (0.0025, 0.005]
  const q = histogramQuantile(h.data(), 0.5)!;
  assert.ok(q > 0.0025 && q <= 0.005, String(q));
  assert.equal(histogramQuantile(new Histogram().data(), 0.5), null);
  const mixed = new Histogram();
  for (let i = 0; i < 90; i++) mixed.observe(0.0001);
  for (let i = 0; i < 10; i++) mixed.observe(0.2);
  assert.ok(histogramQuantile(mixed.data(), 0.5)! <= 0.0001);
  assert.ok(histogramQuantile(mixed.data(), 0.99)! > 0.1);
});

test('merge adds histograms; diff gives what was observed between two readings', () => {
  const a = new Histogram();
  a.observe(0.001);
  const before = a.data();
  a.observe(0.2);
  const b = new Histogram();
  b.observe(0.001);
  const m = mergeHistograms([a.data(), b.data()]);
  assert.equal(m.count, 3);
  const d = diffHistograms(a.data(), before);
  assert.equal(d.count, 1);
  assert.ok(histogramQuantile(d, 0.5)! > 0.1);
  assert.equal(diffHistograms(before, a.data()), before, 'a reset (count went down) gives the newer reading');
});

test('PromText enforces _total on counters, one declaration per family, and writes parseable text', () => {
  assert.throws(() => new PromText().family('x', 'counter', 'h'), /_total/);
  assert.throws(() => new PromText().family('x_total', 'gauge', 'h'), /must not end/);
  assert.throws(() => new PromText().family('a', 'gauge', 'h').family('a', 'gauge', 'h'), /twice/);
  assert.throws(() => new PromText().sample('nope', null, 1), /undeclared/);
  const h = new Histogram();
  h.observe(0.01);
  const p = new PromText()
    .single('a_total', 'counter', 'with "quotes" and \\ backslash', 3)
    .single('g', 'gauge', 'inf', Infinity, { label: 'x"y\\z\nw' })
    .family('lat_seconds', 'histogram', 'latency');
  p.histogram('lat_seconds', { transport: 'http' }, h.data());
  const fams = parsePrometheus(p.text());
  assert.equal(sampleValue(fams, 'a_total'), 3);
  assert.equal(sampleValue(fams, 'g', { label: 'x"y\\z\nw' }), Infinity);
  assert.equal(sampleValue(fams, 'lat_seconds_count', { transport: 'http' }), 1);
  assert.equal(sampleValue(fams, 'lat_seconds_bucket', { transport: 'http', le: '+Inf' }), 1);
});
