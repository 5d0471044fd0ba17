/**
 * Card-fraud features with streamfeat.
 *
 *   node dist/examples/card_fraud.js [http://127.0.0.1:8080 | tcp://127.0.0.1:8081]
 *
 * Registers a card-transaction event and two feature tables, pushes a stream of
 * transactions (one ordinary card, one card that is taken over: a burst of
 * online purchases from new devices in several countries), and after each push
 * reads the card's features and prints an approve / review / decline decision.
 */
import { Client, StreamfeatError, agg, col, event, table } from '../src/client';
import type { FeatureRow } from '../src/client';

// ---- Feature definitions ------------------------------------------------------

export const CardTxn = event(
  'CardTxn',
  {
    txn_id: String,
    card_id: String,
    amount: Number,
    merchant: String,
    country: String,
    device_id: String,
    channel: String, // 'pos' or 'online'
  },
  // A retried push of the same txn_id is answered with the first ack and counted once.
  { dedupe_key: 'txn_id', dedupe_window: '1d' },
);

export const OnlineTxn = CardTxn.filter(col('channel').eq('online')).as('OnlineCardTxn');

export const CardRisk = table('CardRisk', {
  from: CardTxn,
  key: 'card_id',
  features: {
    txn_10m: agg.count({ window: '10m' }),
    spend_1h: agg.sum('amount', { window: '1h' }),
    avg_amount_1d: agg.mean('amount', { window: '1d' }),
    countries_1h: agg.nUnique('country', { window: '1h' }),
    merchants_10m: agg.nUnique('merchant', { window: '10m' }),
    // Was the device of the latest transaction seen on this card before?
    known_device: agg.bloomMember('device_id', { capacity: 1000, fpr: 0.01 }),
    amount_z: agg.zScore('amount'),
  },
});

export const CardOnline = table('CardOnline', {
  from: OnlineTxn,
  key: 'card_id',
  features: { online_10m: agg.count({ window: '10m' }) },
});

// ---- Decision rules -----------------------------------------------------------

export type Decision = 'APPROVE' | 'REVIEW' | 'DECLINE';

export interface Scored {
  txn_id: string;
  card_id: string;
  amount: number;
  decision: Decision;
  score: number;
  reasons: string[];
}

interface Txn {
  txn_id: string;
  card_id: string;
  amount: number;
  merchant: string;
  country: string;
  device_id: string;
  channel: string;
}

const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

export function decide(txn: Txn, risk: FeatureRow, online: FeatureRow): Scored {
  const reasons: string[] = [];
  let score = 0;
  const rule = (hit: boolean, points: number, why: string): void => {
    if (hit) {
      score += points;
      reasons.push(why);
    }
  };
  const history = num(risk.txn_10m);
  rule(num(risk.countries_1h) >= 3, 3, `${num(risk.countries_1h)} countries in 1h`);
  rule(history > 5, 1, `${history} transactions in 10m`);
  rule(num(risk.merchants_10m) >= 4, 1, `${num(risk.merchants_10m)} merchants in 10m`);
  rule(history > 3 && risk.known_device === false, 2, 'device never seen on this card');
  const z = num(risk.amount_z);
  rule(history > 3 && z > 1.5, 2, `amount ${z.toFixed(1)} sd above the card's mean (avg ${num(risk.avg_amount_1d).toFixed(2)})`);
  rule(num(risk.spend_1h) > 2000, 1, `spent ${num(risk.spend_1h).toFixed(2)} in 1h`);
  rule(num(online.online_10m) > 3, 1, `${num(online.online_10m)} online purchases in 10m`);
  const decision: Decision = score >= 4 ? 'DECLINE' : score >= 2 ? 'REVIEW' : 'APPROVE';
  return { txn_id: txn.txn_id, card_id: txn.card_id, amount: txn.amount, decision, score, reasons };
}

// ---- The stream ---------------------------------------------------------------

function stream(run: string): Txn[] {
  const txns: Txn[] = [];
  let n = 0;
  const add = (card: string, amount: number, merchant: string, country: string, device: string, channel: string): void => {
    const txn_id = `${run}-t${String(++n).padStart(2, '0')}`;
    txns.push({ txn_id, card_id: `${card}-${run}`, amount, merchant, country, device_id: device, channel });
  };
  // An ordinary card: groceries and coffee at home, one device.
  const groceries = [42.1, 18.5, 63.0, 25.75, 39.9, 54.2];
  groceries.forEach((a, i) => add('alice', a, i % 2 === 0 ? 'grocer' : 'cafe', 'US', 'alice-phone', 'pos'));
  // A card that is taken over after some normal use.
  [31.0, 27.5, 44.0, 35.25].forEach((a) => add('bob', a, 'cafe', 'US', 'bob-phone', 'pos'));
  const takeover: Array<[number, string, string, string]> = [
    [899.0, 'electronics', 'FR', 'dev-x1'],
    [1250.0, 'jewellery', 'RO', 'dev-x2'],
    [640.0, 'giftcards', 'NG', 'dev-x3'],
    [1480.0, 'electronics', 'BR', 'dev-x4'],
  ];
  for (const [a, m, c, d] of takeover) add('bob', a, m, c, d, 'online');
  // Alice keeps shopping normally.
  add('alice', 47.3, 'grocer', 'US', 'alice-phone', 'pos');
  return txns;
}

export async function run(url: string, log: (line: string) => void = console.log): Promise<Scored[]> {
  const client = new Client(url);
  try {
    const reg = await client.register([CardRisk, CardOnline]);
    if (reg.dry_run === undefined) {
      log(`registered ${reg.added.length} new, ${reg.unchanged.length} unchanged (registry_version ${reg.registry_version})`);
    }
    // Ids unique per run, so running the example twice against one server starts fresh cards.
    const runId = Date.now().toString(36) + Math.random().toString(36).slice(2, 5);
    const scored: Scored[] = [];
    for (const txn of stream(runId)) {
      await client.push(CardTxn, { ...txn });
      const [risk, online] = await client.batchGet([
        { table: CardRisk, key: txn.card_id },
        { table: CardOnline, key: txn.card_id },
      ]);
      if (risk instanceof StreamfeatError) throw risk;
      const s = decide(txn, risk, online instanceof StreamfeatError ? {} : online);
      scored.push(s);
      const why = s.reasons.length > 0 ? `  (${s.reasons.join('; ')})` : '';
      const what = `${txn.txn_id}  ${txn.card_id.padEnd(16)} ${txn.amount.toFixed(2).padStart(8)} ${txn.country} ${txn.channel.padEnd(6)}`;
      log(`${what} -> ${s.decision}${why}`);
    }
    return scored;
  } finally {
    await client.close();
  }
}

export async function main(url: string): Promise<void> {
  await run(url);
}

if (require.main === module) {
  main(process.argv[2] ?? 'http://127.0.0.1:8080').catch((err: unknown) => {
    console.error(err instanceof StreamfeatError ? `error: ${err.describe()}` : err);
    process.exitCode = 1;
  });
}
