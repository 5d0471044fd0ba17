/**
 * The feature state of one table, column by column: an entity is a slot of the
 * table's EntityIndex, and each feature keeps its state for every slot in a column
 * (an object per entity and feature cost hundreds of bytes each, and a GC that
 * walks them all; docs/ops.md "Memory").
 *
 *   index (entity_index.ts)   key -> slot, lastT, lastLsn
 *   groups (ring_group.ts)    windowed ops with a shared ring: one ring per
 *                             entity with a cell per field they read, kept for
 *                             the longest window, pooled in typed arrays,
 *                             buckets per feature
 *   objs (solo_column.ts)     every other op: lifetime ops of K doubles as a
 *                             slab row per slot, kept values and lifetime
 *                             sketches' first values as cells of a slab row,
 *                             bloom filters in pooled blocks; the rest one
 *                             OpState per slot (the op's object form)
 *
 * Grouping: the windowed features of a fresh table without `where` share one
 * group whatever their windows (up to RING_GROUP_WINDOWS_MAX windows a group:
 * more make groups of consecutive windows); a feature with `where` has its own
 * (it sees other events).
 * A feature added to an existing table (registry install, carryOver) never joins
 * an existing ring, whose events it must not see: the new features of that
 * install form groups of their own, empty for every entity.
 */
import type { FeaturePlan, TablePlan } from '../../registry/compile';
import type { JsonValue, Row } from '../../types';
import { EntityIndex } from '../state/entity_index';
import { InternTable } from '../state/intern';
import { RingGroup } from './ring_group';
import { hashedFieldsOf, hashOrNull, RingMember } from './ring_member';
import { memberPart, skipsOf, type GroupSave } from './ring_save';
import { ObjectColumn, soloColumn, type SoloColumn } from './solo_column';
import { KeptColumn } from './kept_column';
import { ExactColumn } from './exact_column';
import { DroppedCells } from './dropped_cells';
import { RING_GROUP_WINDOWS_MAX } from '../../limits';

/** Per entity, as plain data (a layout change, a snapshot of another layout): per group its save, per solo feature its column's save (null for grouped features). */
export type EntitySave = [GroupSave[], unknown[]];

/**
 * A table's layout as a snapshot records it: per group its window (the longest),
 * its windows when more than one (absent: [windowMs]), fields and member feature
 * indexes.
 */
export interface LayoutMeta {
  /** `hashed`: the fields whose cells hold hashes (ring_group.ts); absent: none. */
  groups: Array<{ windowMs: number; windows?: number[]; fields: string[]; members: number[]; hashed?: string[] }>;
}

/** Whether the saved group's field `f` held hashes. */
function savedHashed(g: LayoutMeta['groups'][number], f: string): boolean {
  return g.hashed !== undefined && g.hashed.includes(f);
}

/** A layout group's windows, ascending. */
export function windowsOf(g: LayoutMeta['groups'][number]): number[] {
  return g.windows ?? [g.windowMs];
}

function sameWindows(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((w, i) => w === b[i]);
}

/**
 * How an EntitySave of another layout loads into this one (planLoad): per live
 * group its source group in the save (-1: starts empty), the source field of each
 * of its fields, the source member of each of its members, and `winSrc`: -1 when
 * it has the source group's windows (its skip counts carry over), else the
 * position of its one window among the source group's (a member moved to a ring
 * of its own: its ring starts after that window's skip count); per live solo
 * feature the saved solo feature it loads (-1: starts empty).
 */
export interface SaveMap {
  groupSrc: number[];
  colSrc: number[][];
  memberSrc: number[][];
  winSrc: number[];
  objSrc: number[];
}

/** Out-parameter of EntityIndex.addReplacing (one per thread: restores are synchronous). */
const REPLACED = new Int32Array(1);

export class TableColumns {
  readonly index: EntityIndex;
  /**
   * Intern table per column name, shared by the table's groups and kept-value
   * columns and by every table of the shard (ShardState.interns): a value that
   * two tables of a record hold (a merchant, a user, a card) is one string and
   * one id, and the second table's lookup of it is the table's last-lookup hit
   * instead of a probe. A table or feature that goes gives its cells' references
   * back (dropAll, carry: dropped_cells.ts).
   */
  readonly interns: Map<string, InternTable>;
  /** colInterns, null when the layout changed since it was derived. */
  #colInterns: Array<InternTable | null> | null = null;
  /**
   * By position in `plan.columns`: the id (in colInterns) of the value of the row
   * being applied when the push path looked it up by its bytes and holds a
   * reference to it, else -1 (every other path). Ring cells then take the id
   * without looking at the string (ring_group.ts push).
   */
  readonly colIds: Int32Array;
  /**
   * By position in `plan.columns`: the hash push_apply.ts made of the value from the
   * record's bytes for a column colHashed marks, NaN otherwise (every other path:
   * a hashed field then hashes the value itself, ring_group.ts push).
   */
  readonly colHash: Float64Array;
  /** rowReads(), null when the layout changed since it was derived. */
  #rowReads: Uint8Array | null = null;
  groups: RingGroup[] = [];
  /** Per feature: the group and member serving it, or null (a solo column). */
  readonly featGroup: Array<RingGroup | null>;
  readonly featMember: Array<RingMember | null>;
  /** Per feature: its solo column (slab rows or OpStates), or null for a grouped feature. */
  readonly objs: Array<SoloColumn | null>;

  /**
   * A fresh table whose values are interned in `interns` (the shard's: ShardState.interns;
   * a table's own by default); with `from`, the entities of `from` with nothing assigned yet (carry).
   */
  constructor(public plan: TablePlan, from: TableColumns | null = null, assign = true, interns: Map<string, InternTable> = new Map()) {
    this.index = from === null ? new EntityIndex() : from.index;
    this.interns = from === null ? interns : from.interns;
    this.colIds = new Int32Array(plan.columns.length).fill(-1);
    this.colHash = new Float64Array(plan.columns.length).fill(NaN);
    const n = plan.features.length;
    this.featGroup = new Array<RingGroup | null>(n).fill(null);
    this.featMember = new Array<RingMember | null>(n).fill(null);
    this.objs = new Array<SoloColumn | null>(n).fill(null);
    this.index.onGrow = (capacity) => {
      for (const g of this.groups) g.grow(capacity);
      for (const col of this.objs) if (col !== null) col.grow(capacity);
    };
    if (from === null && assign) this.#assign(plan.features.map((_, i) => i));
  }

  /**
   * A fresh table laid out as a snapshot's (restore): each saved group whose
   * features are still live (`liveOf[j]`: the live feature of saved feature j, or
   * -1) becomes a group with the same window and fields; every other feature is
   * assigned as in a fresh table. Saves of that layout then load one to one.
   */
  static fromLayout(plan: TablePlan, meta: LayoutMeta, liveOf: readonly number[], interns: Map<string, InternTable> = new Map()): TableColumns {
    const cols = new TableColumns(plan, null, false, interns);
    const placed = new Set<number>();
    for (const g of meta.groups) {
      const live = g.members.map((j) => liveOf[j]).filter((i) => i >= 0 && plan.features[i].factory.shared != null);
      if (live.length === 0) continue;
      cols.#newGroup(live, g.fields, windowsOf(g), g.hashed ?? []);
      for (const i of live) placed.add(i);
    }
    cols.#assign(plan.features.map((_, i) => i).filter((i) => !placed.has(i)));
    return cols;
  }

  layoutMeta(): LayoutMeta {
    return {
      groups: this.groups.map((g) => ({
        windowMs: g.windowMs,
        ...(g.windows.length > 1 ? { windows: g.windows.slice() } : {}),
        fields: g.fields.slice(),
        members: g.members.map((m) => m.feature),
        ...(g.hashed.includes(1) ? { hashed: g.fields.filter((_, c) => g.hashed[c] === 1) } : {}),
      })),
    };
  }

  /**
   * How saves of layout `meta` load here. A live group takes a saved group's
   * ring only when every one of its members is a member of that saved group with
   * the same windows (a member must never see events it did not receive); a live
   * member whose saved state sits elsewhere is first moved to a ring of its own
   * (detachMember), which takes its part of the saved group. Rare: only for
   * layouts that diverged (a cluster import into a table laid out otherwise).
   */
  planLoad(meta: LayoutMeta, liveOf: readonly number[]): SaveMap {
    const n = this.plan.features.length;
    const srcOf: Array<{ group: number; member: number } | null> = new Array(n).fill(null);
    const objOf: number[] = new Array(n).fill(-1);
    const inGroup = new Set<number>();
    meta.groups.forEach((g, gi) => g.members.forEach((j, mi) => {
      inGroup.add(j);
      if (liveOf[j] >= 0) srcOf[liveOf[j]] = { group: gi, member: mi };
    }));
    liveOf.forEach((i, j) => { if (i >= 0 && !inGroup.has(j)) objOf[i] = j; });
    for (const g of [...this.groups]) {
      const src = g.members.map((m) => srcOf[m.feature]);
      if (src.every((x) => x === null)) continue;
      const s0 = src[0];
      const sg = s0 === null ? null : meta.groups[s0.group];
      // A saved hashed field loads only into a hashed one (a saved value field is hashed on load: addMapped).
      const hashedOk = sg !== null && g.fields.every((f, c) => g.hashed[c] === 1 || !savedHashed(sg, f));
      const oneSource = sg !== null && src.every((x) => x !== null && x.group === s0!.group);
      // Whole: the saved ring as it is. A ring of one member: its part of the saved group (addMapped, winSrc).
      if (oneSource && hashedOk && (sameWindows(windowsOf(sg), g.windows) || g.members.length === 1)) continue;
      for (const m of [...g.members]) if (srcOf[m.feature] !== null) this.detachMember(m.feature);
    }
    const map: SaveMap = { groupSrc: [], colSrc: [], memberSrc: [], winSrc: [], objSrc: new Array(n).fill(-1) };
    for (const g of this.groups) {
      const src = g.members.map((m) => srcOf[m.feature]);
      // A ring of one member takes its part of the saved group; a shared one the saved group whole (above).
      const gi = src.length > 0 && src[0] !== null ? src[0].group : -1;
      const sg = gi < 0 ? null : meta.groups[gi];
      map.groupSrc.push(gi);
      map.colSrc.push(g.fields.map((f) => (sg === null ? -1 : sg.fields.indexOf(f))));
      map.memberSrc.push(src.map((x) => (x === null ? -1 : x.member)));
      map.winSrc.push(sg === null || sameWindows(windowsOf(sg), g.windows) ? -1 : windowsOf(sg).indexOf(g.windows[0]));
    }
    for (let i = 0; i < n; i++) if (this.objs[i] !== null) map.objSrc[i] = objOf[i];
    return map;
  }

  /**
   * Moves grouped feature `i` to a ring group of its own (its field, its window),
   * every live entity's part of its group going with it: the ring entries its
   * window still holds and its buckets. Its answers stay the same (the new ring
   * holds the same entries and buckets); the group it leaves keeps the others'.
   */
  detachMember(i: number): void {
    const g = this.featGroup[i] as RingGroup;
    const m = this.featMember[i] as RingMember;
    const at = g.members.indexOf(m);
    const fields = m.col < 0 ? [] : [g.fields[m.col]];
    const windowMs = g.windows[m.win];
    const own = new RingMember(i, fields.length - 1, m.num, m.val);
    const lone = new RingGroup([windowMs], g.where, fields, fields.map((f) => this.#internOf(f)), [own], this.index.capacity, hashedFieldsOf(fields, [own]));
    // A value field the new ring hashes (n_unique alone reads it) takes the values' hashes.
    const toHash = m.col >= 0 && lone.hashed[0] === 1 && g.hashed[m.col] === 0;
    for (const s of this.index.liveSlots()) lone.load(s, memberPart(g.save(s), g.stride, m.col, at, m.win === g.sw ? -1 : m.win, toHash));
    g.removeMember(at);
    if (g.members.length === 0) {
      for (const s of this.index.liveSlots()) g.clear(s);
      this.groups.splice(this.groups.indexOf(g), 1);
    }
    this.#bindColumns(lone);
    this.groups.push(lone);
    this.featGroup[i] = lone;
    this.featMember[i] = own;
    this.#layoutChanged();
  }

  /** A new entity from a save of layout `meta`, loaded through `map` (planLoad). */
  addMapped(key: string, lastT: number, lastLsn: number, saved: EntitySave, meta: LayoutMeta, map: SaveMap): number {
    const slot = this.index.add(key, lastT, lastLsn);
    for (let gi = 0; gi < this.groups.length; gi++) {
      const src = map.groupSrc[gi];
      if (src < 0) continue;
      const g = this.groups[gi];
      const from = saved[0][src];
      const [ring, buckets] = from;
      const sg = meta.groups[src];
      const sStride = 1 + sg.fields.length;
      const colSrc = map.colSrc[gi];
      // A field hashed here and not in the save: its saved values become hashes.
      const toHash = g.fields.map((f, c) => g.hashed[c] === 1 && !savedHashed(sg, f));
      const out: GroupSave = [[], map.memberSrc[gi].map((mi) => (mi < 0 ? null : buckets[mi]))];
      const skips = skipsOf(from);
      const win = map.winSrc[gi];
      // Same windows: the skip counts carry over. A ring of one member of the saved group: from its window's skip count on.
      if (win < 0 && skips !== undefined) out.push(skips);
      const first = win >= 0 && skips !== undefined && win < skips.length ? skips[win] * sStride : 0;
      for (let at = first; at < ring.length; at += sStride) {
        out[0].push(ring[at]);
        colSrc.forEach((c, k) => {
          const v = c < 0 ? undefined : ring[at + 1 + c];
          out[0].push(toHash[k] ? hashOrNull(v) : v);
        });
      }
      g.load(slot, out);
    }
    const feats = this.plan.features;
    for (let i = 0; i < feats.length; i++) {
      const col = this.objs[i];
      if (col === null) continue;
      const src = map.objSrc[i];
      if (src < 0) col.create(slot);
      else col.load(slot, saved[1][src]);
    }
    return slot;
  }

  /**
   * Groups the given features (all new: empty for every live entity) and gives
   * the others solo columns: those without `where` share groups of up to
   * RING_GROUP_WINDOWS_MAX consecutive windows, each with `where` has its own.
   */
  #assign(fresh: readonly number[]): void {
    const feats = this.plan.features;
    const byWindow = new Map<number, number[]>();
    for (const i of fresh) {
      const f = feats[i];
      const sh = f.factory.shared;
      if (sh === null || sh === undefined) {
        this.#soloColumn(i);
        continue;
      }
      if (f.where !== null) {
        this.#newGroup([i]);
        continue;
      }
      const windowMs = windowOf(sh);
      let list = byWindow.get(windowMs);
      if (list === undefined) byWindow.set(windowMs, (list = []));
      list.push(i);
    }
    const windows = [...byWindow.keys()].sort((a, b) => a - b);
    for (let w = 0; w < windows.length; w += RING_GROUP_WINDOWS_MAX) {
      const list: number[] = [];
      for (const ms of windows.slice(w, w + RING_GROUP_WINDOWS_MAX)) list.push(...(byWindow.get(ms) as number[]));
      this.#newGroup(list.sort((a, b) => a - b));
    }
  }

  /** The intern table of column `field` (shared by the table's rings and kept-value columns). */
  #internOf(field: string): InternTable {
    let t = this.interns.get(field);
    if (t === undefined) this.interns.set(field, (t = new InternTable()));
    return t;
  }

  #soloColumn(i: number): void {
    const col = soloColumn(this.plan.features[i].factory, this.index.capacity, (field) => this.#internOf(field));
    for (const s of this.index.liveSlots()) col.create(s);
    this.objs[i] = col;
    this.featGroup[i] = null;
    this.featMember[i] = null;
    this.#layoutChanged();
  }

  /** A group of the features in `list`; `hashed`: its hashed fields (a restored layout's), null for a new group's own (hashedFieldsOf). */
  #newGroup(list: number[], fixedFields: readonly string[] | null = null, fixedWindows: readonly number[] | null = null, hashed: readonly string[] | null = null): void {
    const feats = this.plan.features;
    const fields: string[] = fixedFields === null ? [] : fixedFields.slice();
    for (const i of list) {
      const field = feats[i].factory.field;
      if (field !== null && !fields.includes(field)) fields.push(field);
    }
    const interns = fields.map((name) => this.#internOf(name));
    const members = list.map((i) => memberOf(feats[i], i, fields));
    const windows = fixedWindows ?? [...new Set(list.map((i) => windowOf(feats[i].factory.shared!)))].sort((a, b) => a - b);
    const g = new RingGroup(windows, feats[list[0]].where, fields, interns, members, this.index.capacity, hashed ?? hashedFieldsOf(fields, members));
    this.#bindColumns(g);
    this.groups.push(g);
    for (const m of members) {
      this.featGroup[m.feature] = g;
      this.featMember[m.feature] = m;
      this.objs[m.feature] = null;
    }
    this.#layoutChanged();
  }

  #layoutChanged(): void {
    this.#rowReads = null;
    this.#colInterns = null;
  }

  /**
   * By position in `plan.columns` (the values of a PUSH record's feed): the
   * intern table the table's cells hold the column's values in (a ring group's
   * field, a kept-value column's input), or null when none does (push_apply.ts
   * then looks no value of it up: another table may intern the same column name).
   */
  get colInterns(): Array<InternTable | null> {
    return this.#colInterns ??= this.#deriveColInterns();
  }

  /**
   * By position in `plan.columns`: 1 when the table's cells hold the column only as
   * hashes (every group that has it as a field hashes it, no kept column reads it):
   * push_apply.ts hashes its value from the record's bytes instead of interning it.
   */
  get colHashed(): Uint8Array {
    if (this.#colInterns === null) this.#colInterns = this.#deriveColInterns();
    return this.#colHashed;
  }

  #colHashed = new Uint8Array(0);

  #deriveColInterns(): Array<InternTable | null> {
    const cols = this.plan.columns;
    const out: Array<InternTable | null> = new Array<InternTable | null>(cols.length).fill(null);
    const hashed = (this.#colHashed = new Uint8Array(cols.length));
    for (const g of this.groups) g.fields.forEach((f, c) => { const j = cols.indexOf(f); if (j >= 0 && g.hashed[c] === 1) hashed[j] = 1; });
    for (const g of this.groups) g.fields.forEach((f, c) => { const j = cols.indexOf(f); if (j >= 0 && g.hashed[c] === 0) { out[j] = g.interns[c]; hashed[j] = 0; } });
    this.objs.forEach((col, i) => {
      if (!(col instanceof KeptColumn || col instanceof ExactColumn)) return;
      const j = cols.indexOf(this.plan.features[i].factory.field as string);
      if (j >= 0) {
        out[j] = col.intern;
        hashed[j] = 0;
      }
    });
    return out;
  }

  /** Every cell of the table that holds an interned reference (it is dropped: released in slices, dropped_cells.ts). */
  dropAll(): DroppedCells {
    return new DroppedCells(this.groups, keptColumns(this.objs), this.index.high);
  }

  get size(): number {
    return this.index.size;
  }

  /** A new entity: a slot, fresh object states, empty rings. */
  add(key: string, lastT: number, lastLsn: number): number {
    return this.#created(this.index.add(key, lastT, lastLsn));
  }

  /** add() for a key given by its bytes (EntityIndex.findBytes): a replayed or live PUSH record's feed. */
  addBytes(b: Uint8Array, from: number, len: number, tag: number, h: number, lastT: number, lastLsn: number): number {
    return this.#created(this.index.addBytes(b, from, len, tag, h, lastT, lastLsn));
  }

  #created(slot: number): number {
    const objs = this.objs;
    for (let i = 0; i < objs.length; i++) {
      const col = objs[i];
      if (col !== null) col.create(slot);
    }
    return slot;
  }

  /**
   * A slot for `key` whose columns the caller fills (slab restore): one hash
   * insert; an older copy of the key (a fuzzy snapshot may capture an entity
   * twice, the later copy wins) is emptied and released.
   */
  addForLoad(key: string, lastT: number, lastLsn: number): number {
    const slot = this.index.addReplacing(key, lastT, lastLsn, REPLACED);
    const old = REPLACED[0];
    if (old >= 0) {
      this.#clearSlot(old);
      this.index.releaseSlot(old);
    }
    return slot;
  }

  /** Forgets `key` (its rings, buckets and states). Returns whether it was there. */
  remove(key: string): boolean {
    const slot = this.index.slotOf(key);
    if (slot < 0) return false;
    this.removeSlot(slot);
    return true;
  }

  /** Forgets the entity at the live `slot`. */
  removeSlot(slot: number): void {
    this.#clearSlot(slot);
    this.index.removeSlot(slot);
  }

  #clearSlot(slot: number): void {
    for (const g of this.groups) g.clear(slot);
    for (const col of this.objs) if (col !== null) col.clear(slot);
  }

  /** Where each of the group's fields is in `plan.columns` (its values' ids in colIds). */
  #bindColumns(g: RingGroup): void {
    g.colOf = Int32Array.from(g.fields, (f) => this.plan.columns.indexOf(f));
  }

  /**
   * By position in `plan.columns`: 1 when apply() reads the column's value from
   * the row (a `where` reads any column, an object column gets the whole row, a
   * fixed, kept or bloom column its input field), 0 when only ring cells take it,
   * and they take an interned value by its id (colIds; ring_group.ts reads the row
   * only for a field without one). push_apply.ts leaves the row's field undefined
   * for a 0 whose value it looked up by its bytes: loading the string was a cache
   * miss per value in tables of 10^5-10^6 values (bench/DECISIONS.md).
   */
  rowReads(): Uint8Array {
    return this.#rowReads ??= this.#deriveRowReads();
  }

  #deriveRowReads(): Uint8Array {
    const cols = this.plan.columns;
    const feats = this.plan.features;
    const out = new Uint8Array(cols.length);
    let all = false;
    for (let i = 0; i < feats.length; i++) {
      if (feats[i].where !== null) all = true;
      const col = this.objs[i];
      if (col === null) continue;
      if (col instanceof ObjectColumn) all = true;
      const field = feats[i].factory.field;
      const j = field === null ? -1 : cols.indexOf(field);
      if (j >= 0) out[j] = 1;
    }
    if (all) out.fill(1);
    return out;
  }

  /** One row that reached the table, for the entity at `slot`. */
  apply(slot: number, r: Row, t: number): void {
    const groups = this.groups;
    const ids = this.colIds;
    for (let g = 0; g < groups.length; g++) {
      const grp = groups[g];
      if (grp.where === null || grp.where(r)) grp.push(slot, r, t, ids, this.colHash);
    }
    const feats = this.plan.features;
    const objs = this.objs;
    for (let i = 0; i < feats.length; i++) {
      const col = objs[i];
      if (col === null) continue;
      const f = feats[i];
      const x = f.get === null ? undefined : f.get(r);
      if (f.where === null || f.where(r)) col.update(slot, x, t, r);
      else if (f.factory.wantsMiss) col.miss(slot, t);
    }
  }

  /** Every feature of the entity at `slot` is empty from `t` on: it can be dropped instead of frozen. */
  emptyAt(slot: number, t: number): boolean {
    for (const g of this.groups) if (!g.emptyAt(slot, t)) return false;
    for (const col of this.objs) if (col !== null && !col.emptyAt(slot, t)) return false;
    return true;
  }

  read(feature: number, slot: number, now: number): JsonValue {
    const g = this.featGroup[feature];
    if (g !== null) return g.read(this.featMember[feature] as RingMember, slot, now);
    return (this.objs[feature] as SoloColumn).read(slot, now);
  }

  /** The entity at `slot` as plain data (EntitySave). */
  save(slot: number): EntitySave {
    const groups = this.groups.map((g) => g.save(slot));
    const objs = this.objs.map((col) => (col === null ? null : col.save(slot)));
    return [groups, objs];
  }

  /** After `plan` was replaced by an identical layout (same signatures, same order): members use its configs. */
  rebind(): void {
    this.#layoutChanged();
    for (const g of this.groups) this.#bindColumns(g);
    for (const g of this.groups) {
      for (const m of g.members) {
        g.takeCfg(m, this.plan.features[m.feature].factory.shared!);
      }
    }
  }

  /**
   * The same entities under a new plan (registry install, same key signature).
   * `map[i]`: the old feature index whose state new feature i keeps, or -1 (starts
   * empty). Groups keep their rings with the members still mapped; groups left
   * without members are emptied; new windowed features get groups of their own.
   * Every entity must be hot (the caller thaws cold ones first).
   */
  carry(plan: TablePlan, map: readonly number[], dropped: (cells: DroppedCells) => void): TableColumns {
    const next = new TableColumns(plan, this);
    const gone: RingGroup[] = [];
    const n = plan.features.length;
    const newOf = new Map<number, number>();
    map.forEach((j, i) => { if (j >= 0) newOf.set(j, i); });
    for (const g of this.groups) {
      const kept = g.members.filter((m) => newOf.has(m.feature));
      if (kept.length === 0) {
        gone.push(g);
        continue;
      }
      g.keepMembers(kept);
      for (const m of kept) {
        m.feature = newOf.get(m.feature) as number;
        // Same signature: same parameters; the new plan's config objects from now on.
        g.takeCfg(m, plan.features[m.feature].factory.shared!);
        next.featGroup[m.feature] = g;
        next.featMember[m.feature] = m;
      }
      next.#bindColumns(g);
      next.groups.push(g);
    }
    const fresh: number[] = [];
    const reused = new Set<SoloColumn>();
    for (let i = 0; i < n; i++) {
      const j = map[i];
      if (next.featGroup[i] !== null) continue;
      const col = j >= 0 ? this.objs[j] : null;
      if (col !== null) {
        next.objs[i] = col;
        reused.add(col);
      } else fresh.push(i);
    }
    // Dropped groups and columns give their interned references back (in slices,
    // dropped_cells.ts): the intern tables outlive them.
    const cells = new DroppedCells(gone, keptColumns(this.objs.filter((col) => col !== null && !reused.has(col))), this.index.high);
    if (!cells.empty) dropped(cells);
    next.#assign(fresh);
    return next;
  }
}

/** The window of a feature that can share a ring. */
function windowOf(sh: NonNullable<FeaturePlan['factory']['shared']>): number {
  return sh.num !== null ? sh.num.windowMs : sh.val.windowMs;
}

/** The solo columns among `objs` whose cells hold interned ids (kept values, exact sketch values). */
function keptColumns(objs: ReadonlyArray<SoloColumn | null>): Array<KeptColumn | ExactColumn> {
  return objs.filter((col): col is KeptColumn | ExactColumn => col instanceof KeptColumn || col instanceof ExactColumn);
}

function memberOf(f: FeaturePlan, i: number, fields: readonly string[]): RingMember {
  const sh = f.factory.shared!;
  const col = f.factory.field === null ? -1 : fields.indexOf(f.factory.field);
  return new RingMember(i, col, sh.num, sh.val);
}
