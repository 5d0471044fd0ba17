// k6: HTTP /get of the 30-feature fraud user row. setup() registers and preloads
// PRELOAD entities (20000) so that gets read real rows.
//   k6 run bench/k6/get.js
//   PRELOAD=50000 VUS=64 DURATION=60s k6 run bench/k6/get.js
import http from 'k6/http';
import { check } from 'k6';
import { BASE, PARAMS, getBody, scenarioOptions, setupFraud } from './lib.js';

export const options = scenarioOptions({ http_req_failed: ['rate<0.001'] });

export function setup() {
  return setupFraud(true);
}

export default function (data) {
  const r = http.post(`${BASE}/get`, getBody(data), PARAMS);
  check(r, { 'get 200': (res) => res.status === 200, 'row found': (res) => res.body.length > 2 });
}
