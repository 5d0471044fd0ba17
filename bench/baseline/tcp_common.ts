/**
 * What the two framed-TCP baselines (tcp_echo, tcp_hop) share, so that they
 * differ only in how a reply is produced: frames decoded with streamfeat's own
 * codec, each payload parsed as JSON (bad JSON answered on the spot, a bad frame
 * closes the connection), and the listener announced with the same
 * `server.tcp_bound` line streamfeat logs.
 */
import net from 'node:net';
import { DECODED_FRAME, DECODED_NEED_MORE, encodeFrame, FrameDecoder, OP_ERROR_RESPONSE } from '../../src/protocol/frame';
import { TCP_FRAME_BYTES_MAX_DEFAULT } from '../../src/limits';

const BAD_JSON = encodeFrame(OP_ERROR_RESPONSE, '{"error":{"code":"invalid_json_body","message":"payload is not valid JSON"}}');

/** Serves frames: onFrame gets each frame whose payload is valid JSON, with its text. */
export function serveFrames(name: string, host: string, port: number, onFrame: (socket: net.Socket, op: number, body: string) => void): void {
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    const decoder = new FrameDecoder(TCP_FRAME_BYTES_MAX_DEFAULT);
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      decoder.push(chunk);
      for (;;) {
        // decode(), not next(): no objects per frame, as streamfeat's TCP front reads frames.
        const r = decoder.decode();
        if (r === DECODED_NEED_MORE) return;
        if (r !== DECODED_FRAME) {
          socket.destroy();
          return;
        }
        const body = decoder.payloadBuf.toString('utf8', decoder.payloadStart, decoder.payloadEnd);
        try {
          JSON.parse(body);
        } catch {
          socket.write(BAD_JSON);
          continue;
        }
        onFrame(socket, decoder.op, body);
      }
    });
  });
  server.on('error', (err) => {
    console.error(`${name}: cannot listen on ${host}:${port}: ${err.message}`);
    process.exit(1);
  });
  server.listen(port, host, () => {
    const a = server.address() as net.AddressInfo;
    process.stdout.write(JSON.stringify({ kind: 'server.tcp_bound', addr: `${host}:${a.port}` }) + '\n');
  });
  process.on('SIGTERM', () => process.exit(0));
}
