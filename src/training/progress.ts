/**
 * Progress of a long offline run on a terminal: one line on stderr, rewritten in
 * place at most every PROGRESS_INTERVAL_MS, only when stderr is a TTY (a pipe or a
 * file gets the final summary line alone). tick() is cheap enough for every record:
 * it reads the clock once per PROGRESS_CLOCK_STRIDE calls.
 */
import { PROGRESS_CLOCK_STRIDE, PROGRESS_INTERVAL_MS } from '../limits';

export class Progress {
  #calls = 0;
  #nextMs = 0;
  #shown = false;
  constructor(readonly enabled: boolean, readonly write: (s: string) => void) {}

  /** Calls `line` for the text to show when it is time to show it. */
  tick(line: () => string): void {
    if (!this.enabled || ++this.#calls % PROGRESS_CLOCK_STRIDE !== 0) return;
    const now = Date.now();
    if (now < this.#nextMs) return;
    this.#nextMs = now + PROGRESS_INTERVAL_MS;
    this.write(`\r\x1b[K${line()}`);
    this.#shown = true;
  }

  /** Clears the progress line (before the summary). */
  done(): void {
    if (this.#shown) this.write('\r\x1b[K');
    this.#shown = false;
  }
}

/** The terminal progress of this process (stderr). */
export function stderrProgress(): Progress {
  return new Progress(process.stderr.isTTY === true, (s) => process.stderr.write(s));
}
