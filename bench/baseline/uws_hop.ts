/**
 * Baseline: uws_bare plus the hand-off streamfeat's architecture makes, and
 * nothing else. It reads and parses the body exactly as uws_bare does (400 on
 * bad JSON, answered on the spot), but every valid request is answered by ONE
 * worker thread (hop.ts, uws_hop_worker.ts), the way streamfeat's front hands requests
 * to a shard thread: the requests of one event-loop turn go as one batch
 * (setImmediate), at most SHARD_BATCHES_IN_FLIGHT_MAX batches are in flight
 * (items keep accumulating while the limit is reached, so batches grow with
 * load), and each answer is written with res.cork() when the batch comes back.
 * The worker spins `--work-us` microseconds per item: a known per-item cost in
 * place of streamfeat's shard work.
 *
 * Why: on a 2-core machine shared with the load generator, the hop itself
 * (message passing, the second thread's CPU, the wake-ups) costs a large share
 * of uws_bare's throughput before any real work is done. `ceiling` measures this
 * server at a few per-item costs so that streamfeat's ratio to uws_bare can be
 * read against what this architecture can reach here at all.
 *
 * Usage: node uws_hop.js --http-addr 127.0.0.1:0 [--work-us N]   (logs server.http_bound)
 */
import uWS from 'uWebSockets.js';
import { parseBaselineArgs } from '../args';
import { Hop } from './hop';
import { listenAndAnnounce, readBody } from './uws_common';

const { host, port, workUs } = parseBaselineArgs('uws_hop', 'http-addr', process.argv.slice(2), true);

/** One request waiting for its answer. One shape for every request (monomorphic). */
class Waiting {
  aborted = false;
  constructor(readonly res: uWS.HttpResponse) {}

  write(status: string, reply: string): void {
    // After onAborted the response object must not be touched again.
    if (this.aborted) return;
    this.aborted = true; // a response is written once
    this.res.cork(() => {
      this.res.writeStatus(status).writeHeader('Content-Type', 'application/json').end(reply);
    });
  }
}

const hop = new Hop<Waiting>('uws_hop', workUs, (w, reply) => w.write('200 OK', reply));

const app = uWS.App();
app.any('/*', (res) => {
  const w = new Waiting(res);
  res.onAborted(() => {
    w.aborted = true;
  });
  readBody(res, () => w.aborted, (buf) => {
    const body = buf.toString('utf8');
    try {
      JSON.parse(body);
    } catch {
      w.write('400 Bad Request', '{"error":{"code":"invalid_json_body","message":"body is not valid JSON"}}');
      return;
    }
    hop.add(w, body);
  });
});
listenAndAnnounce(app, 'uws_hop', host, port);
