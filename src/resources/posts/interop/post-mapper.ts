import { Worker } from 'node:worker_threads'
import type { EntryMapper, MappingContext } from '../../../http/contract/resources.ts'
import type { SourcePost } from './entries.ts'
import { type Mapped, mapPost } from './mapping.ts'

/** Maps the posts of an import run on the event loop. */
export const inlineMapper: EntryMapper = {
  async map (post, ctx) { return mapPost(post as SourcePost, ctx) },
  async close () {},
}

/** The thread: its module beside this one, or, from the bundle (dist/blog.js), where tsc wrote it. */
function startThread (): Worker {
  const here = import.meta.url
  if (here.endsWith('.ts')) {
    // Run from the sources by tsx (tests, `npm run dev`): the thread registers tsx before it loads TypeScript.
    const file = new URL('./map-thread.ts', here).href
    return new Worker(`import('tsx/esm/api').then(api => { api.register(); return import(${JSON.stringify(file)}) })`, { eval: true })
  }
  return new Worker(new URL(here.endsWith('/post-mapper.js') ? './map-thread.js' : './resources/posts/interop/map-thread.js', here))
}

/**
 * Mapping on a thread of its own: converting a post's HTML to Markdown (parsing it into a DOM) is
 * most of an import's work on the event loop, and most of its garbage. Posts are answered in
 * the order they were sent.
 */
export function threadMapper (): EntryMapper {
  const worker = startThread()
  const waiting = new Map<number, { resolve: (m: Mapped) => void, reject: (err: Error) => void }>()
  let next = 0
  let failure: Error | null = null
  const failAll = (err: Error) => {
    failure ??= err
    for (const w of waiting.values()) w.reject(failure)
    waiting.clear()
  }
  worker.on('message', ({ id, mapped, error }: { id: number, mapped?: Mapped, error?: string }) => {
    const w = waiting.get(id)
    waiting.delete(id)
    if (error !== undefined) w?.reject(new Error(`mapping a post failed: ${error}`))
    else w?.resolve(mapped!)
  })
  worker.on('error', failAll)
  worker.on('exit', code => { failAll(new Error(`the import's mapping thread stopped (exit code ${code})`)) })
  return {
    async map (post: unknown, ctx: MappingContext) {
      if (failure !== null) throw failure
      const id = next++
      return await new Promise<Mapped>((resolve, reject) => {
        waiting.set(id, { resolve, reject })
        worker.postMessage({ id, post, ctx })
      })
    },
    async close () {
      failure ??= new Error('the mapping thread was closed')
      await worker.terminate()
    },
  }
}
