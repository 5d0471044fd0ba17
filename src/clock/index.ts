/** Server time and its rule (server_clock.ts), its watch on the front (clock_watch.ts), the test hook (clock_fault.ts); docs/time.md. */
export { ServerClock, type ClockJump, type ServerClockOptions } from './server_clock';
export { ClockWatch, type ClockCounters } from './clock_watch';
export { ClockFault } from './clock_fault';
