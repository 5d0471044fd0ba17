/**
 * The typed entry into the coordinator thread (coordinator/coordinator_main.ts
 * handle), for the main thread: piscina's run() takes and returns `any`, so this
 * is the one place where each coordinator task is tied to its answer type
 * (CoordinatorAnswers), as shard_calls.ts does for the shards.
 */
import { join } from 'node:path';
import { workerData } from 'node:worker_threads';
import Piscina from 'piscina';
import type { CoordinatorAnswers, CoordinatorInit, CoordinatorTask } from './messages';
import { setStringBytesMax } from '../string_cap';

/** What the coordinator calls need of a pool (a fake in unit tests). */
export type CoordinatorPool = Pick<Piscina, 'run'>;

/** Runs one coordinator task; the answer's type follows the task's kind. */
export function runCoordinator<T extends CoordinatorTask>(pool: CoordinatorPool, task: T): Promise<CoordinatorAnswers[T['kind']]> {
  return pool.run(task);
}

/**
 * The coordinator's pool, started with `init` as its workerData: the other end of
 * coordinatorInit(), so the init type is tied to the thread here too.
 */
export function startCoordinatorPool(init: CoordinatorInit): Piscina {
  return new Piscina({
    filename: join(__dirname, '..', 'coordinator', 'coordinator_main.js'),
    minThreads: 1, maxThreads: 1, idleTimeout: Number.MAX_SAFE_INTEGER, workerData: init,
    // Waiting for tasks on its event loop (not blocked in Atomics.wait) lets the
    // coordinator's event-loop delay and utilization be measured (admin/thread_stats.ts).
    useAtomics: false,
  });
}

/** In the coordinator thread: the init startCoordinatorPool passed, its thread-wide settings applied (string_cap.ts). */
export function coordinatorInit(): CoordinatorInit {
  const init = workerData as CoordinatorInit;
  if (init.stringBytesMax !== undefined) setStringBytesMax(init.stringBytesMax);
  return init;
}
