/**
 * One pino logger per thread, JSON lines on stdout. Every line carries a `kind`
 * with a module prefix (server.*, wal.*, shard.*, registry.*) so tools can match
 * it, and a `msg` (the kind, unless the call gives a message). Errors go in `err`
 * as Error objects: pino's serializer writes their type, message and stack.
 *
 * Writes never block the thread that logs: with stdout piped
 * to a reader that stopped reading, a synchronous destination blocked the
 * coordinator in write(2) after ~64 KB, so /register and /reset hung and SIGTERM
 * could not stop it. Each thread has an asynchronous destination (sonic-boom) that
 * writes as soon as it is idle (a bound-address line is on stdout within a write),
 * keeps at most LOG_BUFFER_BYTES_MAX waiting while the reader is slow, and drops
 * lines past that. Shutdown flushes what is waiting, for at most
 * LOG_FLUSH_TIMEOUT_MS.
 */
import pino from 'pino';
import { LOG_BUFFER_BYTES_MAX, LOG_FLUSH_TIMEOUT_MS } from './limits';

export type Logger = pino.Logger;

type Destination = ReturnType<typeof pino.destination>;

/** Destinations of this thread's loggers, for flushLogs(). */
const destinations: Destination[] = [];
/** Once shutting down, a full pipe is not waited for (sonic-boom otherwise retries EAGAIN forever). */
let stopping = false;
/** Lines dropped because LOG_BUFFER_BYTES_MAX were waiting (this thread). */
export let logLinesDropped = 0;

export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  const dest = pino.destination({ dest: 1, sync: false, minLength: 0, maxLength: LOG_BUFFER_BYTES_MAX, retryEAGAIN: () => !stopping });
  dest.on('drop', () => { logLinesDropped++; });
  // A write error (the reader is gone: EPIPE) must not end the server; the lines are lost either way.
  dest.on('error', () => {});
  // pino flushes synchronously at process exit; with a stalled reader that write fails (EAGAIN,
  // once stopping) and must not turn a clean exit into a stack trace.
  const flushSync = dest.flushSync.bind(dest);
  dest.flushSync = (): void => {
    try { flushSync(); } catch { /* lines that cannot be written now are dropped */ }
  };
  destinations.push(dest);
  return pino({
    level,
    base: bindings,
    timestamp: pino.stdTimeFunctions.epochTime,
    hooks: {
      logMethod(args, method) {
        const first = args[0] as unknown;
        if (args.length === 1 && typeof first === 'object' && first !== null && typeof (first as { kind?: unknown }).kind === 'string') {
          method.call(this, first as object, (first as { kind: string }).kind);
          return;
        }
        method.apply(this, args);
      },
    },
  }, dest);
}

/** Writes out what this thread's loggers hold; resolves when done or after LOG_FLUSH_TIMEOUT_MS (a stalled reader). */
export function flushLogs(): Promise<void> {
  stopping = true;
  const all = destinations.map((d) => new Promise<void>((resolve) => {
    try {
      d.flush(() => resolve());
    } catch {
      resolve(); // not ready yet or nothing to flush
    }
  }));
  return new Promise<void>((resolve) => {
    const t = setTimeout(resolve, LOG_FLUSH_TIMEOUT_MS);
    t.unref();
    void Promise.all(all).then(() => { clearTimeout(t); resolve(); });
  });
}
