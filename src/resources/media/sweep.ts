import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config.ts'
import type { Job } from '../../jobs/job.ts'
import type { Store } from '../../store/store.ts'
import type { Library } from './library.ts'
import { uploadStore } from './uploads.ts'

/** How often each instance looks for stored bytes no media holds. */
export const SWEEP_INTERVAL_MS = 10 * 60_000
const BATCH = 500

/**
 * Removes the blobs that no media, no variant and no live claim (an upload still being written)
 * holds: those a deletion left, or an upload that died between writing its bytes and recording
 * its row. Each is checked again just before it goes; an upload that wrote the same bytes in that
 * instant writes them again once its row has committed (library.ensureBlob).
 */
export async function sweepOnce (store: Store, library: Library, signal?: AbortSignal): Promise<number> {
  const blobs = await library.blobs
  let removed = 0
  let batch: string[] = []
  const flush = async () => {
    const held = await store.media.heldKeys(batch, library.clock.now())
    for (const key of batch) {
      if (held.has(key)) continue
      if ((await store.media.heldKeys([key], library.clock.now())).size > 0) continue
      await blobs.delete(key)
      removed++
    }
    batch = []
  }
  for await (const key of blobs.keys()) {
    signal?.throwIfAborted()
    batch.push(key)
    if (batch.length >= BATCH) await flush()
  }
  await flush()
  await store.media.dropExpiredClaims(library.clock.now())
  return removed
}

export function mediaSweep (store: Store, library: Library, config: Config, log: FastifyBaseLogger): Job {
  const uploads = uploadStore(config).store
  return {
    name: 'media-sweep',
    pollMs: SWEEP_INTERVAL_MS,
    async tick (signal) {
      const removed = await sweepOnce(store, library, signal)
      if (removed > 0) log.info({ removed }, 'removed stored bytes no media holds')
      // Resumable uploads left unfinished past UPLOAD_EXPIRY_H.
      const expired = await uploads.deleteExpired()
      if (expired > 0) log.info({ expired }, 'removed expired unfinished uploads')
      return false
    },
  }
}
