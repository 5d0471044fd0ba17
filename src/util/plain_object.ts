/** A parsed JSON object (not an array, not null): what request and register bodies are checked to be. */
export type Obj = Record<string, unknown>;

export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
