/** Register payloads shared by black-box tests. */
export const TXN_EVENT = {
  kind: 'event',
  name: 'Txn',
  schema: { fields: { user: 'str', card: 'str', amount: 'f64', country: 'str', n: 'i64' }, optional_fields: ['country', 'n'] },
};

export const USER_TABLE = {
  kind: 'table',
  name: 'UserStats',
  upstreams: ['Txn'],
  key: ['user'],
  agg: {
    cnt: { op: 'count', params: { window: '1h' } },
    total: { op: 'sum', params: { field: 'amount', window: 'forever' } },
    big: { op: 'count', params: { window: '1h', where: "amount > 100 and country == 'US'" } },
  },
};

export const CARD_USER_TABLE = {
  kind: 'table',
  name: 'CardUser',
  upstreams: ['Txn'],
  key: ['card', 'user'],
  agg: { cnt: { op: 'count', params: {} } },
};

export function basicNodes(): unknown[] {
  return [TXN_EVENT, USER_TABLE, CARD_USER_TABLE];
}
