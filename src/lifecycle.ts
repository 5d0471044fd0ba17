/**
 * Where the server is in its life, for the admin probes: /health is liveness
 * (the process answers: 200 from the moment the admin listener binds, which is
 * before recovery), /ready is readiness (200 only while it should get traffic).
 *
 *   recovering  shards replaying snapshots + WAL (their progress is logged as
 *               shard.recovery_progress); data listeners not bound yet
 *   serving     ready, unless a shard's WAL is unavailable (below)
 *   draining    a stop signal arrived: data listeners closed, in-flight work,
 *               final snapshot; then the process exits
 *
 * WAL unavailable is known from the shards' batch results (ShardChannel.walError:
 * the last WAL append or fdatasync of that shard failed). Not ready while it is
 * set and younger than WAL_UNAVAILABLE_READY_HOLD_MS; a later successful append
 * clears it. The hold lets traffic come back to a node whose disk recovered
 * without any push (with readiness 503 a balancer sends none): after the hold
 * the node is ready again and the next push decides (a half-open breaker).
 */
import type { ShardChannel } from './front/channel';
import { WAL_UNAVAILABLE_READY_HOLD_MS } from './limits';

export type Phase = 'recovering' | 'serving' | 'draining';

export interface Readiness {
  ready: boolean;
  /** JSON body: {"status": "ready"} or {"status": <phase or wal_unavailable>, "reason": ...}. */
  body: Record<string, unknown>;
}

export class Lifecycle {
  #phase: Phase = 'recovering';
  #channels: readonly ShardChannel[] = [];
  /** performance.now() at construction: since_ms of "recovering" is a duration. */
  readonly startedAtMs = performance.now();

  get phase(): Phase {
    return this.#phase;
  }

  serving(channels: readonly ShardChannel[]): void {
    this.#channels = channels;
    this.#phase = 'serving';
  }

  draining(): void {
    this.#phase = 'draining';
  }

  /** `now`: a performance.now() reading (every time here is a duration). */
  readiness(now = performance.now()): Readiness {
    if (this.#phase === 'recovering') {
      return { ready: false, body: { status: 'recovering', reason: 'replaying snapshots and WAL (see shard.recovery_progress log lines)', since_ms: Math.round(now - this.startedAtMs) } };
    }
    if (this.#phase === 'draining') {
      return { ready: false, body: { status: 'draining', reason: 'shutting down: listeners closed, finishing in-flight work and the final snapshot' } };
    }
    for (const ch of this.#channels) {
      if (ch.walError !== null && now - ch.walErrorAtMs < WAL_UNAVAILABLE_READY_HOLD_MS) {
        return { ready: false, body: { status: 'wal_unavailable', reason: `shard ${ch.shardId}: ${ch.walError}`, shard: ch.shardId, age_ms: Math.round(now - ch.walErrorAtMs) } };
      }
    }
    return { ready: true, body: { status: 'ready' } };
  }
}
