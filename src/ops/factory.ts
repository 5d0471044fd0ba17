/**
 * The OpFactory every compiled feature hands to the shard: a canonical name, the
 * column read as x, whether `miss` matters, and how to make or reload a state.
 * `make` runs once per new entity (not per event), so a closure is fine here.
 */
import type { OpFactory, OpState } from './op';

/** A state that can be refilled from its own save(). */
export interface StoredState extends OpState {
  restore(saved: unknown): void;
}

export class Factory implements OpFactory {
  readonly op: string;
  readonly field: string | null;
  readonly wantsMiss: boolean;
  private readonly make: () => StoredState;

  constructor(op: string, field: string | null, wantsMiss: boolean, make: () => StoredState) {
    this.op = op;
    this.field = field;
    this.wantsMiss = wantsMiss;
    this.make = make;
  }

  create(): OpState {
    return this.make();
  }

  load(saved: unknown): OpState {
    const st = this.make();
    st.restore(saved);
    return st;
  }
}
