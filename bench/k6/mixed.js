// k6: 90% /push + 10% /get (PUSH_SHARE) of the fraud workload on preloaded rows.
//   k6 run bench/k6/mixed.js
//   PUSH_SHARE=0.5 RATE=4000 k6 run bench/k6/mixed.js
import http from 'k6/http';
import { check } from 'k6';
import { BASE, PARAMS, getBody, pushBody, scenarioOptions, setupFraud } from './lib.js';

const PUSH_SHARE = Number(__ENV.PUSH_SHARE || 0.9);

export const options = scenarioOptions(
  { http_req_failed: ['rate<0.001'] },
  { 'http_req_duration{kind:push}': ['p(99)<2'] },
);

export function setup() {
  return setupFraud(true);
}

export default function (data) {
  if (Math.random() < PUSH_SHARE) {
    const r = http.post(`${BASE}/push`, pushBody(data), { ...PARAMS, tags: { kind: 'push' } });
    check(r, { 'push 200': (res) => res.status === 200 });
  } else {
    const r = http.post(`${BASE}/get`, getBody(data), { ...PARAMS, tags: { kind: 'get' } });
    check(r, { 'get 200': (res) => res.status === 200 });
  }
}
