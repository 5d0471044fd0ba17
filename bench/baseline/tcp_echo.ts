/**
 * Baseline: the least a framed-TCP JSON server on node:net can do. Decodes
 * frames with streamfeat's own codec, parses each payload as JSON and answers
 * with the same opcode and a small JSON the size of a push ack (an "echo" of
 * the op, not of the bytes, so reply sizes match a push's). Every TCP ratio
 * is streamfeat's number over this one's, same run, same load client.
 *
 * Usage: node tcp_echo.js --tcp-addr 127.0.0.1:0   (logs server.tcp_bound)
 */
import net from 'node:net';
import { encodeFrame, FrameDecoder, OP_ERROR_RESPONSE } from '../../src/protocol/frame';
import { TCP_FRAME_BYTES_MAX_DEFAULT } from '../../src/limits';
import { parseBaselineArgs } from '../args';

const { host, port } = parseBaselineArgs('tcp_echo', 'tcp-addr', process.argv.slice(2));
let seq = 0;

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  const decoder = new FrameDecoder(TCP_FRAME_BYTES_MAX_DEFAULT);
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: Buffer) => {
    decoder.push(chunk);
    for (;;) {
      const r = decoder.next();
      if (r.kind === 'need_more') return;
      if (r.kind !== 'frame') {
        socket.destroy();
        return;
      }
      let out: Buffer;
      try {
        JSON.parse(r.frame.payload.toString('utf8'));
        out = encodeFrame(r.frame.op, `{"ack_lsn":${++seq},"registry_version":1,"idempotent_replay":false}`);
      } catch {
        out = encodeFrame(OP_ERROR_RESPONSE, '{"error":{"code":"invalid_json_body","message":"payload is not valid JSON"}}');
      }
      socket.write(out);
    }
  });
});
server.listen(port, host, () => {
  const a = server.address() as net.AddressInfo;
  process.stdout.write(JSON.stringify({ kind: 'server.tcp_bound', addr: `${host}:${a.port}` }) + '\n');
});
process.on('SIGTERM', () => process.exit(0));
