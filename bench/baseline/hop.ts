/**
 * The hand-off the two hop baselines (uws_hop, tcp_hop) add to their bare
 * server, exactly as streamfeat's front hands requests to a shard thread: the
 * requests of one event-loop turn go as one batch (setImmediate) to ONE worker
 * thread (uws_hop_worker.ts), at most SHARD_BATCHES_IN_FLIGHT_MAX batches are in
 * flight (requests keep accumulating while the limit is reached, so batches grow
 * with load), and each answer is delivered when its batch comes back, in order.
 *
 * Two ways to move a batch (`--hop`): `message`, a postMessage each way, as
 * streamfeat does (piscina tasks); `ring`, SharedArrayBuffer rings with
 * Atomics wake-ups (hop_ring.ts), the alternative issue 12 item 4 asked about.
 */
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { SHARD_BATCHES_IN_FLIGHT_MAX } from '../../src/limits';
import type { HopKind } from '../args';
import { newRingShared, openRings, type Rings, type StringRing } from './hop_ring';

export class Hop<W> {
  readonly #worker: Worker;
  /** The current turn's requests and their bodies (parallel arrays, as streamfeat's channel keeps them). */
  #waiting: W[] = [];
  #bodies: string[] = [];
  /** Batches posted and not yet answered, oldest first: the worker answers in the same order. */
  readonly #sent: W[][] = [];
  #flushScheduled = false;
  /** `--hop ring`: the two rings (null: messages), and whether a wait for replies is pending. */
  readonly #rings: Rings | null;
  #waitingForReplies = false;
  readonly #deliver: (w: W, reply: string) => void;
  readonly #name: string;
  readonly #flush = (): void => {
    this.#flushScheduled = false;
    if (this.#sent.length >= SHARD_BATCHES_IN_FLIGHT_MAX || this.#waiting.length === 0) return;
    this.#sent.push(this.#waiting);
    if (this.#rings === null) this.#worker.postMessage(this.#bodies);
    else {
      this.#rings.requests.put(this.#bodies);
      this.#awaitReplies(this.#rings.replies);
    }
    this.#waiting = [];
    this.#bodies = [];
  };
  readonly #onReplies = (): void => {
    this.#waitingForReplies = false;
    const replies = (this.#rings as Rings).replies;
    while (replies.ready > 0) this.#answered(replies.take());
    this.#awaitReplies(replies);
  };

  /** `deliver` writes one answer (the worker's reply string) to the request it belongs to. */
  constructor(kind: HopKind, name: string, workUs: number, deliver: (w: W, reply: string) => void) {
    this.#deliver = deliver;
    this.#name = name;
    const ring = kind === 'ring' ? newRingShared() : null;
    this.#rings = ring === null ? null : openRings(ring);
    this.#worker = new Worker(join(__dirname, 'uws_hop_worker.js'), { workerData: { workUs, ring } });
    // A dead worker would leave every later request hanging: fail loudly instead (the bench sees the exit).
    this.#worker.on('error', (err) => {
      console.error(`${name}: worker failed: ${String(err?.stack ?? err)}`);
      process.exit(1);
    });
    this.#worker.on('exit', (code) => {
      console.error(`${name}: worker exited (code ${code})`);
      process.exit(1);
    });
    if (ring === null) this.#worker.on('message', (outs: string[]) => this.#answered(outs));
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

  /** Ring: one pending wait for replies while any batch is in flight (a wait keeps nothing else alive). */
  #awaitReplies(replies: StringRing): void {
    if (this.#waitingForReplies || this.#sent.length === 0) return;
    this.#waitingForReplies = true;
    replies.whenReady(this.#onReplies);
  }
}
