/**
 * streamfeat/client: the TypeScript client library (package export `./client`).
 * It depends only on the shared frame codec, value types and error-code table,
 * never on server code, so it can ship on its own. Guide: docs/client.md.
 */
export { Client, REQUEST_TIMEOUT_MS_DEFAULT } from './client';
export type { BatchGetEntry, BatchGetResult, CallOptions, ClientOptions, PushOptions, RegisterOptions, RetryEvent } from './client';

export { StreamfeatError, CLIENT_ERROR_CODES, CONNECTION_ERROR_CODES, RETRYABLE_SERVER_CODES } from './errors';
export type { ClientErrorCode, StreamfeatErrorCode, ValidationItem } from './errors';

export { event, derive, table, ref, classForm, TableClass, Stream, Chain, EventSource, DerivedEvent, Table, Ref } from './builders';
export type { EventSettings, TableSpec, NamedSource, Features, FeatureRowOf } from './builders';
export type { AggValue, ColumnOf, ColumnValue, EventRow, FieldValue, KeyOf, PushData, RowOf, KeyOfTable } from './typed';

export { agg, Agg, AGG_OPS, AGG_ALIASES } from './aggs';
export type { AggParams, Duration } from './aggs';

export { col, lit, raw, fn, and, or, not, isnull, cast, Expr } from './expr';
export type { CastTarget, ExprInput, LiteralValue } from './expr';

export { optional, int, wireType, str, f64, i64, bool, bytes, datetime } from './schema';
export type { FieldDecl, FieldSpec, FieldsSpec, NativeType } from './schema';

export { buildNodes } from './register_payload';
export type { Registrable } from './register_payload';

export { RETRY_ATTEMPTS_DEFAULT, RETRY_BASE_DELAY_MS_DEFAULT, RETRY_MAX_DELAY_MS_DEFAULT } from './retry';
export type { RetryOptions } from './retry';

export { toWireData, toWireKey } from './values';
export type { KeyInput, NativeData, NativeValue } from './values';

export type {
  DiffItem,
  FeatureRow,
  GetRequest,
  KeyValue,
  PingReply,
  PushAck,
  RegisterApplied,
  RegisterWarning,
  RegisterDiff,
  RegisterDryRun,
  RegisterResult,
  RegistryReply,
  ResetReply,
  WireAggSpec,
  WireChainOp,
  WireDerivedEventNode,
  WireEventNode,
  WireNode,
  WireSchema,
  WireTableNode,
} from './wire';
