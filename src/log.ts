/**
 * One pino logger per thread, JSON lines on stdout. Every line carries a `kind`
 * with a module prefix (server.*, wal.*, shard.*, registry.*) so tools can match it.
 */
import pino from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  // Synchronous destination: bound-address lines must be on stdout before tests read them,
  // and a crash must not lose the last lines. Logging is off the hot path.
  return pino({ level, base: bindings, timestamp: pino.stdTimeFunctions.epochTime }, pino.destination({ sync: true }));
}
