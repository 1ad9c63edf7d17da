import type { Job } from '../../../jobs/job.ts'
import type { Store } from '../../../store/store.ts'

export const SEARCH_INDEX_JOB = 'search-index'

/** How often the indexer looks at the queue when it found it empty. */
export const SEARCH_INDEX_POLL_MS = 250

/**
 * Posts indexed per unit of work: enough that the index's per-commit work is shared, few enough
 * that one unit holds the writer (and the event loop) for a few milliseconds at most.
 */
export const SEARCH_INDEX_BATCH = 64

/**
 * One batch of the queue into the full-text index, in a unit of work of its own; true when more
 * may be waiting. The queue is looked at outside a transaction first: an empty one takes no write lock.
 */
async function indexBatch (store: Store): Promise<boolean> {
  if (await store.posts.searchBacklog() === 0) return false
  return await store.transaction(async uow => await uow.posts.indexSearch(SEARCH_INDEX_BATCH)) === SEARCH_INDEX_BATCH
}

/**
 * Makes search read-your-writes: indexes whatever the queue still holds, a batch at a time, so a
 * search that starts after a write was answered finds it. The queue is in the store, so this holds
 * on every instance sharing it. An empty queue costs one small read; on PostgreSQL (no queue) none.
 */
export function searchCatchUp (store: Store): () => Promise<void> {
  return async () => {
    while (await indexBatch(store));
  }
}

/**
 * Feeds SQLite's full-text index after the commit: a write queues its post's id with the write
 * (so a crash loses no queued post), and this job indexes the queued posts as they are by then.
 * Each batch is one unit of work (the index's entries and the queue's rows change together), so
 * instances sharing the file never index a post twice or lose one, and a batch cut short by a
 * crash is done again whole. A search does not wait for it: it first indexes what is still
 * queued (searchCatchUp), so this job only keeps the queue short while nobody searches.
 */
export function searchIndexer (store: Store): Job {
  return {
    name: SEARCH_INDEX_JOB,
    pollMs: SEARCH_INDEX_POLL_MS,
    async tick (signal) {
      if (signal.aborted) return false
      return await indexBatch(store)
    },
  }
}
