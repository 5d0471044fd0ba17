/**
 * Rows travel from the front to the shards, and into the WAL, as the push
 * envelope text exactly as it arrived (`{"event":..,"data":{..}}`): a string is
 * far cheaper to hand to another thread than an object, and the WAL needs text
 * anyway. The shard parses it again and applies the same normalisation as push
 * validation (datetime strings become epoch ms); the front already validated it.
 */
import type { Row } from '../types';

export function rowFromEnvelope(text: string, datetimeFields: readonly string[]): Row | null {
  let env: { data?: unknown; body?: unknown };
  try {
    env = JSON.parse(text);
  } catch {
    return null;
  }
  const row = (env.data !== undefined ? env.data : env.body) as Row | undefined;
  if (typeof row !== 'object' || row === null) return null;
  for (let i = 0; i < datetimeFields.length; i++) {
    const v = row[datetimeFields[i]];
    if (typeof v === 'string') row[datetimeFields[i]] = Date.parse(v);
  }
  return row;
}
