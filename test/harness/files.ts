/** Every file under `dir` (recursively) whose name ends with `ending`. */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export function filesUnder(dir: string, ending: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) filesUnder(p, ending, out);
    else if (name.endsWith(ending)) out.push(p);
  }
  return out;
}
