/**
 * The thread behind uws_hop.ts and tcp_hop.ts (hop.ts): stands in for a
 * streamfeat shard thread, with a known per-item cost instead of the shard's real work. For each batch (an
 * array of request bodies, in arrival order) it parses every body, busy-spins
 * `workUs` microseconds per item, and answers with one ack per item in the
 * same order. The ack's LSN is assigned here, as a shard's log would: batches
 * arrive and are answered in FIFO order (one thread, one message port), so the
 * front can pair answers with its queue of waiting batches.
 *
 * A busy spin, not a sleep: the point is CPU the worker takes from the two
 * cores (shared with the front and the load generator), as real shard work does.
 */
import { parentPort, workerData } from 'node:worker_threads';

interface HopWorkerData {
  /** Microseconds of busy CPU per item (0 = only the parse and the hop). */
  workUs: number;
}

const port = parentPort;
if (port === null) throw new Error('uws_hop_worker.js runs as a worker thread of uws_hop.js');
const { workUs } = workerData as HopWorkerData;
const workMs = workUs / 1000;
let seq = 0;

/** Spins until `ms` milliseconds have passed (performance.now: no BigInt per check, unlike hrtime.bigint). */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    /* busy: the cost is the CPU */
  }
}

function answer(bodies: string[]): string[] {
  const outs = new Array<string>(bodies.length);
  for (let i = 0; i < bodies.length; i++) {
    // The front already parsed it (400 on bad JSON); the worker decodes it again as a
    // shard decodes its item, so W=0 is "hop + decode", not a bare message echo.
    JSON.parse(bodies[i]);
    if (workMs > 0) spin(workMs);
    outs[i] = `{"ack_lsn":${++seq},"registry_version":1,"idempotent_replay":false}`;
  }
  return outs;
}

port.on('message', (bodies: string[]) => port.postMessage(answer(bodies)));
