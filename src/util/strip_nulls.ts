/**
 * Register payloads: an object member whose value is JSON `null` means "not set"
 * (docs/registry.md), as clients written for the peer send every optional
 * setting, set or not (`"dedupe_key": null`, `"keep_events_for_ms": null`).
 * Dropping those members before parsing gives one rule for every optional field,
 * and the stored node is the same whether a client sent `null` or left the key
 * out (re-sending it is `unchanged`). Array elements are kept: there `null` is a
 * value. Recursion is bounded: payloads deeper than JSON_DEPTH_MAX are rejected
 * before they get here.
 */
export function stripNullMembers(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) return v.map(stripNullMembers);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    // defineProperty, not assignment: a member named "__proto__" must stay an own
    // member (and be rejected as a reserved name), not become the prototype.
    if (x !== null) Object.defineProperty(out, k, { value: stripNullMembers(x), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
