/**
 * The push path without a transport: one envelope, checked and validated under a
 * compiled registry, its chains run and its keys built and routed (routing.ts
 * PushRoute). No reply, no socket, no clock, no LSN: the front (front.ts push)
 * answers what this refuses and then does dedupe, time, LSN and dispatch; the
 * offline engine (training/engine.ts) runs the same steps with the events' own
 * times and applies the PUSH records in process. One implementation of the rules
 * of spec 4.1 (rules 1-6) for both, so replayed rows cannot drift from served ones.
 *
 * One instance per caller (the front is one thread, and a push is checked and
 * routed in one synchronous step): the accepted push is left in `plan`, `row` and
 * `route`, read by the caller before the next accept(). Nothing is allocated for a
 * push that is accepted (the error objects are only made for refusals).
 */
import { SfError } from '../errors';
import type { CompiledRegistry, EventPlan } from '../registry/compile';
import type { ErrorPayload } from '../protocol/messages';
import type { Row } from '../types';
import { KEY_BYTES_MAX } from '../limits';
import { unknownNameHint } from '../util/near_name';
import { PushRoute } from './routing';
import { isObj } from '../util/plain_object';

/** Top-level keys of a push envelope; `body` is the peer's TCP name for `data` (docs/wire.md). */
const PUSH_ENVELOPE_KEYS = new Set(['event', 'data', 'body']);


function refusal(code: ErrorPayload['code'], message: string, path: string): ErrorPayload {
  return { code, detail: { message, path } };
}

export class PushCore {
  /** Chains, keys and target shards of the last accepted push (also the front's PUSH record writer). */
  readonly route = new PushRoute();
  /** The event plan and validated row of the last accepted push. */
  plan: EventPlan | null = null;
  row: Row | null = null;

  /**
   * Checks push envelope `body` under `reg` and routes it over `shards` shards: null
   * when accepted (then `plan`, `row` and `route` hold it), else the refusal the
   * push gets (spec 4.1 rules 1-6, and a key over KEY_BYTES_MAX). Throws only on a
   * bug (a non-coded error of the validator): the caller answers internal_error.
   */
  accept(reg: CompiledRegistry, body: unknown, shards: number): ErrorPayload | null {
    if (!isObj(body) || typeof body.event !== 'string') {
      return refusal('missing_event_name_in_body', 'body must be a JSON object with a string "event"', 'event');
    }
    const plan = reg.events.get(body.event);
    if (plan === undefined) {
      return refusal('event_not_found', `event ${JSON.stringify(body.event)} is not registered${unknownNameHint(body.event, reg.events.keys(), 'registered events', 'no events are registered')}`, 'event');
    }
    for (const k in body) {
      if (PUSH_ENVELOPE_KEYS.has(k)) continue;
      if (k === 'event_time' || k === 'event_time_ms') return refusal('unknown_field_event_time_v0', `${k} is not supported in v0 (the server stamps arrival time)`, k);
      return refusal('invalid_event', `unknown top-level key ${JSON.stringify(k)}; a push is {"event", "data"}`, k);
    }
    if (body.data !== undefined && body.body !== undefined) return refusal('invalid_event', 'send the fields in "data" or in its alias "body", not both', 'body');
    const data = body.data !== undefined ? body.data : body.body;
    if (data === undefined) return refusal('invalid_event', 'body needs a "data" object', 'data');
    let row: Row;
    try {
      row = plan.validator!.validate(data);
    } catch (err) {
      if (!(err instanceof SfError)) throw err;
      return { code: err.code, detail: err.detail };
    }
    // Keys of every table the push feeds: routing (several shards) and the key
    // size limit, checked before anything is recorded for this push.
    const route = this.route;
    const tooLong = route.route(plan, row, shards);
    if (tooLong >= 0) {
      const feed = plan.feeds[tooLong];
      const key = route.keys[tooLong]!;
      return refusal('invalid_event', `the key of table ${feed.table.name} would be ${Buffer.byteLength(key)} bytes; a key is at most ${KEY_BYTES_MAX} bytes (KEY_BYTES_MAX)`, `fields.${feed.table.keyFields.join(',')}`);
    }
    this.plan = plan;
    this.row = row;
    return null;
  }

  /** The dedupe value of the last accepted push (spec 4.1 rule 7), or null when it has none. */
  dedupeValue(): string | null {
    const plan = this.plan!;
    if (plan.dedupeField === null) return null;
    const v = this.row![plan.dedupeField];
    return v === null || v === undefined ? null : String(v);
  }
}
