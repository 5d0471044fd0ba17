import { test } from 'node:test';
import assert from 'node:assert/strict';
import { didYouMean, nearestName, unknownNameHint } from '../../../src/util/near_name';
import { HINT_NAMES_LISTED_MAX } from '../../../src/limits';

test('unknownNameHint: the close name, then the sorted list while it is short; the empty case says so', () => {
  assert.equal(unknownNameHint('UserSpnd', ['UserSpend', 'CardStats'], 'registered tables'), '; did you mean "UserSpend"? (registered tables: CardStats, UserSpend)');
  assert.equal(unknownNameHint('Zzz', ['UserSpend'], 'registered tables'), ' (registered tables: UserSpend)');
  assert.equal(unknownNameHint('T', [], 'registered tables', 'no tables are registered'), ' (no tables are registered)');
  const many = Array.from({ length: HINT_NAMES_LISTED_MAX + 1 }, (_, i) => `table_${i}`);
  assert.equal(unknownNameHint('table_1x', many, 'registered tables'), '; did you mean "table_1"?', 'too many to list: the hint alone');
  assert.equal(unknownNameHint('zzz', many, 'registered tables'), '');
  assert.equal(unknownNameHint(42, ['a'], 'names'), ' (names: a)', 'a non-string name gets the list only');
  assert.equal(didYouMean('filtr', ['filter', 'drop']), '; did you mean "filter"?');
});

test('nearestName: short names allow fewer edits (one per three characters), case never counts', () => {
  assert.equal(nearestName('x', ['n', 'y']), null);
  assert.equal(nearestName('N', ['n']), 'n');
  assert.equal(nearestName('usr', ['user']), 'user');
  assert.equal(nearestName('ab', ['xy']), null);
  assert.equal(nearestName('amout', ['amount']), 'amount');
  assert.equal(nearestName('amuont', ['amount']), 'amount');
});
