/**
 * Baseline: tcp_echo plus the hand-off streamfeat's architecture makes, and
 * nothing else: the TCP twin of uws_hop.ts. Frames are decoded and each payload
 * parsed exactly as tcp_echo does (bad JSON answered on the spot), but every
 * valid frame is answered by ONE worker thread (uws_hop_worker.ts, shared with
 * uws_hop), the way streamfeat's front hands pushes to a shard thread: the
 * frames of one event-loop turn go as one batch (setImmediate), at most
 * SHARD_BATCHES_IN_FLIGHT_MAX batches are in flight (frames keep accumulating
 * while the limit is reached), and each answer frame is written to its socket
 * when the batch comes back. The worker spins `--work-us` microseconds per
 * frame: a known per-frame cost in place of streamfeat's shard work.
 *
 * Why: the TCP target compares streamfeat with tcp_echo, a server with no
 * second thread. With one request in flight per connection (sf-tcp), throughput
 * is connections / round trip, and the hop adds two thread wake-ups to every
 * round trip; `ceiling --transport tcp` measures how much of tcp_echo any
 * front + shard-thread design keeps here, so streamfeat's ratio can be read
 * against it.
 *
 * Usage: node tcp_hop.js --tcp-addr 127.0.0.1:0 [--work-us N]   (logs server.tcp_bound)
 */
import net from 'node:net';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { encodeFrame, FrameDecoder, OP_ERROR_RESPONSE } from '../../src/protocol/frame';
import { SHARD_BATCHES_IN_FLIGHT_MAX, TCP_FRAME_BYTES_MAX_DEFAULT } from '../../src/limits';
import { parseBaselineArgs } from '../args';

const { host, port, workUs } = parseBaselineArgs('tcp_hop', 'tcp-addr', process.argv.slice(2), true);

/** One frame waiting for its answer. */
class Waiting {
  constructor(readonly socket: net.Socket, readonly op: number) {}

  write(reply: string): void {
    // A socket closed meanwhile just loses its answer (as streamfeat's does).
    if (!this.socket.destroyed) this.socket.write(encodeFrame(this.op, reply));
  }
}

const worker = new Worker(join(__dirname, 'uws_hop_worker.js'), { workerData: { workUs } });
worker.on('error', (err) => {
  console.error(`tcp_hop: worker failed: ${String(err?.stack ?? err)}`);
  process.exit(1);
});
worker.on('exit', (code) => {
  console.error(`tcp_hop: worker exited (code ${code})`);
  process.exit(1);
});

let waiting: Waiting[] = [];
let bodies: string[] = [];
const sent: Waiting[][] = [];
let flushScheduled = false;

function flush(): void {
  flushScheduled = false;
  if (sent.length >= SHARD_BATCHES_IN_FLIGHT_MAX || waiting.length === 0) return;
  sent.push(waiting);
  worker.postMessage(bodies);
  waiting = [];
  bodies = [];
}

worker.on('message', (outs: string[]) => {
  const batch = sent.shift();
  if (batch === undefined) throw new Error('tcp_hop: an answer for no batch');
  for (let i = 0; i < batch.length; i++) batch[i].write(outs[i]);
  flush();
});

function schedule(): void {
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(flush);
}

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
      const body = r.frame.payload.toString('utf8');
      try {
        JSON.parse(body);
      } catch {
        socket.write(encodeFrame(OP_ERROR_RESPONSE, '{"error":{"code":"invalid_json_body","message":"payload is not valid JSON"}}'));
        continue;
      }
      waiting.push(new Waiting(socket, r.frame.op));
      bodies.push(body);
      schedule();
    }
  });
});
server.listen(port, host, () => {
  const a = server.address() as net.AddressInfo;
  process.stdout.write(JSON.stringify({ kind: 'server.tcp_bound', addr: `${host}:${a.port}` }) + '\n');
});
process.on('SIGTERM', () => process.exit(0));
