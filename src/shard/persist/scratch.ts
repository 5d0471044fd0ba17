/**
 * The byte scratch of the state encoders (slab_chunk.ts writeSlab,
 * ../cold/frozen_entity.ts freeze, plain_values.ts putPlain): one buffer per
 * thread, grown (by doubling) to the largest thing encoded and kept, so a
 * snapshot's chunks and every freeze reuse it. Its views are remade only when it
 * grows; an encoder copies its bytes out before the next one writes.
 */
export const scratch = {
  buf: new ArrayBuffer(0),
  u8: new Uint8Array(0),
  u32: new Uint32Array(0),
  f64: new Float64Array(0),
  view: new DataView(new ArrayBuffer(0)),
};

/** Grows the scratch to at least `bytes` (a multiple of 8: the Float64Array view covers it all), keeping its contents. */
export function reserve(bytes: number): void {
  if (bytes <= scratch.buf.byteLength) return;
  const next = new ArrayBuffer(Math.max((bytes + 7) & ~7, 2 * scratch.buf.byteLength, 64 * 1024));
  new Uint8Array(next).set(scratch.u8);
  scratch.buf = next;
  scratch.u8 = new Uint8Array(next);
  scratch.u32 = new Uint32Array(next);
  scratch.f64 = new Float64Array(next);
  scratch.view = new DataView(next);
}
