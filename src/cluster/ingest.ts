/**
 * The cluster's log sink (docs/cluster.md "Ingest"): a validated push is
 * published to the event stream once per partition its keys reach, and acked
 * after JetStream acked every copy. ack_lsn is the highest stream sequence of its
 * copies.
 *
 * Dedupe across nodes: a push with a dedupe value carries a Nats-Msg-Id per copy
 * (reset epoch, hash of event and value, partition), so JetStream's dedupe window
 * drops a second copy whichever node publishes it and answers with the original
 * sequence. When every copy is such a duplicate, the push is a replay: its ack is
 * the original's (sequence, and registry version read back from the stream). A
 * JetStream match older than the event's own dedupe_window is not a replay: the
 * push is published again under an id chained to the match, so two nodes doing
 * that at once still dedupe against each other.
 */
import { createHash } from 'node:crypto';
import type { JetStreamClient, JetStreamManager, PubAck } from '@nats-io/jetstream';
import type { AcceptedPush } from '../front/cluster_hooks';
import type { Front } from '../front/front';
import { ackBody, PushCtx } from '../front/push';
import { CLUSTER_DEDUPE_CHAIN_MAX, CLUSTER_PUBLISH_TIMEOUT_MS } from '../limits';
import { hashKey, partitionOfHash } from '../registry/key';
import type { ErrorPayload } from '../protocol/messages';
import { decodeEvent, encodeEvent } from './event_wire';
import { EVENT_STREAM, eventSubject } from './names';
import type { NatsHandles } from './nats';

export class Ingest {
  #roundRobin = 0;
  /** Bumped by each cluster reset (the registry bucket carries it): message ids of before a reset never match after it. */
  epoch = 0;

  constructor(readonly front: Front, readonly nats: NatsHandles, readonly partitions: number) {}

  get js(): JetStreamClient { return this.nats.js; }
  get jsm(): JetStreamManager { return this.nats.jsm; }

  append(a: AcceptedPush): void {
    if (!this.nats.up) { this.#fail(a, 'NATS is unreachable; the push was not logged'); return; }
    const P = this.partitions;
    // partition -> key hashes of that partition (deduplicated; feeds are few).
    const parts = new Map<number, number[]>();
    const feeds = a.plan.feeds;
    const rows = feeds.length === 0 ? [] : a.plan.feedRows(a.row);
    for (let i = 0; i < feeds.length; i++) {
      const r = rows[i];
      if (r === null) continue;
      const key = feeds[i].key(r);
      if (key === null) continue;
      const h = hashKey(key);
      const p = partitionOfHash(h, P);
      const hs = parts.get(p);
      if (hs === undefined) parts.set(p, [h]);
      else if (!hs.includes(h)) hs.push(h);
    }
    // Every acked push is logged at least once, even one that reaches no key.
    if (parts.size === 0) parts.set(this.#roundRobin++ % P, []);
    const idBase = a.plan.dedupeField === null || (a.dedupe === null && a.dedupeValue === '') ? null : this.#idBase(a.plan.name, a.dedupeValue);
    void this.#publish(a, parts, idBase, 0);
  }

  #idBase(event: string, value: string): string {
    return `${this.epoch}.${createHash('sha256').update(event).update('\0').update(value).digest('base64url')}`;
  }

  async #publish(a: AcceptedPush, parts: Map<number, number[]>, idBase: string | null, chain: number): Promise<void> {
    let acks: PubAck[];
    try {
      acks = await Promise.all([...parts].map(([p, hashes]) => this.js.publish(eventSubject(p), encodeEvent(a.t, a.version, a.plan.name, hashes, a.text),
        idBase === null ? { timeout: CLUSTER_PUBLISH_TIMEOUT_MS } : { timeout: CLUSTER_PUBLISH_TIMEOUT_MS, msgID: `${idBase}.${p}` })));
    } catch (err) {
      this.#fail(a, `JetStream publish failed: ${(err as Error)?.message ?? err}`);
      return;
    }
    let seq = 0;
    let dups = 0;
    for (const k of acks) { if (k.seq > seq) seq = k.seq; if (k.duplicate) dups++; }
    if (idBase !== null && dups === acks.length) {
      // Another push (maybe through another node) already logged this dedupe value.
      let original;
      try {
        original = await this.jsm.streams.getMessage(EVENT_STREAM, { seq });
      } catch (err) {
        this.#fail(a, `reading the original of a deduped push failed: ${(err as Error)?.message ?? err}`);
        return;
      }
      const ev = original === null ? null : decodeEvent(original.data);
      if (ev !== null && ev.t + a.plan.dedupeWindowMs > Date.now()) { this.#replay(a, ackBody(seq, ev.v, true)); return; }
      if (chain < CLUSTER_DEDUPE_CHAIN_MAX) { void this.#publish(a, parts, `${idBase}~${seq}`, chain + 1); return; }
      this.#fail(a, 'dedupe id chain too long; retry');
      return;
    }
    this.front.pushDone(new PushCtx(seq, a.version, a.reply, 0, a.startMs, a.dedupe, a.plan.name, a.dedupeValue, this.front), null);
  }

  #replay(a: AcceptedPush, body: string): void {
    if (a.dedupe !== null) a.dedupe.settle(body);
    this.front.dedupe.replayed(a.reply, body);
  }

  #fail(a: AcceptedPush, message: string): void {
    const error: ErrorPayload = { code: 'wal_unavailable', detail: { message } };
    this.front.pushDone(new PushCtx(0, a.version, a.reply, 0, a.startMs, a.dedupe, a.plan.name, a.dedupeValue, this.front), error);
  }
}
