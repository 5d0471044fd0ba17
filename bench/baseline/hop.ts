/**
 * The hand-off the two hop baselines (uws_hop, tcp_hop) add to their bare
 * server, exactly as streamfeat's front hands requests to a shard thread: the
 * requests of one event-loop turn go as one batch (setImmediate) to ONE worker
 * thread (uws_hop_worker.ts), at most SHARD_BATCHES_IN_FLIGHT_MAX batches are in
 * flight (requests keep accumulating while the limit is reached, so batches grow
 * with load), and each answer is delivered when its batch comes back, in order.
 * A batch moves as a postMessage each way, as streamfeat's batches move on the
 * shard's pipe (a SharedArrayBuffer ring with Atomics wake-ups was measured here
 * end to end and kept no more of the bare server: bench/DECISIONS.md).
 */
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { SHARD_BATCHES_IN_FLIGHT_MAX } from '../../src/limits';

export class Hop<W> {
  readonly #worker: Worker;
  /** The current turn's requests and their bodies (parallel arrays, as streamfeat's channel keeps them). */
  #waiting: W[] = [];
  #bodies: string[] = [];
  /** Batches posted and not yet answered, oldest first: the worker answers in the same order. */
  readonly #sent: W[][] = [];
  #flushScheduled = false;
  readonly #deliver: (w: W, reply: string) => void;
  readonly #name: string;
  readonly #flush = (): void => {
    this.#flushScheduled = false;
    if (this.#sent.length >= SHARD_BATCHES_IN_FLIGHT_MAX || this.#waiting.length === 0) return;
    this.#sent.push(this.#waiting);
    this.#worker.postMessage(this.#bodies);
    this.#waiting = [];
    this.#bodies = [];
  };
  /** `deliver` writes one answer (the worker's reply string) to the request it belongs to. */
  constructor(name: string, workUs: number, deliver: (w: W, reply: string) => void) {
    this.#deliver = deliver;
    this.#name = name;
    this.#worker = new Worker(join(__dirname, 'uws_hop_worker.js'), { workerData: { workUs } });
    // A dead worker would leave every later request hanging: fail loudly instead (the bench sees the exit).
    this.#worker.on('error', (err) => {
      console.error(`${name}: worker failed: ${String(err?.stack ?? err)}`);
      process.exit(1);
    });
    this.#worker.on('exit', (code) => {
      console.error(`${name}: worker exited (code ${code})`);
      process.exit(1);
    });
    this.#worker.on('message', (outs: string[]) => this.#answered(outs));
  }

  /** A request whose body parsed: answered by the worker with the rest of this turn's. */
  add(w: W, body: string): void {
    this.#waiting.push(w);
    this.#bodies.push(body);
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(this.#flush);
  }

  /** The oldest batch in flight came back with these answers. */
  #answered(outs: string[]): void {
    const batch = this.#sent.shift();
    if (batch === undefined) throw new Error(`${this.#name}: an answer for no batch`);
    for (let i = 0; i < batch.length; i++) this.#deliver(batch[i], outs[i]);
    // What accumulated while the limit was reached goes now, as streamfeat's channel does on completion.
    this.#flush();
  }
}
