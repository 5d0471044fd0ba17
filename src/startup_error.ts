/**
 * A reason the server cannot start that the operator fixes (data dir in use or
 * written with another shard count, a port taken, an unreadable token file). The
 * CLI prints the message and exits with code 2, without a stack trace.
 */
export class StartupError extends Error {}
