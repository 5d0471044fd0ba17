/**
 * Test hook (SERVICE_FAULT_CLOCK_FILE): a wall clock shifted by the number of ms
 * written in a file, re-read every CLOCK_FAULT_FILE_POLL_MS, for the server
 * clock's owner. The owner is the only reader of the wall clock in a server
 * (server_clock.ts), so shifting it shifts the wall clock of every thread: the
 * shards' server time follows the owner's, and nothing else reads wall time.
 * Unset (production), nothing here runs: the owner reads Date.now() itself.
 *
 * File content: an integer, negative for a clock behind (`-3600000`: one hour
 * back). A missing, empty or unreadable file is a shift of 0.
 */
import { existsSync, readFileSync } from 'node:fs';
import { CLOCK_FAULT_FILE_POLL_MS } from '../limits';

export class ClockFault {
  /** The shift in effect, ms. */
  skewMs = 0;
  #timer: NodeJS.Timeout | null = null;
  /** Date.now() plus the shift: the owner's wall clock (ServerClockOptions.wallMs). */
  readonly wallMs = (): number => Date.now() + this.skewMs;

  constructor(readonly file: string) {}

  /** Reads the file now (a shift written before boot is in effect from the first reading), then every CLOCK_FAULT_FILE_POLL_MS. */
  static watch(file: string): ClockFault {
    const f = new ClockFault(file);
    f.poll();
    f.#timer = setInterval(() => f.poll(), CLOCK_FAULT_FILE_POLL_MS);
    f.#timer.unref();
    return f;
  }

  poll(): void {
    this.skewMs = readSkew(this.file);
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }
}

function readSkew(file: string): number {
  let text: string;
  try {
    text = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
  } catch {
    return 0;
  }
  return /^-?\d+$/.test(text) ? Number(text) : 0;
}
