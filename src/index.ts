/**
 * `require('streamfeat')`: the server API, for embedding the server in another
 * Node process or a test rig. The command line is src/cli.ts (`streamfeat`);
 * the client library is `streamfeat/client` (or the standalone
 * `streamfeat-client` package, see docs/operations.md).
 *
 *   const { parseServeArgs, startServer } = require('streamfeat');
 *   const server = await startServer(parseServeArgs(['--memory-only', '--http-addr', '127.0.0.1:0'], process.env));
 *   ...
 *   await server.close();
 */
export { startServer, Lifecycle } from './server';
export type { RunningServer } from './server';
export { parseServeArgs, resolveServerConfig, CONFIG_SCHEMA, SERVER_ENV, ConfigError } from './config';
export type { ServerConfig, ClusterConfig, HostPort, WalSyncMode, HttpEngine } from './config';
export type { Readiness, Phase } from './lifecycle';
export { createLogger } from './log';
export type { Logger } from './log';
export { VERSION } from './version';
