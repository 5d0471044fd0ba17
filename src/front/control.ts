/**
 * The front's control side (request logic is front.ts): registry changes
 * (register through the coordinator, install, reset) one at a time, snapshots,
 * drain at shutdown, and recovery of a shard whose thread died. It works on the
 * front through ControlHost, so this file does not import front.ts.
 */
import type Piscina from 'piscina';
import { asSfError } from '../errors';
import type { Logger } from '../log';
import type { Metrics } from '../admin/metrics';
import { compileRegistry, SlicedCompile, wireOf, type CompiledRegistry } from '../registry/compile';
import { decodeWire, type RegistryWire } from '../registry/wire';
import type { RegistryState } from '../registry/model';
import { ITEM_INSTALL, ITEM_PREPARE, ITEM_RESET, ITEM_SNAPSHOT, PREPARE_PENDING, type ErrorPayload } from '../protocol/messages';
import { runCoordinator } from '../protocol/coordinator_calls';
import type { ShardChannel, Sink } from './channel';
import type { ClusterHooks } from './cluster_hooks';
import type { PushDedupe } from './dedupe';
import type { LsnCounter } from './lsn';
import { CountdownSink } from './sinks';
import type { Reply } from './reply';
import { CHANNEL_DRAIN_POLL_MS, REGISTRY_COMPILE_SLICE_MS, REGISTRY_PREPARE_POLL_MS } from '../limits';

/** What the control side needs of the front (Front implements it). */
export interface ControlHost {
  readonly registry: CompiledRegistry;
  /** Makes `reg` the registry pushes are validated under from now on. */
  adoptRegistry(reg: CompiledRegistry): void;
  /** The LSN sequence (pushes and registry records share it). */
  readonly lsn: LsnCounter;
  readonly channels: readonly ShardChannel[];
  readonly dedupe: PushDedupe;
  readonly cluster: ClusterHooks | null;
  readonly coordinator: Piscina;
  readonly opts: { readonly testMode: boolean; readonly memoryGovEnforce: boolean };
  readonly metrics: Metrics;
  readonly log: Logger;
  /** Flushes every channel at the end of this event-loop turn. */
  schedule(): void;
  /** Flushes every channel now. */
  flush(): void;
  fail(reply: Reply, e: ErrorPayload, withVersion?: boolean): void;
  failErr(reply: Reply, err: unknown): void;
  /** A completion threw: that request gets internal_error (Front.completionFailed). */
  completionFailed(sink: Sink, err: unknown): void;
}

export class FrontControl {
  /** Registry changes (installs, resets) run one at a time, in the order they were asked. */
  #registryQueue: Array<(next: () => void) => void> = [];
  #registryBusy = false;

  constructor(readonly host: ControlHost) {}

  /**
   * A shard task failed: its thread died and piscina replaces it. The new thread
   * recovers from its WAL (disk mode) but starts from the boot registry in memory
   * mode, so the current registry is installed on that channel again (a no-op when
   * the shard has it already). Nothing that was acknowledged is lost in disk mode.
   */
  shardFailed(shard: number, err: unknown): void {
    const h = this.host;
    h.log.error({ kind: 'shard.task_failed', shard, err });
    const ignore: Sink = { done: () => {} };
    h.channels[shard].enqueueInstallFirst({ k: ITEM_INSTALL, lsn: h.lsn.take(), wire: wireOf(h.registry), renames: [] }, ignore);
    h.schedule();
  }

  /** Runs a coordinator answer handler: a throw there would be an unhandled rejection (the process ends). */
  #guarded(reply: Reply, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.host.completionFailed({ done: () => {}, reply }, err);
    }
  }

  /** `text`: the register body, depth-checked, not parsed (the coordinator parses it). */
  register(text: string, reply: Reply): void {
    const h = this.host;
    if (h.cluster !== null) { h.cluster.register(text, reply); return; }
    runCoordinator(h.coordinator, { kind: 'register', text }).then(
      (res) => this.#guarded(reply, () => {
        if (!res.ok) { h.fail(reply, res.error); return; }
        const answer = (): void => {
          h.metrics.registerTotal++;
          reply.ok(JSON.stringify(res.body));
        };
        // Answered once the new version is in place: pushes sent after the answer use it.
        if (res.wire !== null) this.install(res.wire, res.renames, (err) => this.#guarded(reply, () => (err === null ? answer() : h.fail(reply, err))));
        else answer();
      }),
      (err: unknown) => h.failErr(reply, err),
    );
  }

  /**
   * Makes a new registry visible: pushes validated from now on use it, and every
   * shard installs it before them. The version is compiled first, in slices
   * (REGISTRY_COMPILE_SLICE_MS) on the front and, through PREPARE items, on every
   * shard between its batches, while everyone keeps serving the current version;
   * then it is swapped in at once everywhere (the INSTALL items find it compiled).
   * So a register of any size delays a request by about one slice, not by the
   * compile. `done` when the front has swapped.
   */
  install(wire: RegistryWire, renames: Array<[string, string]>, done: (err: ErrorPayload | null) => void = () => {}): void {
    const h = this.host;
    this.#serially((next) => {
      if (wire.version <= h.registry.version) { next(); done(null); return; } // already in place
      // Incremental: only changed nodes (and their dependents) are compiled again.
      const job = new SlicedCompile(wire, { memoryGovEnforce: h.opts.memoryGovEnforce, pushValidators: true, features: false, previous: h.registry });
      let waiting = h.channels.length + 1;
      const ready = (): void => {
        if (--waiting > 0) return;
        let err: ErrorPayload | null = null;
        try {
          h.adoptRegistry(job.finish());
          const ignore: Sink = { done: (out) => { if (out !== null && typeof out === 'object') h.log.error({ kind: 'shard.install_failed', out }); } };
          const item = { k: ITEM_INSTALL, lsn: h.lsn.take(), wire, renames } as const;
          for (const ch of h.channels) ch.enqueue(item, ignore, 0);
          h.schedule();
          h.log.info({ kind: 'registry.installed', registry_version: wire.version });
        } catch (e) {
          // The coordinator compiled this state already: a failure here is a bug.
          h.log.error({ kind: 'registry.install_failed', registry_version: wire.version, err: String((e as Error)?.stack ?? e) });
          const sf = asSfError(e);
          err = { code: sf.code, detail: sf.detail };
        }
        next();
        done(err);
      };
      const stepFront = (): void => {
        if (job.step(REGISTRY_COMPILE_SLICE_MS)) ready();
        else setImmediate(stepFront);
      };
      for (const ch of h.channels) this.#prepareOn(ch, wire, ready);
      h.schedule();
      stepFront();
    });
  }

  /** PREPARE on one shard, asked again every REGISTRY_PREPARE_POLL_MS until its compile is done. */
  #prepareOn(ch: ShardChannel, wire: RegistryWire, ready: () => void): void {
    const sink: Sink = {
      done: (out) => {
        // null: compiled; an error (the thread died): its INSTALL compiles and reports.
        if (out !== PREPARE_PENDING) { ready(); return; }
        setTimeout(() => {
          ch.enqueue({ k: ITEM_PREPARE, version: wire.version, wire: null }, sink, 0);
          this.host.schedule();
        }, REGISTRY_PREPARE_POLL_MS);
      },
    };
    ch.enqueue({ k: ITEM_PREPARE, version: wire.version, wire }, sink, 0);
  }

  #serially(op: (next: () => void) => void): void {
    this.#registryQueue.push(op);
    if (!this.#registryBusy) this.#nextRegistryOp();
  }

  #nextRegistryOp(): void {
    const op = this.#registryQueue.shift();
    if (op === undefined) { this.#registryBusy = false; return; }
    this.#registryBusy = true;
    let called = false;
    const next = (): void => { if (!called) { called = true; this.#nextRegistryOp(); } };
    try {
      op(next);
    } catch (err) {
      // Ops answer their own errors; a throw is a bug and must not stop later registry changes.
      this.host.log.error({ kind: 'registry.op_failed', err: String((err as Error)?.stack ?? err) });
      next();
    }
  }

  reset(reply: Reply): void {
    const h = this.host;
    if (!h.opts.testMode) {
      h.fail(reply, {
        code: 'reset_disabled_in_production',
        detail: {
          message: 'reset is disabled: the server is not in test mode',
          reason: 'start the server with --test-mode or set SERVICE_TEST_MODE=1 to enable reset (test mode is decided at boot)',
        },
      });
      return;
    }
    if (h.cluster !== null) { h.cluster.reset(reply); return; }
    runCoordinator(h.coordinator, { kind: 'reset' }).then(
      (res) => this.#guarded(reply, () => {
        if (!res.ok) { h.fail(reply, res.error); return; }
        // A reset's state has no nodes: decoding it costs nothing.
        this.resetLocal(decodeWire(res.wire!), (err) => {
          if (err !== null) { h.fail(reply, err); return; }
          h.metrics.resetTotal++;
          reply.ok(JSON.stringify(res.body));
        });
      }),
      (err: unknown) => h.failErr(reply, err),
    );
  }

  /** Installs `state` and clears every shard and the dedupe store; `done` when all shards have. */
  resetLocal(state: RegistryState, done: (err: ErrorPayload | null) => void): void {
    const h = this.host;
    // In turn with installs: an install still compiling must not land after this reset.
    this.#serially((next) => {
      let reg: CompiledRegistry;
      try {
        reg = compileRegistry(state, { memoryGovEnforce: h.opts.memoryGovEnforce, pushValidators: true, features: false });
      } catch (e) {
        next();
        const sf = asSfError(e);
        done({ code: sf.code, detail: sf.detail });
        return;
      }
      h.adoptRegistry(reg);
      const sink = new CountdownSink(h.channels.length, (err) => {
        if (err === null) h.dedupe.store.clear();
        done(err);
      });
      const item = { k: ITEM_RESET, lsn: h.lsn.take(), state } as const;
      for (const ch of h.channels) ch.enqueue(item, sink, 0);
      h.schedule();
      next();
    });
  }

  /**
   * Asks every shard to snapshot (in order with the pushes before it): `sync` at
   * shutdown (done when this resolves); otherwise each shard starts an incremental
   * job between batches and this resolves at once.
   */
  snapshot(sync: boolean): Promise<void> {
    const h = this.host;
    return new Promise((resolve) => {
      const sink = new CountdownSink(h.channels.length, (err) => {
        if (err !== null) h.log.error({ kind: 'wal.snapshot_failed', err });
        resolve();
      });
      for (const ch of h.channels) ch.enqueue({ k: ITEM_SNAPSHOT, sync }, sink, 0);
      h.schedule();
    });
  }

  /** Resolves when every channel has nothing queued or in flight. */
  async drain(): Promise<void> {
    this.host.flush();
    while (!this.host.channels.every((c) => c.idle)) await new Promise((r) => setTimeout(r, CHANNEL_DRAIN_POLL_MS));
  }
}
