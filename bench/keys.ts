/**
 * Entity-key draws for the load generators: a seeded PRNG and a Zipfian
 * generator over [0, n). The Zipf constants are computed here once and baked
 * into the wrk Lua script too (wrk.ts), so every generator draws from the same
 * distribution.
 */

/** Zipf exponent: YCSB's default, a realistic "few hot entities" skew. */
export const ZIPF_THETA = 0.99;
/** Entities the key space spans unless --entities says otherwise (the load scenarios' default). */
export const ENTITIES_DEFAULT = 1_000_000;

export type KeyDist = 'uniform' | 'zipf';

/** mulberry32: tiny, fast, deterministic; good enough to spread keys. */
export class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.#s = (this.#s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
}

/** The constants of Gray et al.'s Zipf method (as in YCSB's ZipfianGenerator). */
export interface ZipfConsts {
  n: number;
  theta: number;
  zetan: number;
  alpha: number;
  eta: number;
  /** 1 + 0.5^theta: the second rank's upper bound on u * zetan. */
  half: number;
}

const zetaCache = new Map<number, number>();

export function zipfConsts(n: number, theta: number = ZIPF_THETA): ZipfConsts {
  let zetan = theta === ZIPF_THETA ? zetaCache.get(n) : undefined;
  if (zetan === undefined) {
    zetan = 0;
    for (let i = 1; i <= n; i++) zetan += 1 / Math.pow(i, theta);
    if (theta === ZIPF_THETA) zetaCache.set(n, zetan);
  }
  const zeta2 = 1 + 1 / Math.pow(2, theta);
  return {
    n,
    theta,
    zetan,
    alpha: 1 / (1 - theta),
    eta: (1 - Math.pow(2 / n, 1 - theta)) / (1 - zeta2 / zetan),
    half: 1 + Math.pow(0.5, theta),
  };
}

/** Draws entity indexes in [0, n): rank 0 is the hottest under zipf. */
export class KeyDraw {
  readonly n: number;
  readonly dist: KeyDist;
  readonly #rng: Rng;
  readonly #z: ZipfConsts | null;

  constructor(dist: KeyDist, n: number, rng: Rng) {
    this.n = n;
    this.dist = dist;
    this.#rng = rng;
    this.#z = dist === 'zipf' ? zipfConsts(n) : null;
  }

  next(): number {
    const z = this.#z;
    const u = this.#rng.next();
    if (z === null) return Math.floor(u * this.n);
    const uz = u * z.zetan;
    if (uz < 1) return 0;
    if (uz < z.half) return 1;
    const k = Math.floor(z.n * Math.pow(z.eta * u - z.eta + 1, z.alpha));
    return k < z.n ? k : z.n - 1;
  }
}
