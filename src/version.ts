/** The package version, from package.json (two levels above dist/src/, in the repo and in the published package). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const VERSION: string = (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
