/**
 * Geo ops over a (lat, lon) pair of numeric columns, in degrees (lifetime; the first
 * three also over a sliding window, through GeoPathAgg / GeoSpreadAgg below, the
 * longitude kept as the window ring's aux column):
 *   geo_velocity        max over consecutive points with dt > 0 of haversine_km / hours
 *   geo_distance        sum of haversine_km between consecutive points
 *   geo_spread          sqrt(var_lat (111.32)^2 + var_lon (111.32 cos(mean_lat))^2) km,
 *                       population variances in degrees^2
 *   distance_from_home  haversine_km from the latest point to the arithmetic mean of the
 *                       last `samples` points (latest included)
 * Haversine on a sphere of radius 6371 km. A point is used only when both
 * values are finite with |lat| <= 90 and |lon| <= 180; other events are skipped.
 */
import type { JsonValue, Row, Value } from '../types';
import type { StoredState } from './factory';
import type { WindowAgg } from './val_window';
import { jsonNum, loadFields, newDoubles, saveFields } from './values';

export const EARTH_RADIUS_KM = 6371;
/** Kilometres per degree of latitude (and of longitude at the equator). */
const KM_PER_DEG = 111.32;
const RAD = Math.PI / 180;
const HOUR_MS = 3_600_000;

export function haversineKm(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const dLat = (lat2 - lat1) * RAD;
  const dLon = (lon2 - lon1) * RAD;
  const s = Math.sin(dLat / 2);
  const c = Math.sin(dLon / 2);
  const a = s * s + Math.cos(lat1 * RAD) * Math.cos(lat2 * RAD) * c * c;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(a)));
}

/** Both coordinates are finite numbers inside the degree ranges. */
function validPoint(lat: Value | undefined, lon: Value | undefined): boolean {
  return isLat(lat) && isLon(lon);
}

function isLat(x: Value | undefined): x is number {
  return typeof x === 'number' && Math.abs(x) <= 90;
}

function isLon(y: Value | undefined): y is number {
  return typeof y === 'number' && Math.abs(y) <= 180;
}

export const enum GeoOut {
  Velocity = 0,
  Distance = 1,
}

/** geo_velocity and geo_distance: the previous point and a running max / sum. */

/** Running moments of a point set (Welford, per axis): the lifetime geo_spread state and its window accumulator share it. */
interface PointMoments { n: number; mLat: number; sLat: number; mLon: number; sLon: number }

function addPoint(m: PointMoments, lat: number, lon: number): void {
  m.n++;
  const dLat = lat - m.mLat;
  m.mLat += dLat / m.n;
  m.sLat += dLat * (lat - m.mLat);
  const dLon = lon - m.mLon;
  m.mLon += dLon / m.n;
  m.sLon += dLon * (lon - m.mLon);
}

export class GeoPathState implements StoredState {
  readonly out: GeoOut;
  readonly lonField: string;
  has: boolean;
  lat: number;
  lon: number;
  t: number;
  acc: number;
  constructor(out: GeoOut, lonField: string) {
    this.out = out;
    this.lonField = lonField;
    this.has = false;
    this.lat = 0;
    this.lon = 0;
    this.t = 0;
    this.acc = 0;
  }
  update(x: Value | undefined, t: number, row: Row): void {
    const lon = row[this.lonField];
    if (!validPoint(x, lon)) return;
    const la = x as number;
    const lo = lon as number;
    if (this.has) {
      const km = haversineKm(this.lat, this.lon, la, lo);
      if (this.out === GeoOut.Distance) this.acc += km;
      else if (t > this.t) {
        const kmh = km / ((t - this.t) / HOUR_MS);
        if (kmh > this.acc) this.acc = kmh;
      }
    }
    this.has = true;
    this.lat = la;
    this.lon = lo;
    this.t = t;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    if (this.out === GeoOut.Distance) return jsonNum(this.acc);
    return this.has ? jsonNum(this.acc) : null;
  }
  save(): unknown {
    return [this.has ? 1 : 0, this.lat, this.lon, this.t, this.acc];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.has = a[0] === 1;
    this.lat = a[1];
    this.lon = a[2];
    this.t = a[3];
    this.acc = a[4];
  }
}

/** geo_spread from n, mean lat and the M2 sums (population variances); null while n < 2. */
function spreadKm(n: number, mLat: number, sLat: number, sLon: number): JsonValue {
  if (n < 2) return null;
  const varLat = Math.max(0, sLat / n);
  const varLon = Math.max(0, sLon / n);
  const kx = KM_PER_DEG * Math.cos(mLat * RAD);
  return jsonNum(Math.sqrt(varLat * KM_PER_DEG * KM_PER_DEG + varLon * kx * kx));
}

export class GeoSpreadState implements StoredState {
  readonly lonField: string;
  n: number;
  mLat: number;
  sLat: number;
  mLon: number;
  sLon: number;
  constructor(lonField: string) {
    this.lonField = lonField;
    this.n = 0;
    this.mLat = 0;
    this.sLat = 0;
    this.mLon = 0;
    this.sLon = 0;
  }
  update(x: Value | undefined, _t: number, row: Row): void {
    const lon = row[this.lonField];
    if (!validPoint(x, lon)) return;
    addPoint(this, x as number, lon as number);
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    return spreadKm(this.n, this.mLat, this.sLat, this.sLon);
  }
  save(): unknown {
    return [this.n, this.mLat, this.sLat, this.mLon, this.sLon];
  }
  restore(saved: unknown): void {
    const a = saved as number[];
    this.n = a[0];
    this.mLat = a[1];
    this.sLat = a[2];
    this.mLon = a[3];
    this.sLon = a[4];
  }
}

const EMPTY: number[] = [];

/** distance_from_home: a ring of the last `samples` points ([lat, lon] pairs). */
export class HomeState implements StoredState {
  readonly lonField: string;
  readonly samples: number;
  pts: number[];
  head: number;
  len: number;
  constructor(lonField: string, samples: number) {
    this.lonField = lonField;
    this.samples = samples;
    this.pts = EMPTY;
    this.head = 0;
    this.len = 0;
  }
  update(x: Value | undefined, _t: number, row: Row): void {
    const lon = row[this.lonField];
    if (!validPoint(x, lon)) return;
    let size = this.pts.length >> 1;
    if (this.len === size && size < this.samples) {
      const next = Math.min(this.samples, size === 0 ? 2 : size * 2);
      const pts = newDoubles(next * 2);
      for (let k = 0; k < this.len; k++) {
        const from = ((this.head + k) % size) * 2;
        pts[k * 2] = this.pts[from];
        pts[k * 2 + 1] = this.pts[from + 1];
      }
      this.pts = pts;
      this.head = 0;
      size = next;
    }
    if (this.len < size) {
      const i = ((this.head + this.len) % size) * 2;
      this.pts[i] = x as number;
      this.pts[i + 1] = lon as number;
      this.len++;
      return;
    }
    this.pts[this.head * 2] = x as number;
    this.pts[this.head * 2 + 1] = lon as number;
    this.head = this.head + 1 === size ? 0 : this.head + 1;
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    if (this.len === 0) return null;
    const size = this.pts.length >> 1;
    let sLat = 0;
    let sLon = 0;
    for (let k = 0; k < this.len; k++) {
      const i = ((this.head + k) % size) * 2;
      sLat += this.pts[i];
      sLon += this.pts[i + 1];
    }
    const newest = ((this.head + this.len - 1) % size) * 2;
    return jsonNum(haversineKm(this.pts[newest], this.pts[newest + 1], sLat / this.len, sLon / this.len));
  }
  save(): unknown {
    const size = this.pts.length >> 1;
    const out: number[] = [];
    for (let k = 0; k < this.len; k++) {
      const i = ((this.head + k) % size) * 2;
      out.push(this.pts[i], this.pts[i + 1]);
    }
    return out;
  }
  restore(saved: unknown): void {
    const a = (saved as number[]).slice(-this.samples * 2);
    if (a.length === 0) return;
    this.pts = newDoubles(a.length);
    for (let k = 0; k < a.length; k++) this.pts[k] = a[k];
    this.head = 0;
    this.len = a.length >> 1;
  }
}

/**
 * The windowed geo_velocity / geo_distance: a summary of a run of points (first
 * and last point, and the max speed or the summed distance between consecutive
 * points inside the run). Joining two runs adds the step from the first run's
 * last point to the second's first point, so the answer is that of the suffix.
 */
export class GeoPathAcc {
  n = 0;
  fLat = 0;
  fLon = 0;
  fT = 0;
  lat = 0;
  lon = 0;
  t = 0;
  acc = 0;
}

const PATH_FIELDS: ReadonlyArray<keyof GeoPathAcc> = ['n', 'fLat', 'fLon', 'fT', 'lat', 'lon', 't', 'acc'];

/** A point is a valid latitude (the op's field) and longitude (the ring's aux column). */
abstract class GeoPointAgg {
  accepts(x: Value | undefined): x is number {
    return isLat(x);
  }
  acceptsAux(y: Value | undefined): y is number {
    return isLon(y);
  }
}

export class GeoPathAgg extends GeoPointAgg implements WindowAgg<GeoPathAcc> {
  readonly out: GeoOut;
  constructor(out: GeoOut) {
    super();
    this.out = out;
  }
  empty(): GeoPathAcc {
    return new GeoPathAcc();
  }
  clear(a: GeoPathAcc): GeoPathAcc {
    a.n = 0;
    a.acc = 0;
    return a;
  }
  /** The step from a's last point to (lat, lon) at t, into a.acc (as GeoPathState.update). */
  private step(a: GeoPathAcc, lat: number, lon: number, t: number): void {
    const km = haversineKm(a.lat, a.lon, lat, lon);
    if (this.out === GeoOut.Distance) a.acc += km;
    else if (t > a.t) {
      const kmh = km / ((t - a.t) / HOUR_MS);
      if (kmh > a.acc) a.acc = kmh;
    }
  }
  add(a: GeoPathAcc, v: string | number | boolean, t: number, lon: number): GeoPathAcc {
    const lat = v as number;
    if (a.n === 0) {
      a.fLat = lat;
      a.fLon = lon;
      a.fT = t;
    } else this.step(a, lat, lon, t);
    a.n++;
    a.lat = lat;
    a.lon = lon;
    a.t = t;
    return a;
  }
  merge(into: GeoPathAcc, from: GeoPathAcc): GeoPathAcc {
    if (from.n === 0) return into;
    if (into.n === 0) {
      into.fLat = from.fLat;
      into.fLon = from.fLon;
      into.fT = from.fT;
      into.acc = from.acc;
    } else {
      this.step(into, from.fLat, from.fLon, from.fT);
      if (this.out === GeoOut.Distance) into.acc += from.acc;
      else if (from.acc > into.acc) into.acc = from.acc;
    }
    into.n += from.n;
    into.lat = from.lat;
    into.lon = from.lon;
    into.t = from.t;
    return into;
  }
  result(a: GeoPathAcc): JsonValue {
    if (this.out === GeoOut.Distance) return jsonNum(a.acc);
    return a.n > 0 ? jsonNum(a.acc) : null;
  }
  save(a: GeoPathAcc): unknown {
    return saveFields(a, PATH_FIELDS);
  }
  load(saved: unknown): GeoPathAcc {
    return loadFields(new GeoPathAcc(), PATH_FIELDS, saved as number[]);
  }
}

/** The windowed geo_spread: Welford moments of lat and lon, joined with Chan et al.'s update. */
export class SpreadAcc {
  n = 0;
  mLat = 0;
  sLat = 0;
  mLon = 0;
  sLon = 0;
}

const SPREAD_FIELDS: ReadonlyArray<keyof SpreadAcc> = ['n', 'mLat', 'sLat', 'mLon', 'sLon'];

export class GeoSpreadAgg extends GeoPointAgg implements WindowAgg<SpreadAcc> {
  empty(): SpreadAcc {
    return new SpreadAcc();
  }
  clear(a: SpreadAcc): SpreadAcc {
    a.n = 0;
    a.mLat = 0;
    a.sLat = 0;
    a.mLon = 0;
    a.sLon = 0;
    return a;
  }
  add(a: SpreadAcc, v: string | number | boolean, _t: number, lon: number): SpreadAcc {
    addPoint(a, v as number, lon);
    return a;
  }
  merge(into: SpreadAcc, from: SpreadAcc): SpreadAcc {
    if (from.n === 0) return into;
    const n = into.n + from.n;
    const w = (into.n * from.n) / n;
    const dLat = from.mLat - into.mLat;
    const dLon = from.mLon - into.mLon;
    into.sLat += from.sLat + dLat * dLat * w;
    into.sLon += from.sLon + dLon * dLon * w;
    into.mLat += (dLat * from.n) / n;
    into.mLon += (dLon * from.n) / n;
    into.n = n;
    return into;
  }
  result(a: SpreadAcc): JsonValue {
    return spreadKm(a.n, a.mLat, a.sLat, a.sLon);
  }
  save(a: SpreadAcc): unknown {
    return saveFields(a, SPREAD_FIELDS);
  }
  load(saved: unknown): SpreadAcc {
    return loadFields(new SpreadAcc(), SPREAD_FIELDS, saved as number[]);
  }
}
