/**
 * The offline tools' input readers: CSV fields (RFC 4180 quoting), CSV cells typed
 * by the schema, times (epoch ms or RFC 3339), and the byte tail replay's fast path
 * looks for (the time as an envelope's last member), against what JSON.parse reads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csvValue, splitCsv, timeValue } from '../../../src/training/input';
import { EventLines } from '../../../src/training/events';
import { compileRegistry } from '../../../src/registry/compile';

test('splitCsv: plain and quoted fields, doubled quotes, empty fields; an open quote is null', () => {
  assert.deepEqual(splitCsv('a,b,,c'), ['a', 'b', '', 'c']);
  assert.deepEqual(splitCsv('"a,b","say ""hi""",'), ['a,b', 'say "hi"', '']);
  assert.deepEqual(splitCsv(''), ['']);
  assert.equal(splitCsv('"a,b'), null);
  assert.equal(splitCsv('"a"b'), null);
});

test('csvValue types cells by the schema; timeValue reads epoch ms and RFC 3339 only', () => {
  assert.equal(csvValue('12.5', 'f64'), 12.5);
  assert.equal(csvValue('', 'f64'), undefined);
  assert.equal(csvValue('true', 'bool'), true);
  assert.equal(csvValue('0', 'bool'), false);
  assert.equal(csvValue('007', 'str'), '007');
  assert.throws(() => csvValue('abc', 'i64'), /not a number/);
  assert.throws(() => csvValue('yes', 'bool'), /not a bool/);
  assert.equal(timeValue(1700000000000), 1700000000000);
  assert.equal(timeValue('1700000000000'), 1700000000000);
  assert.equal(timeValue('2023-11-14T22:13:20.000Z'), 1700000000000);
  assert.throws(() => timeValue(1.5), /not an integer/);
  assert.throws(() => timeValue('Tuesday'), /neither/);
  assert.throws(() => timeValue(undefined), /missing/);
});

test('timeTail finds the time as the last member, exactly where JSON.parse reads it, and nothing else', () => {
  const reg = compileRegistry({ version: 1, nodes: [{ kind: 'event', name: 'E', schema: { fields: { u: 'str' }, optional_fields: [] } }] }, { memoryGovEnforce: true, pushValidators: true, features: false });
  const lines = new EventLines('f', reg, 'ts', null);
  const cases: Array<[string, number | null]> = [
    ['{"event":"E","data":{"u":"a"},"ts":1700000000123}', 1700000000123],
    ['{"event":"E","data":{"u":"a"},"ts":5}  ', 5],
    ['{"ts":5,"event":"E","data":{"u":"a"}}', null],
    ['{"event":"E","data":{"u":"a"},"ts":"5"}', null],
    ['{"event":"E","data":{"u":"a"},"ts":1.5}', null],
    ['{"event":"E","data":{"u":"a"},"xts":5}', null],
    ['{"event":"E","data":{"u":"a","ts":5}}', null],
  ];
  for (const [line, t] of cases) {
    const b = Buffer.from(line);
    const at = lines.timeTail(b, 0, b.length);
    if (t === null) { assert.equal(at, -1, line); continue; }
    assert.equal(lines.tailT, t, line);
    assert.equal(lines.tailT, JSON.parse(line).ts, line);
    // What is left with a closing brace is the envelope without the time member.
    assert.deepEqual(JSON.parse(`${line.slice(0, at)}}`), { event: 'E', data: { u: 'a' } });
  }
});
