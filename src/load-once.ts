/**
 * A loader that runs `load` on its first call and gives every call that promise: a library (or
 * what is made from it) brought in when first needed rather than at start, so that an instance
 * that never needs it does not hold its memory. A load that fails stays failed, as a failed
 * import at start would.
 */
export function loadOnce<T> (load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined
  return async () => await (loaded ??= load())
}
