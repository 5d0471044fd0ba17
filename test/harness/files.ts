/** Files under a directory, by name or by what they hold (a forgotten entity's key must be in none). */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Every file under `dir` (recursively) whose name ends with `ending`. */
export function filesUnder(dir: string, ending: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) filesUnder(p, ending, out);
    else if (name.endsWith(ending)) out.push(p);
  }
  return out;
}

/** The files under `dir` (recursively) whose bytes contain `text`'s UTF-8 bytes. */
export function filesHolding(dir: string, text: string): string[] {
  const needle = Buffer.from(text);
  return filesUnder(dir, '').filter((p) => readFileSync(p).includes(needle));
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
