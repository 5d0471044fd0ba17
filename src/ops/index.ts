/**
 * The aggregation ops: the catalogue (register-time validation and compile) and
 * the state interface the shard drives. See docs/ops.md for every op.
 */
export { compileAgg, OP_NAMES, canonicalOp, parseDuration, aggSignature, type AggContext } from './catalogue';
export type { OpFactory, OpState } from './op';
