import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  OP_BATCH_GET, OP_GET, OP_GET_RESPONSE, OP_PING, OP_PUSH, OP_REGISTER, OP_RESET, successOpcode,
} from '../../../src/protocol/frame';

test('success replies: 0x0023 for GET, BATCH_GET and RESET; PING, REGISTER and PUSH are echoed (as the peer)', () => {
  assert.equal(OP_GET_RESPONSE, 0x0023);
  for (const op of [OP_GET, OP_BATCH_GET, OP_RESET]) assert.equal(successOpcode(op), 0x0023);
  for (const op of [OP_PING, OP_REGISTER, OP_PUSH]) assert.equal(successOpcode(op), op);
});
