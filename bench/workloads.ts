/**
 * The three workloads of the load scenarios (small, medium, fraud): what gets registered
 * and how request bodies are made. Event fields are described as data
 * (FieldGen) so that one description drives both the JS generators (the
 * autocannon and TCP/HTTP load clients) and the Lua generator of wrk.ts.
 */
import { KeyDraw, Rng, type KeyDist } from './keys';

/** How one event field gets its value from the drawn entity index k. */
export type FieldGen =
  /** prefix + k: the entity the push is about. */
  | { name: string; kind: 'key'; prefix: string }
  /** prefix + ((floor(k / div) * mul + rand(spread)) mod (entities * modPerEntity)):
   * entities tied to k (a user's two cards, a device shared by three users). */
  | { name: string; kind: 'derived'; prefix: string; div: number; mul: number; spread: number; modPerEntity: number }
  /** prefix + an independent draw (same distribution) over entities / per: e.g. merchants. */
  | { name: string; kind: 'draw'; prefix: string; per: number }
  /** A money amount in [lo, hi) with two decimals. */
  | { name: string; kind: 'money'; lo: number; hi: number }
  /** One of a few strings, uniformly. */
  | { name: string; kind: 'choice'; values: string[] };

export interface Workload {
  name: string;
  description: string;
  /** The POST /register body. */
  register: { nodes: unknown[] };
  event: string;
  fields: FieldGen[];
  /** The table /get and /batch_get read (its key is the 'key' field). */
  getTable: string;
  /** Features over all tables, and in getTable's row. */
  featureCount: number;
  rowFeatureCount: number;
}

type Agg = Record<string, { op: string; params?: Record<string, unknown> }>;

function table(name: string, event: string, key: string, agg: Agg): Record<string, unknown> {
  return { kind: 'table', name, upstreams: [event], key: [key], agg };
}

const SMALL: Workload = {
  name: 'small',
  description: 'one event (Click{user}), one table, one lifetime count',
  register: {
    nodes: [
      { kind: 'event', name: 'Click', schema: { fields: { user: 'str' }, optional_fields: [] } },
      table('UserClicks', 'Click', 'user', { clicks: { op: 'count' } }),
    ],
  },
  event: 'Click',
  fields: [{ name: 'user', kind: 'key', prefix: 'u' }],
  getTable: 'UserClicks',
  featureCount: 1,
  rowFeatureCount: 1,
};

const MEDIUM: Workload = {
  name: 'medium',
  description: 'one event (Txn{user,amount,merchant}), one table, 5 windowed features incl. n_unique',
  register: {
    nodes: [
      { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64', merchant: 'str' }, optional_fields: [] } },
      table('UserStats', 'Txn', 'user', {
        n_1h: { op: 'count', params: { window: '1h' } },
        spend_1h: { op: 'sum', params: { field: 'amount', window: '1h' } },
        avg_24h: { op: 'mean', params: { field: 'amount', window: '24h' } },
        max_24h: { op: 'max', params: { field: 'amount', window: '24h' } },
        merchants_24h: { op: 'n_unique', params: { field: 'merchant', window: '24h' } },
      }),
    ],
  },
  event: 'Txn',
  fields: [
    { name: 'user', kind: 'key', prefix: 'u' },
    { name: 'amount', kind: 'money', lo: 1, hi: 500 },
    { name: 'merchant', kind: 'draw', prefix: 'm', per: 10 },
  ],
  getTable: 'UserStats',
  featureCount: 5,
  rowFeatureCount: 5,
};

const w = (field: string, window: string): Record<string, unknown> => ({ field, window });

/** 30 features on the user row: the "/get of a 30-feature row" target reads it. */
const FRAUD_USER: Agg = {
  n_1h: { op: 'count', params: { window: '1h' } },
  n_24h: { op: 'count', params: { window: '24h' } },
  n_7d: { op: 'count', params: { window: '7d' } },
  spend_1h: { op: 'sum', params: w('amount', '1h') },
  spend_24h: { op: 'sum', params: w('amount', '24h') },
  spend_7d: { op: 'sum', params: w('amount', '7d') },
  avg_24h: { op: 'mean', params: w('amount', '24h') },
  max_24h: { op: 'max', params: w('amount', '24h') },
  min_24h: { op: 'min', params: w('amount', '24h') },
  std_24h: { op: 'std', params: w('amount', '24h') },
  zscore_24h: { op: 'z_score', params: w('amount', '24h') },
  merchants_24h: { op: 'n_unique', params: w('merchant', '24h') },
  devices_7d: { op: 'n_unique', params: w('device', '7d') },
  cards_7d: { op: 'n_unique', params: w('card', '7d') },
  countries_24h: { op: 'n_unique', params: w('country', '24h') },
  p95_24h: { op: 'quantile', params: { ...w('amount', '24h'), q: 0.95 } },
  top_merchants_24h: { op: 'top_k', params: { ...w('merchant', '24h'), k: 5 } },
  top_mcc_7d: { op: 'top_k', params: { ...w('mcc', '7d'), k: 5 } },
  mcc_entropy_24h: { op: 'entropy', params: w('mcc', '24h') },
  ewma_amount: { op: 'ewma', params: { field: 'amount', half_life: '1h' } },
  ewz_amount: { op: 'ew_zscore', params: { field: 'amount', half_life: '6h' } },
  decayed_spend: { op: 'decayed_sum', params: { field: 'amount', half_life: '6h' } },
  rate_5m: { op: 'rate', params: { window: '5m' } },
  velocity_1h: { op: 'velocity', params: w('amount', '1h') },
  last_amounts: { op: 'last_n', params: { field: 'amount', n: 5 } },
  last_merchant: { op: 'last', params: { field: 'merchant' } },
  first_seen: { op: 'first_seen' },
  last_seen: { op: 'last_seen' },
  inter_arrival: { op: 'inter_arrival_stats' },
  seen_merchant: { op: 'bloom_member', params: { field: 'merchant', capacity: 256 } },
};

const FRAUD: Workload = {
  name: 'fraud',
  description: 'one Txn event feeding 4 tables keyed by user (30 features), card, merchant, device (4 each): windows, sketches, decay',
  register: {
    nodes: [
      {
        kind: 'event',
        name: 'Txn',
        schema: {
          fields: { user: 'str', card: 'str', merchant: 'str', device: 'str', amount: 'f64', mcc: 'str', country: 'str' },
          optional_fields: [],
        },
      },
      table('UserTxn', 'Txn', 'user', FRAUD_USER),
      table('CardTxn', 'Txn', 'card', {
        n_1h: { op: 'count', params: { window: '1h' } },
        spend_24h: { op: 'sum', params: w('amount', '24h') },
        merchants_24h: { op: 'n_unique', params: w('merchant', '24h') },
        max_1h: { op: 'max', params: w('amount', '1h') },
      }),
      table('MerchantTxn', 'Txn', 'merchant', {
        n_1h: { op: 'count', params: { window: '1h' } },
        spend_1h: { op: 'sum', params: w('amount', '1h') },
        users_1h: { op: 'n_unique', params: w('user', '1h') },
        p99_24h: { op: 'quantile', params: { ...w('amount', '24h'), q: 0.99 } },
      }),
      table('DeviceTxn', 'Txn', 'device', {
        n_1h: { op: 'count', params: { window: '1h' } },
        users_24h: { op: 'n_unique', params: w('user', '24h') },
        cards_24h: { op: 'n_unique', params: w('card', '24h') },
        last_seen: { op: 'last_seen' },
      }),
    ],
  },
  event: 'Txn',
  fields: [
    { name: 'user', kind: 'key', prefix: 'u' },
    // Two cards per user; a device shared by three consecutive users.
    { name: 'card', kind: 'derived', prefix: 'c', div: 1, mul: 2, spread: 2, modPerEntity: 2 },
    { name: 'merchant', kind: 'draw', prefix: 'm', per: 10 },
    { name: 'device', kind: 'derived', prefix: 'd', div: 3, mul: 1, spread: 1, modPerEntity: 1 },
    { name: 'amount', kind: 'money', lo: 1, hi: 2000 },
    { name: 'mcc', kind: 'choice', values: ['5411', '5812', '5999', '4111', '5732', '7995', '6011', '5541'] },
    { name: 'country', kind: 'choice', values: ['US', 'GB', 'DE', 'FR', 'BR', 'IN', 'NG', 'JP'] },
  ],
  getTable: 'UserTxn',
  featureCount: 42,
  rowFeatureCount: 30,
};

export const WORKLOADS: Readonly<Record<string, Workload>> = { small: SMALL, medium: MEDIUM, fraud: FRAUD };

export function workloadNamed(name: string): Workload {
  const wl = WORKLOADS[name];
  if (!wl) throw new Error(`unknown workload '${name}' (one of ${Object.keys(WORKLOADS).join(', ')})`);
  return wl;
}

/** Keys per /batch_get in the batch-get scenario (its target is on 100 keys). */
export const BATCH_KEYS = 100;

/**
 * Makes request bodies for one workload. Push keys range over `entities`;
 * get keys over `getEntities` (the preloaded prefix, so that gets hit rows).
 */
export class BodyGen {
  readonly wl: Workload;
  readonly entities: number;
  readonly #rng: Rng;
  readonly #pushKey: KeyDraw;
  readonly #getKey: KeyDraw;
  readonly #draws: Map<number, KeyDraw>;
  readonly #keyPrefix: string;

  constructor(wl: Workload, dist: KeyDist, entities: number, getEntities: number, seed: number) {
    this.wl = wl;
    this.entities = entities;
    this.#rng = new Rng(seed);
    this.#pushKey = new KeyDraw(dist, entities, this.#rng);
    this.#getKey = new KeyDraw(dist, Math.max(1, getEntities), this.#rng);
    this.#draws = new Map();
    const keyField = wl.fields.find((x) => x.kind === 'key');
    if (!keyField || keyField.kind !== 'key') throw new Error(`workload ${wl.name} has no key field`);
    this.#keyPrefix = keyField.prefix;
    for (const f of wl.fields) {
      if (f.kind === 'draw' && !this.#draws.has(f.per)) {
        this.#draws.set(f.per, new KeyDraw(dist, Math.max(1, Math.floor(entities / f.per)), this.#rng));
      }
    }
  }

  /** A push body about entity k (a fresh draw when k is omitted). */
  push(k: number = this.#pushKey.next()): string {
    let s = `{"event":"${this.wl.event}","data":{`;
    const fields = this.wl.fields;
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i];
      if (i > 0) s += ',';
      s += `"${f.name}":`;
      switch (f.kind) {
        case 'key':
          s += `"${f.prefix}${k}"`;
          break;
        case 'derived': {
          const v = (Math.floor(k / f.div) * f.mul + this.#rng.int(f.spread)) % (this.entities * f.modPerEntity);
          s += `"${f.prefix}${v}"`;
          break;
        }
        case 'draw':
          s += `"${f.prefix}${this.#draws.get(f.per)!.next()}"`;
          break;
        case 'money':
          s += (f.lo + this.#rng.next() * (f.hi - f.lo)).toFixed(2);
          break;
        case 'choice':
          s += `"${f.values[this.#rng.int(f.values.length)]}"`;
          break;
      }
    }
    return s + '}}';
  }

  keyOf(k: number): string {
    return this.#keyPrefix + k;
  }

  get(k: number = this.#getKey.next()): string {
    return `{"table":"${this.wl.getTable}","key":"${this.keyOf(k)}"}`;
  }

  batchGet(n: number = BATCH_KEYS): string {
    let s = '{"requests":[';
    for (let i = 0; i < n; i++) {
      if (i > 0) s += ',';
      s += `{"table":"${this.wl.getTable}","key":"${this.keyOf(this.#getKey.next())}"}`;
    }
    return s + ']}';
  }
}
