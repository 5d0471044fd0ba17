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
import { runCoordinator } from '../protocol/coordinator_calls';
import type { DecodedRegistryValue } from '../protocol/messages';
import { decodeWire, stateWire } from '../registry/wire';
import { encodeRegistryValue, type RegistryValue } from './registry_value';
import { CLUSTER_CONSUMER_RETRY_MS, CLUSTER_REGISTRY_CAS_ATTEMPTS, CLUSTER_RESET_TIMEOUT_MS } from '../limits';
import { EVENT_STREAM, META_REGISTRY_KEY, resetSubject } from './names';
import type { NatsHandles, NatsRequest } from './nats';
import type { Feeder } from './feed';
import type { Ingest } from './ingest';
import type { Membership } from './membership';

export class ClusterRegistry {
  #stopped = false;
  #epochApplied = 0;
  #resetSub: { unsubscribe(): void } | null = null;

  constructor(readonly front: Front, readonly nats: NatsHandles, readonly feeder: Feeder, readonly ingest: Ingest, readonly log: Logger) {}

  async start(membership: () => Membership, selfId: string): Promise<void> {
    const e = await this.nats.meta.get(META_REGISTRY_KEY);
    if (e !== null && e.operation === 'PUT') this.#adopt(await this.#decode(e.value));
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
          // Decoded on the coordinator thread, in order: the next value waits for this one.
          if (e.operation === 'PUT') this.#adopt(await this.#decode(e.value));
        }
      } catch (err) {
        if (!this.#stopped) this.log.warn({ kind: 'cluster.registry_watch_failed', err: String((err as Error)?.message ?? err) });
      }
      if (!this.#stopped) await new Promise((r) => setTimeout(r, CLUSTER_CONSUMER_RETRY_MS));
    }
  }

  /**
   * A bucket value as the front uses it: parsed and turned into a wire on the
   * coordinator thread, since the value holds the whole registry (megabytes at the
   * limits) and parsing it here would stall the data plane.
   */
  #decode(bytes: Uint8Array): Promise<DecodedRegistryValue> {
    return runCoordinator(this.front.coordinator, { kind: 'decode_value', bytes });
  }

  /** Installs a value newer than the front's registry (a reset value clears this node first). */
  #adopt(v: DecodedRegistryValue, done?: () => void): void {
    this.ingest.epoch = Math.max(this.ingest.epoch, v.epoch);
    if (v.epoch > this.#epochApplied) {
      this.#epochApplied = v.epoch;
      for (const f of this.feeder.feeds) f.resetTo(v.purgedSeq);
      // A reset value has no nodes: decoding it costs nothing.
      this.front.control.resetLocal(decodeWire(v.wire), (err) => {
        if (err !== null) this.log.error({ kind: 'cluster.reset_failed', err });
        this.feeder.versionInstalled();
        done?.();
      });
      return;
    }
    if (v.wire.version > this.front.version) {
      // The front compiles the version in slices first (front.ts install): told once it is in place.
      this.front.control.install(v.wire, v.renames, () => {
        this.feeder.versionInstalled();
        done?.();
      });
      return;
    }
    done?.();
  }

  /** The bucket's value as stored (bytes, not parsed here) and its revision (0: none yet). */
  async #read(): Promise<{ bytes: Uint8Array | null; revision: number }> {
    const e = await this.nats.meta.get(META_REGISTRY_KEY);
    if (e === null || e.operation !== 'PUT') return { bytes: null, revision: 0 };
    return { bytes: e.value, revision: e.revision };
  }

  async #cas(revision: number, data: Uint8Array): Promise<boolean> {
    try {
      if (revision === 0) await this.nats.meta.create(META_REGISTRY_KEY, data);
      else await this.nats.meta.update(META_REGISTRY_KEY, data, revision);
      return true;
    } catch (err) {
      if (/wrong last sequence|key exists/i.test(String((err as Error)?.message))) return false;
      throw err;
    }
  }

  /** `text`: the register body, depth-checked, not parsed (the coordinator parses it). */
  register(text: string, reply: Reply): void {
    void this.#register(text, reply).catch((err: unknown) => {
      this.front.fail(reply, { code: 'wal_unavailable', detail: { message: 'the registry bucket is unreachable; the registry is unchanged', reason: String((err as Error)?.message ?? err) } });
    });
  }

  async #register(text: string, reply: Reply): Promise<void> {
    for (let attempt = 0; attempt < CLUSTER_REGISTRY_CAS_ATTEMPTS; attempt++) {
      const { bytes, revision } = await this.#read();
      const res = await runCoordinator(this.front.coordinator, { kind: 'register_on', base: bytes, text });
      if (!res.ok) { this.front.fail(reply, res.error); return; }
      if (res.wire !== null && res.value !== null) {
        if (!(await this.#cas(revision, res.value))) continue; // another node changed it first: run again on its value
        const installed = { wire: res.wire, renames: res.renames, epoch: res.epoch, purgedSeq: res.purgedSeq };
        await new Promise<void>((done) => this.#adopt(installed, done));
        this.log.info({ kind: 'registry.registered', registry_version: res.wire.version });
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
      const { bytes, revision } = await this.#read();
      const info = await this.nats.jsm.streams.info(EVENT_STREAM);
      const purgedSeq = info.state.last_seq;
      const version = (bytes === null ? 0 : (await this.#decode(bytes)).wire.version) + 1;
      const next: RegistryValue = { state: { version, nodes: [] }, renames: [], epoch: version, purgedSeq };
      if (!(await this.#cas(revision, encodeRegistryValue(next)))) continue;
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
    // A reset value has no nodes (#reset): small enough to parse here.
    this.#adopt({ wire: stateWire(v.state), renames: v.renames, epoch: v.epoch, purgedSeq: v.purgedSeq }, () => msg.respond('ok'));
  }

  stop(): void {
    this.#stopped = true;
    this.#resetSub?.unsubscribe();
  }
}
