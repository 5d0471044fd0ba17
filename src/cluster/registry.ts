/**
 * The registry in cluster mode (docs/cluster.md "Registry"): one value in the
 * metadata bucket, {state, renames, epoch}. A register through any node runs
 * today's algorithm (coordinator thread, `register_on`) against the bucket's
 * value and compare-and-sets the result on the value's revision; a lost race
 * re-reads and runs again, so changes are serialized and versions go up by one.
 * Every node watches the value and installs each newer version in order (the
 * writer installs its own before answering, so its client's next push sees it).
 *
 * Reset (test mode): the value becomes {version + 1, no nodes, reset epoch}, the
 * stream is purged, and every live node clears its shards and dedupe before the
 * reset is answered.
 */
import type { Front } from '../front/front';
import type { Reply } from '../front/reply';
import type { Logger } from '../log';
import { EMPTY_REGISTRY, type RegistryState } from '../registry/model';
import { runCoordinator } from '../protocol/coordinator_calls';
import { CLUSTER_CONSUMER_RETRY_MS, CLUSTER_REGISTRY_CAS_ATTEMPTS, CLUSTER_RESET_TIMEOUT_MS } from '../limits';
import { EVENT_STREAM, META_REGISTRY_KEY, resetSubject } from './names';
import type { NatsHandles, NatsRequest } from './nats';
import type { Feeder } from './feed';
import type { Ingest } from './ingest';
import type { Membership } from './membership';

interface RegistryValue {
  state: RegistryState;
  renames: Array<[string, string]>;
  /** Version of the last reset's state (0: never reset); also the dedupe id epoch. */
  epoch: number;
  /** Stream sequence at the last reset: everything at or below it was purged. */
  purgedSeq: number;
}

export class ClusterRegistry {
  #stopped = false;
  #epochApplied = 0;
  #resetSub: { unsubscribe(): void } | null = null;

  constructor(readonly front: Front, readonly nats: NatsHandles, readonly feeder: Feeder, readonly ingest: Ingest, readonly log: Logger) {}

  async start(membership: () => Membership, selfId: string): Promise<void> {
    const e = await this.nats.meta.get(META_REGISTRY_KEY);
    if (e !== null && e.operation === 'PUT') this.#adopt(e.json<RegistryValue>());
    void this.#watch();
    this.#membership = membership;
    const sub = this.nats.nc.subscribe(resetSubject(selfId), { callback: (err: Error | null, msg: NatsRequest) => { if (err === null) this.#onResetRequest(msg); } });
    this.#resetSub = sub;
  }

  #membership: () => Membership = () => { throw new Error('not started'); };

  async #watch(): Promise<void> {
    while (!this.#stopped) {
      try {
        const it = await this.nats.meta.watch({ key: META_REGISTRY_KEY });
        for await (const e of it) {
          if (this.#stopped) { it.stop(); break; }
          if (e.operation === 'PUT') this.#adopt(e.json<RegistryValue>());
        }
      } catch (err) {
        if (!this.#stopped) this.log.warn({ kind: 'cluster.registry_watch_failed', err: String((err as Error)?.message ?? err) });
      }
      if (!this.#stopped) await new Promise((r) => setTimeout(r, CLUSTER_CONSUMER_RETRY_MS));
    }
  }

  /** Installs a value newer than the front's registry (a reset value clears this node first). */
  #adopt(v: RegistryValue, done?: () => void): void {
    this.ingest.epoch = Math.max(this.ingest.epoch, v.epoch);
    if (v.epoch > this.#epochApplied) {
      this.#epochApplied = v.epoch;
      for (const f of this.feeder.feeds) f.resetTo(v.purgedSeq);
      this.front.control.resetLocal(v.state, (err) => {
        if (err !== null) this.log.error({ kind: 'cluster.reset_failed', err });
        this.feeder.versionInstalled();
        done?.();
      });
      return;
    }
    if (v.state.version > this.front.version) {
      // The front compiles the version in slices first (front.ts install): told once it is in place.
      this.front.control.install(v.state, v.renames, () => {
        this.feeder.versionInstalled();
        done?.();
      });
      return;
    }
    done?.();
  }

  async #read(): Promise<{ value: RegistryValue; revision: number }> {
    const e = await this.nats.meta.get(META_REGISTRY_KEY);
    if (e === null || e.operation !== 'PUT') return { value: { state: EMPTY_REGISTRY, renames: [], epoch: 0, purgedSeq: 0 }, revision: 0 };
    return { value: e.json<RegistryValue>(), revision: e.revision };
  }

  async #cas(revision: number, value: RegistryValue): Promise<boolean> {
    const data = JSON.stringify(value);
    try {
      if (revision === 0) await this.nats.meta.create(META_REGISTRY_KEY, data);
      else await this.nats.meta.update(META_REGISTRY_KEY, data, revision);
      return true;
    } catch (err) {
      if (/wrong last sequence|key exists/i.test(String((err as Error)?.message))) return false;
      throw err;
    }
  }

  register(payload: unknown, reply: Reply): void {
    void this.#register(payload, reply).catch((err: unknown) => {
      this.front.fail(reply, { code: 'wal_unavailable', detail: { message: 'the registry bucket is unreachable; the registry is unchanged', reason: String((err as Error)?.message ?? err) } });
    });
  }

  async #register(payload: unknown, reply: Reply): Promise<void> {
    for (let attempt = 0; attempt < CLUSTER_REGISTRY_CAS_ATTEMPTS; attempt++) {
      const { value, revision } = await this.#read();
      const res = await runCoordinator(this.front.coordinator, { kind: 'register_on', base: value.state, payload });
      if (!res.ok) { this.front.fail(reply, res.error); return; }
      if (res.changed) {
        const next: RegistryValue = { state: res.state, renames: res.renames, epoch: value.epoch, purgedSeq: value.purgedSeq };
        if (!(await this.#cas(revision, next))) continue; // another node changed it first: run again on its value
        await new Promise<void>((installed) => this.#adopt(next, installed));
        this.log.info({ kind: 'registry.registered', registry_version: res.state.version });
      }
      this.front.metrics.registerTotal++;
      reply.ok(JSON.stringify(res.body));
      return;
    }
    this.front.fail(reply, { code: 'wal_unavailable', detail: { message: `the registry changed under ${CLUSTER_REGISTRY_CAS_ATTEMPTS} attempts in a row; retry` } });
  }

  reset(reply: Reply): void {
    void this.#reset().then((version) => {
      this.front.metrics.resetTotal++;
      reply.ok(JSON.stringify({ status: 'ok', reset: true, registry_version: version }));
    }, (err: unknown) => {
      this.front.fail(reply, { code: 'wal_truncate_failed', detail: { message: 'cluster reset failed; cluster state is undefined until a reset succeeds', reason: String((err as Error)?.message ?? err) } });
    });
  }

  async #reset(): Promise<number> {
    for (let attempt = 0; attempt < CLUSTER_REGISTRY_CAS_ATTEMPTS; attempt++) {
      const { value, revision } = await this.#read();
      const info = await this.nats.jsm.streams.info(EVENT_STREAM);
      const purgedSeq = info.state.last_seq;
      const version = value.state.version + 1;
      const next: RegistryValue = { state: { version, nodes: [] }, renames: [], epoch: version, purgedSeq };
      if (!(await this.#cas(revision, next))) continue;
      await this.nats.jsm.streams.purge(EVENT_STREAM);
      // Every live node (this one too) clears its state before the reset is answered.
      const nodes = [...this.#membership().live.keys()];
      await Promise.all(nodes.map((id) => this.nats.nc.request(resetSubject(id), JSON.stringify(next), { timeout: CLUSTER_RESET_TIMEOUT_MS }).catch((err: unknown) => {
        this.log.warn({ kind: 'cluster.reset_unconfirmed', node: id, err: String((err as Error)?.message ?? err) });
      })));
      this.log.info({ kind: 'registry.reset', registry_version: version });
      return version;
    }
    throw new Error(`the registry changed under ${CLUSTER_REGISTRY_CAS_ATTEMPTS} attempts in a row`);
  }

  #onResetRequest(msg: NatsRequest): void {
    let v: RegistryValue;
    try { v = msg.json<RegistryValue>(); } catch { return; }
    if (v.epoch <= this.#epochApplied) { msg.respond('ok'); return; }
    this.#adopt(v, () => msg.respond('ok'));
  }

  stop(): void {
    this.#stopped = true;
    this.#resetSub?.unsubscribe();
  }
}
