/**
 * The get path without a transport: a table name and an optional feature list
 * resolved under a compiled registry into the table plan and feature indexes the
 * shard reads by (spec 4.3 errors: unknown_table, feature_not_in_table,
 * feature_not_found). The front (front.ts) and the offline tools (training/)
 * resolve with this one function, so a replayed or exported row names the same
 * features in the same order as a served one.
 */
import { SfError } from '../errors';
import type { CompiledRegistry, TablePlan } from '../registry/compile';
import { unknownNameHint } from '../util/near_name';

export interface ResolvedFeatures {
  table: TablePlan;
  /** The names asked for, without repeats, in the order asked; null = every feature. */
  features: string[] | null;
  /** FeaturePlan.index of each of `features`; null = every feature. */
  f: number[] | null;
}

/** Resolves `tableName` and `featuresRaw` (the request's `features`) under `reg`; `path` prefixes error paths. Throws SfError. */
export function resolveFeatures(reg: CompiledRegistry, tableName: string, featuresRaw: unknown, path: string): ResolvedFeatures {
  const at = `${path}${path ? '.' : ''}`;
  const table: TablePlan | undefined = reg.tables.get(tableName);
  if (table === undefined) throw new SfError('unknown_table', `table ${JSON.stringify(tableName)} is not registered${unknownNameHint(tableName, reg.tables.keys(), 'registered tables', 'no tables are registered')}`, { path: `${at}table` });
  let features: string[] | null = null;
  let f: number[] | null = null;
  if (featuresRaw !== undefined && featuresRaw !== null) {
    if (!Array.isArray(featuresRaw) || featuresRaw.some((x) => typeof x !== 'string')) {
      throw new SfError('unsupported_request_shape', 'features must be an array of feature names', { path: `${at}features` });
    }
    features = [...new Set(featuresRaw as string[])]; // a name asked twice is answered once
    f = new Array<number>(features.length);
    for (let i = 0; i < features.length; i++) {
      const name = features[i];
      const j = table.featureIndex.get(name);
      if (j !== undefined) { f[i] = j; continue; }
      const owners = reg.featureTables.get(name);
      if (owners !== undefined) throw new SfError('feature_not_in_table', `feature ${JSON.stringify(name)} is not in table ${table.name} (it is in ${owners.join(', ')})`, { path: `${at}features` });
      throw new SfError('feature_not_found', `feature ${JSON.stringify(name)} is not registered${unknownNameHint(name, table.featureIndex.keys(), `features of ${table.name}`)}`, { path: `${at}features` });
    }
  }
  return { table, features, f };
}
