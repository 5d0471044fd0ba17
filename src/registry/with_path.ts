import { SfError } from '../errors';

/** Runs `fn`; an SfError without a path gets `path`. Used around expression and op compilers, which do not know where they sit in the payload. */
export function withPath<T>(path: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof SfError && err.detail.path === undefined) {
      throw new SfError(err.code, err.message, { ...err.detail, path });
    }
    throw err;
  }
}
