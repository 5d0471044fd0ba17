/**
 * Geo ops over a (lat, lon) pair of numeric columns, in degrees (lifetime):
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
import { jsonNum, newDoubles } from './values';

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
  return (
    typeof lat === 'number' && typeof lon === 'number' && Math.abs(lat) <= 90 && Math.abs(lon) <= 180
  );
}

export const enum GeoOut {
  Velocity = 0,
  Distance = 1,
}

/** geo_velocity and geo_distance: the previous point and a running max / sum. */
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
    const la = x as number;
    const lo = lon as number;
    this.n++;
    const dLat = la - this.mLat;
    this.mLat += dLat / this.n;
    this.sLat += dLat * (la - this.mLat);
    const dLon = lo - this.mLon;
    this.mLon += dLon / this.n;
    this.sLon += dLon * (lo - this.mLon);
  }
  miss(_t: number): void {}
  read(_now: number): JsonValue {
    if (this.n < 2) return null;
    const varLat = Math.max(0, this.sLat / this.n);
    const varLon = Math.max(0, this.sLon / this.n);
    const kx = KM_PER_DEG * Math.cos(this.mLat * RAD);
    return jsonNum(Math.sqrt(varLat * KM_PER_DEG * KM_PER_DEG + varLon * kx * kx));
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
