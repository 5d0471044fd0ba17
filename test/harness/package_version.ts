/** The package.json version, read independently of the server's own reader (src/version.ts). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// Compiled to dist/test/harness: the repo root is three levels up.
export const PACKAGE_VERSION: string = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')).version;
