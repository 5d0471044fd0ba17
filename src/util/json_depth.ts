/**
 * Nesting depth of parsed JSON, checked iteratively. A parsed value is copied to
 * another thread by structured clone, which recurses: a payload nested thousands
 * deep would overflow the stack there. Register payloads are checked first.
 */
export const JSON_DEPTH_MAX = 64;

export function jsonDepthExceeds(v: unknown, max: number = JSON_DEPTH_MAX): boolean {
  const stack: Array<[unknown, number]> = [[v, 1]];
  while (stack.length > 0) {
    const [x, d] = stack.pop()!;
    if (typeof x !== 'object' || x === null) continue;
    if (d > max) return true;
    if (Array.isArray(x)) for (const y of x) stack.push([y, d + 1]);
    else for (const k in x) stack.push([(x as Record<string, unknown>)[k], d + 1]);
  }
  return false;
}
