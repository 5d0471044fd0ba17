/**
 * Test hook (SERVICE_FAULT_CLOCK_FILE): a step of the wall clock, inside the
 * server. While installed in a thread, that thread's `Date.now()` returns the
 * real wall clock plus the number of ms written in the file, re-read every
 * CLOCK_FAULT_FILE_POLL_MS. Every server thread installs it (front, shards,
 * coordinator: their init carries the file), so the shift reaches every wall
 * clock reading of the server, ours and its libraries' (pino's `time`), as a
 * real step would, and a test fails if any duration or timeout still reads it.
 * Unset (production), nothing here runs and `Date.now` is never touched.
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
  #realNow: (() => number) | null = null;

  constructor(readonly file: string) {}

  /**
   * Shifts this thread's Date.now() by the file's content: read now (a shift
   * written before boot is in effect from the first reading), then every
   * CLOCK_FAULT_FILE_POLL_MS. `file` null: nothing is installed.
   */
  static install(file: string | null): ClockFault | null {
    if (file === null) return null;
    const f = new ClockFault(file);
    f.poll();
    const realNow = Date.now;
    f.#realNow = realNow;
    Date.now = () => realNow() + f.skewMs;
    f.#timer = setInterval(() => f.poll(), CLOCK_FAULT_FILE_POLL_MS);
    f.#timer.unref();
    return f;
  }

  poll(): void {
    this.skewMs = readSkew(this.file);
  }

  /** Stops polling and gives Date.now back. */
  uninstall(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    if (this.#realNow !== null) Date.now = this.#realNow;
    this.#realNow = null;
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
