/**
 * Baseline: tcp_echo plus the hand-off streamfeat's architecture makes, and
 * nothing else: the TCP twin of uws_hop.ts. Frames are decoded and each payload
 * parsed exactly as tcp_echo does (bad JSON answered on the spot), but every
 * valid frame is answered by ONE worker thread through the same hand-off as
 * uws_hop (hop.ts: one batch per event-loop turn, at most
 * SHARD_BATCHES_IN_FLIGHT_MAX in flight), and each answer frame is written to
 * its socket when the batch comes back. The worker spins `--work-us` microseconds per
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
import type net from 'node:net';
import { encodeFrame } from '../../src/protocol/frame';
import { parseBaselineArgs } from '../args';
import { Hop } from './hop';
import { serveFrames } from './tcp_common';

const { host, port, workUs } = parseBaselineArgs('tcp_hop', 'tcp-addr', process.argv.slice(2), true);

/** One frame waiting for its answer. */
class Waiting {
  constructor(readonly socket: net.Socket, readonly op: number) {}
}

const hop = new Hop<Waiting>('tcp_hop', workUs, (w, reply) => {
  // A socket closed meanwhile just loses its answer (as streamfeat's does).
  if (!w.socket.destroyed) w.socket.write(encodeFrame(w.op, reply));
});

serveFrames('tcp_hop', host, port, (socket, op, body) => hop.add(new Waiting(socket, op), body));
