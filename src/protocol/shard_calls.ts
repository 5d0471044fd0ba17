/**
 * The typed entry into a shard thread (shard/shard_main.ts handle), for the main
 * thread: piscina's run() takes and returns `any`, so this is the one place where
 * the task and answer types of the shard protocol are tied to it.
 *
 * Batches do not travel as piscina tasks: one long "serve" task hands the thread a
 * MessagePort (openShardPipe), and batches and their answers are plain messages on
 * it. A piscina task per batch cost ~10 µs more CPU per batch over both threads
 * (TaskInfo and an async resource, promises and awaits in piscina's worker loop)
 * and allocations that the shard's scavenges then copy (bench/DECISIONS.md
 * "Hand-off between the front and the shards"). Piscina still owns the thread's life: the serve task fails when the
 * thread dies, which is how the front learns of it, and piscina starts the
 * replacement that the next pipe is opened to.
 */
import { join } from 'node:path';
import { MessageChannel, receiveMessageOnPort, workerData } from 'node:worker_threads';
import Piscina from 'piscina';
import { PUSH_BATCH_BYTES_INITIAL, PUSH_BATCH_BYTES_KEPT_MAX, SHARD_YOUNG_GENERATION_MB } from '../limits';
import type { ShardBatch, ShardBatchAnswer, ShardBatchWire, ShardHello, ShardHelloTask, ShardInit, ShardServeTask } from './messages';
import { setStringBytesMax } from '../string_cap';

/** What the shard calls need of a pool (a fake in unit tests). */
export type ShardPool = Pick<Piscina, 'run'>;

const HELLO: ShardHelloTask = { hello: true };

/** What a pipe tells its owner (front/channel.ts). */
export interface ShardPipeEvents {
  /** The answer to the oldest batch sent on this pipe and not answered yet. */
  answer(a: ShardBatchAnswer): void;
  /** The thread is gone: batches sent and not answered (answer() was called for every one that was) never will be. */
  lost(err: unknown): void;
}

export interface ShardPipe {
  send(batch: ShardBatchWire): void;
  /** Ends the serve task (shutdown); nothing more is reported. */
  close(): void;
}

/** Opens a batch pipe to the pool's thread (a replacement thread, if the last one died). */
export function openShardPipe(pool: ShardPool, events: ShardPipeEvents): ShardPipe {
  const { port1, port2 } = new MessageChannel();
  let open = true;
  port1.on('message', (a: ShardBatchAnswer) => { if (open) events.answer(a); });
  // The pipe must not keep the process alive by itself (the server's listeners do).
  port1.unref();
  const task: ShardServeTask = { serve: port2 };
  (pool.run(task, { transferList: [port2] }) as Promise<void>).then(
    () => { if (open) { open = false; port1.close(); events.lost(new Error('the shard thread ended its batch pipe')); } },
    (err: unknown) => {
      if (!open) return;
      // Answers the thread posted before it died are queued here already: deliver them first.
      for (let m = receiveMessageOnPort(port1); m !== undefined; m = receiveMessageOnPort(port1)) events.answer(m.message as ShardBatchAnswer);
      open = false;
      port1.close();
      events.lost(err);
    },
  );
  return {
    send(batch: ShardBatchWire): void {
      port1.postMessage(batch);
    },
    close(): void {
      if (!open) return;
      open = false;
      port1.close();
    },
  };
}

/** The first task of a shard thread: answered once it has recovered. */
export function runShardHello(pool: ShardPool): Promise<ShardHello> {
  return pool.run(HELLO);
}

/** One shard's pool (one thread), started with `init` as its workerData: the other end of shardInit(). */
export function startShardPool(init: ShardInit): Piscina {
  return new Piscina({
    filename: join(__dirname, '..', 'shard', 'shard_main.js'),
    minThreads: 1, maxThreads: 1, idleTimeout: Number.MAX_SAFE_INTEGER, useAtomics: false, workerData: init,
    resourceLimits: { maxYoungGenerationSizeMb: SHARD_YOUNG_GENERATION_MB },
    // The serve task stays open for the thread's life; the hello task runs beside it at start.
    concurrentTasksPerWorker: 2,
  });
}

/** In a shard thread: the init startShardPool passed, its thread-wide settings applied (string_cap.ts). */
export function shardInit(): ShardInit {
  const init = workerData as ShardInit;
  if (init.stringBytesMax !== undefined) setStringBytesMax(init.stringBytesMax);
  return init;
}

/**
 * In a shard thread: each batch of the pipe (ShardBatchWire) back as a ShardBatch
 * whose bytes are one buffer reused for every batch (so the thread allocates no
 * ArrayBuffer per batch, see ShardBatchWire). The batch returned is valid until
 * the next decode: the shard runs each batch to its end before it takes the next.
 */
export class ShardBatchDecoder {
  #buf = Buffer.allocUnsafeSlow(PUSH_BATCH_BYTES_INITIAL);
  readonly #batch: ShardBatch = { items: [], bytes: new Uint8Array(0) };

  decode(wire: ShardBatchWire): ShardBatch {
    const n = wire.frames.length;
    let buf = this.#buf;
    // Grown to fit a batch; a large one (a catch-up after a stall) is not kept.
    if (n > buf.length || (buf.length > PUSH_BATCH_BYTES_KEPT_MAX && n <= PUSH_BATCH_BYTES_INITIAL)) {
      let size = PUSH_BATCH_BYTES_INITIAL;
      while (size < n) size *= 2;
      buf = this.#buf = Buffer.allocUnsafeSlow(size);
    }
    // One byte per character: the front made the text with latin1Slice (PushFrameWriter.takeLatin1).
    buf.write(wire.frames, 0, n, 'latin1');
    this.#batch.items = wire.items;
    this.#batch.bytes = buf.subarray(0, n);
    return this.#batch;
  }

  /** Bytes of the reused buffer (tests). */
  get bufferBytes(): number {
    return this.#buf.length;
  }
}
