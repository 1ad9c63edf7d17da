import type { MappedEntry } from '../../http/contract/resources.ts'

/**
 * The entries, each with its mapping asked for ahead (`mapOf`, called in order for every entry;
 * null: nothing to map), up to `depth` mappings ahead: the mapper works on the next posts while
 * the run writes a batch.
 */
export async function * mappedAhead<E> (
  entries: AsyncIterable<E>, depth: number, mapOf: (entry: E) => Promise<MappedEntry> | null
): AsyncGenerator<{ entry: E, mapped: Promise<MappedEntry> | null }> {
  const queue: { entry: E, mapped: Promise<MappedEntry> | null }[] = []
  const iterator = entries[Symbol.asyncIterator]()
  let ended = false
  let mapping = 0
  try {
    for (;;) {
      while (!ended && mapping < depth && queue.length < 4 * depth) {
        const r = await iterator.next()
        if (r.done === true) {
          ended = true
          break
        }
        const mapped = mapOf(r.value)
        // Its failure is the consumer's when it comes to it, not an unhandled rejection meanwhile.
        mapped?.catch(() => {})
        if (mapped !== null) mapping++
        queue.push({ entry: r.value, mapped })
      }
      const head = queue.shift()
      if (head === undefined) return
      if (head.mapped !== null) mapping--
      yield head
    }
  } finally {
    await iterator.return?.()
  }
}
