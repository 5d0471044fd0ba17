/**
 * Baseline: the least a framed-TCP JSON server on node:net can do. Decodes
 * frames with streamfeat's own codec, parses each payload as JSON and answers
 * with the same opcode and a small JSON the size of a push ack (an "echo" of
 * the op, not of the bytes, so reply sizes match a push's). Every TCP ratio
 * is streamfeat's number over this one's, same run, same load client.
 *
 * Usage: node tcp_echo.js --tcp-addr 127.0.0.1:0   (logs server.tcp_bound)
 */
import { encodeFrame } from '../../src/protocol/frame';
import { parseBaselineArgs } from '../args';
import { serveFrames } from './tcp_common';

const { host, port } = parseBaselineArgs('tcp_echo', 'tcp-addr', process.argv.slice(2));
let seq = 0;

serveFrames('tcp_echo', host, port, (socket, op) => {
  socket.write(encodeFrame(op, `{"ack_lsn":${++seq},"registry_version":1,"idempotent_replay":false}`));
});
