/**
 * One stream message = one push's copy for one partition. The payload is a short
 * text header then the envelope as received (what a single node's WAL stores):
 *
 *   <t>\n<registry version>\n<event>\n<key hashes, comma-separated>\n<envelope>
 *
 * The key hashes (registry/key.ts hashKey) of the keys of this partition let the
 * owner route the copy to the right local shards without parsing the envelope.
 * A text header in the payload is cheaper to write and read than NATS headers.
 */
const NL = 10;

export interface EventMessage {
  t: number;
  v: number;
  e: string;
  hashes: number[];
  j: string;
}

const encoder = new TextEncoder();

export function encodeEvent(t: number, v: number, e: string, hashes: readonly number[], j: string): Uint8Array {
  return encoder.encode(`${t}\n${v}\n${e}\n${hashes.join(',')}\n${j}`);
}

/** Null when the bytes are not an event message (never written by streamfeat). */
export function decodeEvent(data: Uint8Array): EventMessage | null {
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const ends: number[] = [];
  let from = 0;
  for (let i = 0; i < 4; i++) {
    const nl = b.indexOf(NL, from);
    if (nl < 0) return null;
    ends.push(nl);
    from = nl + 1;
  }
  const t = Number(b.toString('latin1', 0, ends[0]));
  const v = Number(b.toString('latin1', ends[0] + 1, ends[1]));
  const e = b.toString('utf8', ends[1] + 1, ends[2]);
  const hs = b.toString('latin1', ends[2] + 1, ends[3]);
  if (!Number.isFinite(t) || !Number.isInteger(v)) return null;
  const hashes = hs === '' ? [] : hs.split(',').map(Number);
  return { t, v, e, hashes, j: b.toString('utf8', ends[3] + 1) };
}
