/**
 * The part of autocannon's programmatic API the bench uses (autocannon ships
 * no types; adding @types/autocannon for this much would be another dependency).
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      setupRequest?: (req: Request, context: Record<string, unknown>) => Request;
    }
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      pipelining?: number;
      timeout?: number;
      overallRate?: number;
      requests?: Request[];
    }
    interface Histo {
      p50: number;
      p99: number;
      p99_9: number;
      max: number;
      mean: number;
    }
    interface Result {
      errors: number;
      timeouts: number;
      non2xx: number;
      duration: number;
      latency: Histo;
      requests: { total: number; sent: number; average: number };
    }
    interface Instance extends EventEmitter {
      stop(): void;
      on(event: 'response', cb: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void): this;
      on(event: 'reqError', cb: (err: Error) => void): this;
      on(event: string, cb: (...args: any[]) => void): this;
    }
  }

  function autocannon(opts: autocannon.Options, cb: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance;
  export = autocannon;
}
