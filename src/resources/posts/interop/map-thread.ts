import { parentPort } from 'node:worker_threads'
import type { SourcePost } from './entries.ts'
import type { MappingContext } from '../../../http/contract/resources.ts'
import { mapPost } from './mapping.ts'

/** The import's mapping thread (post-mapper.ts): each post mapped in the order asked, answered by id. */
parentPort!.on('message', ({ id, post, ctx }: { id: number, post: SourcePost, ctx: MappingContext }) => {
  try {
    parentPort!.postMessage({ id, mapped: mapPost(post, ctx) })
  } catch (err) {
    parentPort!.postMessage({ id, error: String((err as Error).stack ?? err) })
  }
})
