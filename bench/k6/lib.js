// Shared by the k6 scripts (k6 is not a dependency of streamfeat: install it yourself,
// https://k6.io). Same fraud workload and key distributions as `npm run bench`:
// bench/k6/fraud_register.json is bench/workloads.ts's fraud registration under names of
// its own (K6Txn, K6UserTxn, ...: the bench's smoke run checks that the two still agree), so
// running these against a server in use, such as the README quick start's with its own
// `Txn`, changes none of that server's nodes.
//
// Environment: BASE (http://127.0.0.1:8080), KEYS (zipf|uniform), ENTITIES (1000000),
// PRELOAD (20000, get/mixed), SEED.
import http from 'k6/http';

export const BASE = __ENV.BASE || 'http://127.0.0.1:8080';
export const KEYS = __ENV.KEYS || 'zipf';
export const ENTITIES = Number(__ENV.ENTITIES || 1000000);
export const PRELOAD = Number(__ENV.PRELOAD || 20000);
export const PARAMS = { headers: { 'Content-Type': 'application/json' } };

const REGISTER = open('./fraud_register.json');
const THETA = 0.99;
const MCC = ['5411', '5812', '5999', '4111', '5732', '7995', '6011', '5541'];
const COUNTRY = ['US', 'GB', 'DE', 'FR', 'BR', 'IN', 'NG', 'JP'];
const PRELOAD_CHUNK = 200;

/** Gray et al. / YCSB Zipf constants over [0, n): computed once in setup() and shared. */
export function zipfConsts(n) {
  let zetan = 0;
  for (let i = 1; i <= n; i++) zetan += 1 / Math.pow(i, THETA);
  const zeta2 = 1 + 1 / Math.pow(2, THETA);
  return {
    n,
    zetan,
    alpha: 1 / (1 - THETA),
    eta: (1 - Math.pow(2 / n, 1 - THETA)) / (1 - zeta2 / zetan),
    half: 1 + Math.pow(0.5, THETA),
  };
}

export function draw(c) {
  const u = Math.random();
  if (KEYS === 'uniform') return Math.floor(u * c.n);
  const uz = u * c.zetan;
  if (uz < 1) return 0;
  if (uz < c.half) return 1;
  const k = Math.floor(c.n * Math.pow(c.eta * u - c.eta + 1, c.alpha));
  return k < c.n ? k : c.n - 1;
}

/** Registers the fraud workload and returns what every VU needs (Zipf constants). */
export function setupFraud(preload) {
  const r = http.post(`${BASE}/register`, REGISTER, PARAMS);
  if (r.status !== 200) throw new Error(`register failed: ${r.status} ${r.body}`);
  const data = {
    key: zipfConsts(ENTITIES),
    get: zipfConsts(Math.max(1, Math.min(PRELOAD, ENTITIES))),
    merchant: zipfConsts(Math.max(1, Math.floor(ENTITIES / 10))),
  };
  if (preload) {
    // One push per entity of [0, PRELOAD) so that gets read real rows.
    for (let k = 0; k < data.get.n; k += PRELOAD_CHUNK) {
      const reqs = [];
      for (let j = k; j < Math.min(k + PRELOAD_CHUNK, data.get.n); j++) reqs.push(['POST', `${BASE}/push`, pushBody(data, j), PARAMS]);
      for (const res of http.batch(reqs)) if (res.status !== 200) throw new Error(`preload push failed: ${res.status} ${res.body}`);
    }
  }
  return data;
}

export function pushBody(data, k) {
  if (k === undefined) k = draw(data.key);
  const card = (k * 2 + Math.floor(Math.random() * 2)) % (ENTITIES * 2);
  const device = Math.floor(k / 3) % ENTITIES;
  const amount = (1 + Math.random() * 1999).toFixed(2);
  return `{"event":"K6Txn","data":{"user":"u${k}","card":"c${card}","merchant":"m${draw(data.merchant)}","device":"d${device}",` +
    `"amount":${amount},"mcc":"${MCC[Math.floor(Math.random() * MCC.length)]}","country":"${COUNTRY[Math.floor(Math.random() * COUNTRY.length)]}"}}`;
}

export function getBody(data) {
  return `{"table":"K6UserTxn","key":"u${draw(data.get)}"}`;
}

/**
 * Fixed arrival rate when RATE is set (wrk2-style latency), else VUS closed-loop users.
 * `latency` thresholds apply with RATE only: a closed loop runs every VU as fast as the
 * server answers, so its latency is queueing behind the other VUs, not a target to meet.
 */
export function scenarioOptions(thresholds, latency) {
  const duration = __ENV.DURATION || '30s';
  if (__ENV.RATE) {
    const rate = Number(__ENV.RATE);
    return {
      scenarios: {
        fixed: { executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration, preAllocatedVUs: Number(__ENV.VUS || 64), maxVUs: 512 },
      },
      thresholds: Object.assign({}, thresholds, latency || {}),
    };
  }
  return { vus: Number(__ENV.VUS || 32), duration, thresholds };
}
