// k6: HTTP /push of the fraud workload. Register happens in setup().
//   k6 run bench/k6/push.js                         (32 VUs, closed loop, 30 s: throughput, no latency target)
//   RATE=5000 k6 run bench/k6/push.js               (fixed arrival rate: p99 target < 2 ms, checked)
//   BASE=http://127.0.0.1:8080 KEYS=uniform k6 run bench/k6/push.js
import http from 'k6/http';
import { check } from 'k6';
import { BASE, PARAMS, pushBody, scenarioOptions, setupFraud } from './lib.js';

export const options = scenarioOptions(
  { http_req_failed: ['rate<0.001'] },
  // The push latency target: p99 < 2 ms at a fixed rate of half the measured maximum (RATE only).
  { http_req_duration: ['p(99)<2'] },
);

export function setup() {
  return setupFraud(false);
}

export default function (data) {
  const r = http.post(`${BASE}/push`, pushBody(data), PARAMS);
  check(r, { 'push 200': (res) => res.status === 200 });
}
