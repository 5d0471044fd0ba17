/**
 * The aggregation ops: the catalogue (register-time validation and compile) and
 * the state interface the shard drives. See docs/ops.md for every op.
 */
export { compileAgg, OP_NAMES, canonicalOp, aggSignature, type AggContext } from './catalogue';
export { parseDuration } from './duration';
export type { OpFactory, OpState } from './op';
