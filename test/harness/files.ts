/** What a data dir holds on disk, for tests that check that bytes are gone (a forgotten entity's key). */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The files under `dir` (recursively) whose bytes contain `text`'s UTF-8 bytes. */
export function filesHolding(dir: string, text: string): string[] {
  const needle = Buffer.from(text);
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (readFileSync(p).includes(needle)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

/** Polls `fn` every 50 ms until it returns something other than undefined; throws after `ms`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
