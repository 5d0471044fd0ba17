/**
 * Nesting depth of JSON, checked iteratively. A parsed value is copied to
 * another thread by structured clone, which recurses: a payload nested thousands
 * deep would overflow the stack there. Register payloads are checked first.
 * Request bodies are also checked as text before JSON.parse (jsonTextDepthExceeds),
 * so a body a million levels deep costs one linear scan, not a parse, and cannot
 * overflow JSON.parse's stack either.
 * The limit itself is in limits.ts.
 */
import { JSON_DEPTH_MAX as DEPTH_MAX } from '../limits';

/**
 * The limit (limits.ts) under this module's name for its callers: a value, not a
 * re-export, whose getter would make every read of this module's exports slow.
 */
export const JSON_DEPTH_MAX = DEPTH_MAX;

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

/**
 * True when JSON text opens more than `max` nested arrays/objects, counted as
 * jsonDepthExceeds counts them. One pass, no allocation; string contents (with
 * their escapes) are skipped with indexOf. Text that is not JSON is not judged:
 * JSON.parse says what is wrong with it.
 */
export function jsonTextDepthExceeds(text: string, max: number = JSON_DEPTH_MAX): boolean {
  const n = text.length;
  if (n <= max) return false; // depth d needs d opening brackets
  let depth = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Closing quote: the next '"' not escaped by an odd run of backslashes.
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q < 0) return false;
        let b = q - 1;
        while (text.charCodeAt(b) === 0x5c) b--;
        i = q;
        if ((q - 1 - b) % 2 === 0) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}
