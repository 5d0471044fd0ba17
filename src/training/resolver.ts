/**
 * Feature resolution of the offline tools: (table, features) under a compiled
 * registry version to the indexes a row is read by, through the front's own
 * resolveFeatures (front/get_core.ts), once per version, table and feature list.
 */
import { SfError } from '../errors';
import { resolveFeatures, type ResolvedFeatures } from '../front/get_core';
import type { ErrorPayload } from '../protocol/messages';
import type { CompiledRegistry } from '../registry/compile';

export class FeatureResolver {
  readonly #byVersion = new WeakMap<CompiledRegistry, Map<string, ResolvedFeatures | ErrorPayload>>();

  /** `features` null: every feature. An unknown table or feature is the error a get would get. */
  resolve(reg: CompiledRegistry, table: string, features: readonly string[] | null): ResolvedFeatures | ErrorPayload {
    let m = this.#byVersion.get(reg);
    if (m === undefined) { m = new Map(); this.#byVersion.set(reg, m); }
    const k = features === null ? table : `${table}\u0000${features.join('\u0000')}`;
    let r = m.get(k);
    if (r === undefined) {
      try {
        r = resolveFeatures(reg, table, features, '');
      } catch (err) {
        if (!(err instanceof SfError)) throw err;
        r = { code: err.code, detail: err.detail };
      }
      m.set(k, r);
    }
    return r;
  }
}
